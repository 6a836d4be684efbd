// Fuzzes ZipReader::from_bytes and everything a caller can do with what it returns. Any
// onnxzip::Error is an acceptable answer to hostile bytes; anything else (a crash, a sanitizer
// report, another exception type escaping, an inconsistent index) is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "onnxzip/error.h"
#include "onnxzip/internal/zip_reader.h"

namespace {

void check(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  onnxzip::ZipReaderOptions options;
  // Keep single inputs cheap: a few MiB of inflation at most. Entries above 64 KiB take the
  // inflate-in-pieces paths (zlib, spill files); the input decides whether bombs are refused.
  options.max_inflated_size = std::uint64_t{4} << 20;
  options.spill_threshold = std::uint64_t{64} << 10;
  if (size % 2 == 1) options.max_compression_ratio = 0;
  try {
    const onnxzip::ZipReader reader =
        onnxzip::ZipReader::from_bytes({data, size}, onnxzip::kNoOwner, options);
    std::uint64_t previous_end = 0;
    for (const onnxzip::ZipEntry& entry : reader.entries()) {
      // The index promises entries in file order whose bytes lie inside the input and do not
      // overlap.
      check(entry.local_header_offset >= previous_end);
      check(entry.local.has_value());  // The checked reader locates every entry.
      check(entry.local->data_offset + entry.compressed_size <= entry.local->end_offset);
      check(entry.local->end_offset <= reader.central_directory_offset());
      previous_end = entry.local->end_offset;
      check(reader.find(entry.name) == &entry);
      try {
        const onnxzip::TensorBytes bytes = reader.data(entry);
        check(bytes.size() == entry.size);
        if (entry.is_stored())
          check(bytes.data() == reader.bytes().data() + entry.local->data_offset);
        reader.verify(entry);
      } catch (const onnxzip::Error&) {
      }
      try {
        std::uint64_t streamed = 0;
        reader.stream(entry, [&](onnxzip::ByteSpan piece) {
          check(!piece.empty() && piece.size() <= onnxzip::ZipReader::kStreamPieceBytes);
          streamed += piece.size();
          check(streamed <= entry.size);  // Never past the recorded size.
        });
        check(streamed == entry.size);
      } catch (const onnxzip::Error&) {
      }
    }
    check(reader.central_directory_offset() <= size);
  } catch (const onnxzip::Error&) {
  }
  return 0;
}
