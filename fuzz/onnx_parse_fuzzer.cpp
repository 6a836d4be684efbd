// Fuzzes parse_model on untrusted bytes, then what a caller does with the result: visiting every
// tensor (with its size helpers and the payload rule), the IR rules verify checks, and sizing the
// model for serialization. Any onnxzip::Error is an acceptable answer to hostile bytes; anything
// else (a crash, a sanitizer report, another exception type escaping, copying and borrowing
// parses that disagree, a size that is not the size written) is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "onnxzip/error.h"
#include "onnxzip/ir_check.h"
#include "onnxzip/onnx_codec.h"
#include "onnxzip/onnx_model.h"
#include "onnxzip/tensor.h"

namespace {

void check(bool condition) {
  if (!condition) __builtin_trap();
}

onnxzip::ParseOptions fuzz_options(bool no_copy) {
  onnxzip::ParseOptions options;
  // Small limits keep single inputs cheap and reach the limit checks.
  options.max_depth = 100;
  options.max_elements = std::uint64_t{1} << 20;
  options.max_tensor_bytes = std::uint64_t{1} << 20;
  options.no_copy = no_copy;
  options.raw_data_threshold = 16;
  return options;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const onnxzip::ByteSpan input(data, size);
  onnxzip::ModelProto model;
  try {
    model = onnxzip::parse_model(input, fuzz_options(false), "fuzz.onnx");
  } catch (const onnxzip::Error&) {
    // The borrowing parse must reject the same inputs.
    try {
      onnxzip::parse_model(input, fuzz_options(true));
    } catch (const onnxzip::Error&) {
      return 0;
    }
    check(false);
  }
  check(onnxzip::parse_model(input, fuzz_options(true)) == model);

  std::uint64_t payload_bytes = 0;
  onnxzip::for_each_tensor(
      model, [&](const onnxzip::TensorProto& tensor, const onnxzip::TensorSite& site) {
        check(!site.path.empty());
        if (tensor.raw_data) payload_bytes += tensor.raw_data->size();
        try {
          onnxzip::tensor_byte_size(tensor);
        } catch (const onnxzip::Error&) {
        }
        // Never throws: a payload that agrees is "" and one that does not is a sentence.
        const std::string problem = onnxzip::payload_problem(tensor);
        check(problem.size() < 1024);
        try {
          const onnxzip::OwnedBytes raw = onnxzip::typed_data_to_raw(tensor);
          check(raw.size() <= size * 8 + 64);  // Typed elements are at most 8 bytes wide.
        } catch (const onnxzip::Error&) {
        }
      });
  check(payload_bytes <= size);
  for (const onnxzip::IrProblem& problem : onnxzip::check_ir(model)) check(!problem.where.empty());

  const std::uint64_t expected = onnxzip::serialized_size(model);
  const std::vector<std::uint8_t> written = onnxzip::serialize_model(model);
  check(written.size() == expected);
  return 0;
}
