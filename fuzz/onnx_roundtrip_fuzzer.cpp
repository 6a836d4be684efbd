// Fuzzes the codec's fixed point: whatever parses, serializes to bytes that parse back to an equal
// model and serialize to the same bytes again, through every writer (single pass to memory, the
// streamed and sized writers with and without their one-pass snapshot). Input that does not parse
// is skipped (onnx_parse_fuzzer covers errors). Any mismatch traps.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "onnxzip/error.h"
#include "onnxzip/internal/protobuf_wire.h"
#include "onnxzip/onnx_codec.h"
#include "onnxzip/onnx_model.h"

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
  // Streamed: one pass into a snapshot (default budget), and sized then written front to back
  // (no budget).
  for (const std::uint64_t budget : {std::uint64_t{256} << 20, std::uint64_t{0}}) {
    onnxzip::SerializeOptions serialize_options;
    serialize_options.max_buffered_structure_bytes = budget;
    std::vector<std::uint8_t> streamed;
    onnxzip::wire::VectorSink sink(streamed);
    onnxzip::serialize_model(first, sink, serialize_options);
    check(streamed == bytes);
    const onnxzip::MessageSerializer<onnxzip::ModelProto> serializer(first, serialize_options);
    check(serializer.size() == bytes.size());
    std::vector<std::uint8_t> exact(bytes.size());
    serializer.write(onnxzip::MutableByteSpan(exact));
    check(exact == bytes);
  }

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
