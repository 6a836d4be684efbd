// Test support: ONNX models built with the object model, for the archive tests. Payloads are
// deterministic patterns, so a test can rebuild what it expects.
#ifndef ONNXZIP_TESTS_SUPPORT_MODEL_BUILDER_H_
#define ONNXZIP_TESTS_SUPPORT_MODEL_BUILDER_H_

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "onnxzip/onnx_model.h"

namespace onnxzip::test_support {

// `count` pseudo-random bytes from `seed`.
std::vector<std::uint8_t> pattern_bytes(std::size_t count, std::uint32_t seed);

// Writes to `path`, with ArchiveWriter, a model of `count` FLOAT initializers "w0", "w1"... of
// `floats` pattern values each (seed: the index); returns the model, whose tensors refer to the
// entries. For the tests that read such archives over HTTP or from a store.
ModelProto write_float_archive(const std::filesystem::path& path, std::size_t count,
                               std::int64_t floats);

// A tensor with raw_data: dims x element size pattern bytes (`seed`).
TensorProto raw_tensor(const std::string& name, std::int32_t data_type,
                       std::vector<std::int64_t> dims, std::uint32_t seed);
// FLOAT tensor whose values are given in float_data.
TensorProto float_data_tensor(const std::string& name, std::vector<std::int64_t> dims,
                              std::uint32_t seed);

AttributeProto tensor_attribute(const std::string& name, TensorProto tensor);
AttributeProto graph_attribute(const std::string& name, GraphProto graph);
NodeProto make_node(const std::string& op_type, std::vector<std::string> inputs,
                    std::vector<std::string> outputs, std::vector<AttributeProto> attributes = {});

// A length-delimited protobuf field of `number` holding `payload`, as the wire writes it: for
// messages laid out as another writer may lay them out (fields out of order, given twice).
std::vector<std::uint8_t> wire_field(std::uint32_t number,
                                     const std::vector<std::uint8_t>& payload);
ValueInfoProto tensor_value_info(const std::string& name, std::int32_t elem_type,
                                 std::vector<std::int64_t> shape);

// A model with tensors in every place the tensor visitor knows, at several sizes, of several
// types (raw and typed fields): initializers, a Constant's value, an attribute's tensors list,
// sparse initializer and sparse attribute, an If subgraph holding a Loop whose body has an
// initializer (depth 2), a function with a Constant and an attribute default, training-info
// graphs, a STRING tensor, an empty tensor. Not meant to pass the onnx checker.
ModelProto model_with_tensors_everywhere();

// Models the onnx checker accepts (opset 17, IR 8), with tensors large enough for the default
// threshold:
//   * a MatMul + Add MLP with a Constant node, and an If whose branches hold an initializer and
//     a Constant;
//   * a model whose initializers use typed fields (float_data, int64_data, int32_data for
//     FLOAT16 and INT8...), plus a STRING initializer and tied (identical) weights.
ModelProto checker_model_mlp_with_if();
ModelProto checker_model_typed_fields();

}  // namespace onnxzip::test_support

#endif  // ONNXZIP_TESTS_SUPPORT_MODEL_BUILDER_H_
