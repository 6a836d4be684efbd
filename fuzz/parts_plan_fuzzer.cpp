// Fuzzes the byte strings of an archive written in parts (parts.h), which cross process
// boundaries: PartsPlan::from_bytes, and the token and receipt decoders. Any onnxzip::Error is an
// acceptable answer to hostile bytes; anything else (a crash, a sanitizer report, another
// exception type escaping, a plan whose bytes do not survive their own round trip) is a bug.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "onnxzip/error.h"
#include "onnxzip/parts.h"
#include "parts_codec.h"

namespace {

void check(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const onnxzip::ByteSpan input(data, size);
  try {
    const onnxzip::PartsPlan plan =
        onnxzip::PartsPlan::from_bytes(input, {.max_parts = 1024, .max_tensors = 4096});
    // The encoding is canonical: what decodes encodes to the same bytes.
    const std::vector<std::uint8_t> again = plan.to_bytes();
    check(again.size() == size && std::equal(again.begin(), again.end(), data));
    check(onnxzip::PartsPlan::from_bytes(again) == plan);
    for (std::size_t p = 0; p < plan.part_count(); ++p) {
      const auto [first, end] = plan.part_range(p);
      check(first <= end && end <= plan.payload_end());
    }
    for (const onnxzip::PlannedEntry& entry : plan.entries()) {
      check(entry.offset % plan.alignment() == 0 && entry.local_header_offset < entry.offset);
    }
  } catch (const onnxzip::Error&) {
  }
  try {
    const auto token = onnxzip::archive_detail::decode_token(input);
    check(onnxzip::archive_detail::encode_token(token).size() == size);
  } catch (const onnxzip::Error&) {
  }
  try {
    const auto receipt = onnxzip::archive_detail::decode_receipt(input);
    check(onnxzip::archive_detail::encode_receipt(receipt).size() == size);
  } catch (const onnxzip::Error&) {
  }
  return 0;
}
