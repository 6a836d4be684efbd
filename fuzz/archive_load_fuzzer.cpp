// Fuzzes the archive layer's two entry points for untrusted bytes: load_bytes and
// verify_bytes. Any onnxzip::Error from load is an acceptable answer to hostile bytes;
// verify must never throw for the archive's content. Anything else (a crash, a sanitizer report,
// another exception type escaping, a verdict that contradicts load) is a bug.
//
// Seeds: fuzz/corpus/archive_load/, small archives written by save() (tests/archive_seeds_test.cpp
// rebuilds them and checks that they are current).
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "onnxzip/archive.h"
#include "onnxzip/error.h"
#include "onnxzip/tensor.h"

namespace {

void check(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const onnxzip::ByteSpan bytes(data, size);
  onnxzip::LoadOptions load_options;
  // Keep single inputs cheap: a few MiB of inflation at most. Entries above 64 KiB take the
  // inflate-in-pieces paths (zlib, spill files); the input decides whether bombs are refused.
  load_options.limits.max_inflated_size = std::uint64_t{4} << 20;
  load_options.limits.spill_threshold = std::uint64_t{64} << 10;
  if (size % 3 == 0) load_options.limits.max_compression_ratio = 0;
  load_options.verify_crc = (size % 2) == 0;  // Both paths, decided by the input.
  bool loaded = false;
  try {
    const onnxzip::ModelProto model = onnxzip::load_bytes(bytes, onnxzip::kNoOwner, load_options);
    loaded = true;
    // The promise of load: an ordinary inline model, no external reference left. (external_data
    // on a tensor whose data_location is not EXTERNAL means nothing, as in the reference onnx
    // package: load leaves it there and verify reports it.)
    onnxzip::for_each_tensor(model, [](const onnxzip::TensorProto& t, const onnxzip::TensorSite&) {
      check(t.data_location != onnxzip::TensorProto::kExternal);
    });
  } catch (const onnxzip::Error&) {
  }
  if (loaded) {
    // The view validates exactly as load does, so it must accept the archive too. Every payload
    // is dims x element size, and a zero-copy one lies inside the input at its recorded offset.
    try {
      const onnxzip::Archive archive =
          onnxzip::Archive::from_bytes(bytes, onnxzip::kNoOwner, load_options);
      for (const onnxzip::Archive::TensorInfo& info : archive.tensors()) {
        if (info.is_inline) {
          // Listed with no place in the file; its bytes come from the model.
          check(info.entry.empty() && !info.offset && info.data.empty() && !info.zero_copy);
          check(archive.payload(info).size() == info.size);
          continue;
        }
        check(info.data.size() == onnxzip::tensor_byte_size(info.dims, info.data_type));
        if (info.zero_copy) {
          check(info.offset.has_value());
          const std::uint64_t offset = info.offset.value_or(0);
          check(offset <= size && info.data.size() <= size - offset);
          check(info.data.empty() || info.data.data() == data + offset);
        }
        check(archive.find_entry(info.entry) != nullptr);
      }
    } catch (const onnxzip::Error&) {
      std::abort();
    }
  }

  onnxzip::VerifyOptions verify_options;
  verify_options.limits = load_options.limits;
  try {
    const onnxzip::VerifyReport report = onnxzip::verify_bytes(bytes, verify_options);
    // verify reports as an error everything that makes load refuse an archive, so an archive
    // it calls loadable (let alone conforming) must have loaded.
    if (report.ok() || report.loadable()) check(loaded);
  } catch (const onnxzip::Error&) {
    std::abort();  // verify_bytes reports findings; it never throws for content.
  }
  return 0;
}
