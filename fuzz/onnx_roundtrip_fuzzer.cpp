// Fuzzes the codec's fixed point: whatever parses, serializes to bytes that parse back to an equal
// model and serialize to the same bytes again, through both writers (single-pass in memory, and
// sized then streamed). Input that does not parse is skipped (onnx_parse_fuzzer covers errors).
// Any mismatch traps.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "onnxzip/error.h"
#include "onnxzip/onnx_codec.h"
#include "onnxzip/onnx_model.h"
#include "onnxzip/protobuf_wire.h"

namespace {

void check(bool condition) {
  if (!condition) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  onnxzip::ParseOptions options;
  options.max_depth = 100;
  options.max_elements = std::uint64_t{1} << 20;
  options.max_tensor_bytes = std::uint64_t{1} << 20;
  onnxzip::ModelProto first;
  try {
    first = onnxzip::parse_model(onnxzip::ByteSpan(data, size), options);
  } catch (const onnxzip::Error&) {
    return 0;
  }
  const std::vector<std::uint8_t> bytes = onnxzip::serialize_model(first);
  std::vector<std::uint8_t> streamed;
  onnxzip::wire::VectorSink sink(streamed);
  onnxzip::serialize_model(first, sink);
  check(streamed == bytes);

  // Serialized output must parse under the same limits: an Error here is a bug too.
  onnxzip::ModelProto second;
  try {
    options.no_copy = true;
    options.raw_data_threshold = 0;
    second = onnxzip::parse_model(bytes, options);
  } catch (const onnxzip::Error&) {
    check(false);
  }
  check(second == first);
  check(onnxzip::serialize_model(second) == bytes);
  check(onnxzip::serialized_size(second) == bytes.size());
  return 0;
}
