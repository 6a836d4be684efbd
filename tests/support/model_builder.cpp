#include "support/model_builder.h"

#include <utility>

#include "onnxzip/archive.h"
#include "onnxzip/internal/protobuf_wire.h"
#include "onnxzip/tensor.h"

namespace onnxzip::test_support {
namespace {

StringStringEntryProto entry(const std::string& key, const std::string& value) {
  StringStringEntryProto kv;
  kv.key = key;
  kv.value = value;
  return kv;
}

OperatorSetIdProto opset(const std::string& domain, std::int64_t version) {
  OperatorSetIdProto id;
  id.domain = domain;
  id.version = version;
  return id;
}

std::vector<float> float_values(std::size_t count, std::uint32_t seed) {
  std::vector<float> values(count);
  for (std::size_t i = 0; i < count; ++i) {
    values[i] = static_cast<float>(static_cast<int>((i * 37 + seed * 11) % 2001) - 1000) / 8.0f;
  }
  return values;
}

}  // namespace

std::vector<std::uint8_t> wire_field(std::uint32_t number,
                                     const std::vector<std::uint8_t>& payload) {
  std::vector<std::uint8_t> out(wire::kMaxFieldHeaderSize);
  std::uint8_t* p =
      wire::encode_varint(wire::make_tag(number, wire::WireType::kLengthDelimited), out.data());
  p = wire::encode_varint(payload.size(), p);
  out.resize(static_cast<std::size_t>(p - out.data()));
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

std::vector<std::uint8_t> pattern_bytes(std::size_t count, std::uint32_t seed) {
  std::vector<std::uint8_t> bytes(count);
  std::uint32_t state = 0x9E3779B9u * (seed + 1);
  for (auto& b : bytes) {
    state = state * 1664525u + 1013904223u;
    b = static_cast<std::uint8_t>(state >> 24);
  }
  return bytes;
}

ModelProto write_float_archive(const std::filesystem::path& path, std::size_t count,
                               std::int64_t floats) {
  ModelProto model;
  model.ir_version = 8;
  GraphProto& graph = model.graph.ensure();
  ArchiveWriter writer(path);
  for (std::size_t i = 0; i < count; ++i) {
    TensorProto& t = graph.initializer.emplace_back();
    t.name = "w" + std::to_string(i);
    t.data_type = TensorProto::kFloat;
    t.dims = {floats};
    const std::vector<std::uint8_t> payload =
        pattern_bytes(static_cast<std::size_t>(floats) * 4, static_cast<std::uint32_t>(i));
    writer.add_tensor(*t.name, TensorProto::kFloat, t.dims, payload).apply_to(t);
  }
  writer.finish(model);
  return model;
}

TensorProto raw_tensor(const std::string& name, std::int32_t data_type,
                       std::vector<std::int64_t> dims, std::uint32_t seed) {
  TensorProto tensor;
  tensor.name = name;
  tensor.data_type = data_type;
  const std::uint64_t count = element_count(dims);
  tensor.dims = std::move(dims);
  std::vector<std::uint8_t> bytes =
      pattern_bytes(static_cast<std::size_t>(tensor_byte_size(count, data_type)), seed);
  if (data_type == TensorProto::kBool) {
    for (auto& b : bytes) b &= 1;
  }
  // spec §7.3: the unused high bits of a sub-byte tensor's last byte are zero.
  const std::uint32_t bits = element_bits(data_type);
  if (bits < 8 && (count * bits) % 8 != 0) {
    bytes.back() &= static_cast<std::uint8_t>((1u << ((count * bits) % 8)) - 1);
  }
  tensor.raw_data = TensorBytes::copy_of(bytes);
  return tensor;
}

TensorProto float_data_tensor(const std::string& name, std::vector<std::int64_t> dims,
                              std::uint32_t seed) {
  TensorProto tensor;
  tensor.name = name;
  tensor.data_type = TensorProto::kFloat;
  tensor.float_data = float_values(static_cast<std::size_t>(element_count(dims)), seed);
  tensor.dims = std::move(dims);
  return tensor;
}

AttributeProto tensor_attribute(const std::string& name, TensorProto tensor) {
  AttributeProto attribute;
  attribute.name = name;
  attribute.type = AttributeProto::kTensor;
  attribute.t = std::move(tensor);
  return attribute;
}

AttributeProto graph_attribute(const std::string& name, GraphProto graph) {
  AttributeProto attribute;
  attribute.name = name;
  attribute.type = AttributeProto::kGraph;
  attribute.g = std::move(graph);
  return attribute;
}

NodeProto make_node(const std::string& op_type, std::vector<std::string> inputs,
                    std::vector<std::string> outputs, std::vector<AttributeProto> attributes) {
  NodeProto node;
  node.op_type = op_type;
  node.name = op_type + "_" + (outputs.empty() ? std::string("none") : outputs.front());
  node.input.assign(inputs.begin(), inputs.end());
  node.output.assign(outputs.begin(), outputs.end());
  node.attribute = std::move(attributes);
  return node;
}

ValueInfoProto tensor_value_info(const std::string& name, std::int32_t elem_type,
                                 std::vector<std::int64_t> shape) {
  ValueInfoProto info;
  info.name = name;
  TypeProto::Tensor& tensor_type = info.type.ensure().tensor_type.ensure();
  tensor_type.elem_type = elem_type;
  TensorShapeProto& tensor_shape = tensor_type.shape.ensure();
  for (const std::int64_t d : shape) tensor_shape.dim.emplace_back().dim_value = d;
  return info;
}

ModelProto model_with_tensors_everywhere() {
  ModelProto model;
  model.ir_version = 10;
  model.producer_name = "onnxzip tests";
  model.opset_import = {opset("", 21), opset("custom", 1)};
  GraphProto& graph = model.graph.ensure();
  graph.name = "everywhere";

  // Initializers: sizes around the default threshold, names that need sanitizing, metadata.
  TensorProto first =
      raw_tensor("/encoder/layer.0/attn/q.weight", TensorProto::kFloat, {16, 32}, 1);
  first.doc_string = "query projection";
  first.metadata_props = {entry("origin", "tests")};
  const std::uint8_t unknown_field[] = {0x98, 0x06, 0x01};  // Field 99, varint 1.
  first.unknown_fields.append(unknown_field);
  graph.initializer.push_back(std::move(first));
  graph.initializer.push_back(raw_tensor("onnx::Conv_123", TensorProto::kFloat16, {8}, 2));
  graph.initializer.push_back(raw_tensor("W", TensorProto::kInt8, {2000}, 3));
  graph.initializer.push_back(raw_tensor("w", TensorProto::kUint4, {3001}, 4));
  graph.initializer.push_back(float_data_tensor("typed", {300}, 5));
  graph.initializer.push_back(raw_tensor("empty", TensorProto::kFloat, {0}, 6));
  graph.initializer.push_back(raw_tensor("scalar", TensorProto::kDouble, {}, 7));
  graph.initializer.push_back(raw_tensor("exactly_1024", TensorProto::kUint8, {1024}, 17));
  graph.initializer.push_back(raw_tensor("just_below", TensorProto::kUint8, {1023}, 18));
  TensorProto strings;
  strings.name = "labels";
  strings.data_type = TensorProto::kString;
  strings.dims = {2};
  strings.string_data = {"alpha", "beta"};
  graph.initializer.push_back(std::move(strings));

  SparseTensorProto sparse;
  sparse.values = raw_tensor("sparse_values", TensorProto::kFloat, {400}, 19);
  sparse.indices = raw_tensor("sparse_indices", TensorProto::kInt64, {400}, 20);
  sparse.dims = {10000};
  graph.sparse_initializer.push_back(std::move(sparse));

  graph.node.push_back(make_node(
      "Constant", {}, {"c"},
      {tensor_attribute("value", raw_tensor("const_value", TensorProto::kFloat, {400}, 8))}));
  AttributeProto list;
  list.name = "tables";
  list.type = AttributeProto::kTensors;
  list.tensors = {raw_tensor("list0", TensorProto::kInt64, {200}, 9),
                  raw_tensor("list1", TensorProto::kUint8, {10}, 10)};
  AttributeProto sparse_attribute;
  sparse_attribute.name = "sparse";
  sparse_attribute.type = AttributeProto::kSparseTensor;
  SparseTensorProto& attribute_sparse = sparse_attribute.sparse_tensor.ensure();
  attribute_sparse.values = raw_tensor("sp_attr_values", TensorProto::kFloat, {300}, 21);
  attribute_sparse.indices = raw_tensor("sp_attr_indices", TensorProto::kInt64, {300}, 22);
  attribute_sparse.dims = {5000};
  NodeProto custom = make_node("Custom", {"c"}, {"d"}, {list, sparse_attribute});
  custom.domain = "custom";
  graph.node.push_back(std::move(custom));

  // If -> then_branch -> Loop -> body with an initializer: depth 2.
  GraphProto body;
  body.name = "loop_body";
  body.initializer.push_back(raw_tensor("deep", TensorProto::kFloat, {512}, 11));
  GraphProto then_branch;
  then_branch.name = "then";
  then_branch.node.push_back(
      make_node("Loop", {"", ""}, {"loop_out"}, {graph_attribute("body", std::move(body))}));
  GraphProto else_branch;
  else_branch.name = "else";
  else_branch.initializer.push_back(raw_tensor("else_init", TensorProto::kFloat, {4}, 12));
  graph.node.push_back(make_node("If", {"cond"}, {"e"},
                                 {graph_attribute("then_branch", std::move(then_branch)),
                                  graph_attribute("else_branch", std::move(else_branch))}));

  FunctionProto function;
  function.name = "F";
  function.domain = "custom";
  function.output = {"y"};
  function.attribute_proto.push_back(
      tensor_attribute("alpha", raw_tensor("fn_default", TensorProto::kInt32, {500}, 14)));
  function.node.push_back(make_node(
      "Constant", {}, {"y"},
      {tensor_attribute("value", raw_tensor("fn_const", TensorProto::kFloat, {300}, 13))}));
  function.opset_import = {opset("", 21)};
  model.functions.push_back(std::move(function));

  TrainingInfoProto training;
  training.initialization.ensure().name = "init";
  training.initialization->initializer.push_back(
      raw_tensor("train_init", TensorProto::kFloat, {300}, 15));
  training.algorithm.ensure().name = "algo";
  training.algorithm->initializer.push_back(
      raw_tensor("train_algo", TensorProto::kDouble, {200}, 16));
  model.training_info.push_back(std::move(training));
  return model;
}

ModelProto checker_model_mlp_with_if() {
  ModelProto model;
  model.ir_version = 8;
  model.producer_name = "onnxzip tests";
  model.opset_import = {opset("", 17)};
  GraphProto& graph = model.graph.ensure();
  graph.name = "mlp";
  graph.input = {tensor_value_info("X", TensorProto::kFloat, {1, 64}),
                 tensor_value_info("cond", TensorProto::kBool, {})};
  graph.output = {tensor_value_info("Out", TensorProto::kFloat, {16, 32})};
  // Finite values in raw_data (the MLP's weights as an exporter writes them).
  TensorProto weight = float_data_tensor("/encoder/layer.0/MatMul.weight", {64, 32}, 1);
  move_typed_data_to_raw(weight);
  graph.initializer.push_back(std::move(weight));
  graph.initializer.push_back(float_data_tensor("onnx::Add_bias", {32}, 2));

  GraphProto then_branch;
  then_branch.name = "then";
  TensorProto then_weight = float_data_tensor("then_weight", {16, 32}, 3);
  move_typed_data_to_raw(then_weight);
  then_branch.initializer.push_back(std::move(then_weight));
  then_branch.node.push_back(make_node("Identity", {"then_weight"}, {"then_out"}));
  then_branch.output = {tensor_value_info("then_out", TensorProto::kFloat, {16, 32})};
  GraphProto else_branch;
  else_branch.name = "else";
  TensorProto else_value = float_data_tensor("else_value", {16, 32}, 4);
  move_typed_data_to_raw(else_value);
  else_branch.node.push_back(
      make_node("Constant", {}, {"else_out"}, {tensor_attribute("value", std::move(else_value))}));
  else_branch.output = {tensor_value_info("else_out", TensorProto::kFloat, {16, 32})};

  TensorProto constant = float_data_tensor("C_value", {16, 32}, 5);
  move_typed_data_to_raw(constant);
  graph.node = {
      make_node("MatMul", {"X", "/encoder/layer.0/MatMul.weight"}, {"H"}),
      make_node("Add", {"H", "onnx::Add_bias"}, {"Y"}),
      make_node("Constant", {}, {"C"}, {tensor_attribute("value", std::move(constant))}),
      make_node("Add", {"Y", "C"}, {"Z"}),
      make_node("If", {"cond"}, {"R"},
                {graph_attribute("then_branch", std::move(then_branch)),
                 graph_attribute("else_branch", std::move(else_branch))}),
      make_node("Add", {"Z", "R"}, {"Out"}),
  };
  return model;
}

ModelProto checker_model_typed_fields() {
  ModelProto model;
  model.ir_version = 8;
  model.producer_name = "onnxzip tests";
  model.opset_import = {opset("", 17)};
  GraphProto& graph = model.graph.ensure();
  graph.name = "typed";
  graph.input = {tensor_value_info("X", TensorProto::kFloat, {4})};
  graph.output = {tensor_value_info("Y", TensorProto::kFloat, {4})};
  graph.node = {make_node("Identity", {"X"}, {"Y"})};

  graph.initializer.push_back(float_data_tensor("f_typed", {400}, 1));
  TensorProto i64;
  i64.name = "i64_typed";
  i64.data_type = TensorProto::kInt64;
  i64.dims = {300};
  for (std::int64_t i = 0; i < 300; ++i) i64.int64_data.push_back(i * i - 40000);
  graph.initializer.push_back(std::move(i64));
  TensorProto f16;
  f16.name = "f16_typed";
  f16.data_type = TensorProto::kFloat16;
  f16.dims = {32, 32};
  for (std::int32_t i = 0; i < 1024; ++i) f16.int32_data.push_back(0x3C00 + (i % 512));
  graph.initializer.push_back(std::move(f16));
  TensorProto i8;
  i8.name = "i8_typed";
  i8.data_type = TensorProto::kInt8;
  i8.dims = {1500};
  for (std::int32_t i = 0; i < 1500; ++i) i8.int32_data.push_back(i % 256 - 128);
  graph.initializer.push_back(std::move(i8));
  TensorProto flags;
  flags.name = "b_typed";
  flags.data_type = TensorProto::kBool;
  flags.dims = {1100};
  for (std::int32_t i = 0; i < 1100; ++i) flags.int32_data.push_back(i % 3 == 0 ? 1 : 0);
  graph.initializer.push_back(std::move(flags));
  TensorProto doubles;
  doubles.name = "d_typed";
  doubles.data_type = TensorProto::kDouble;
  doubles.dims = {200};
  for (int i = 0; i < 200; ++i) doubles.double_data.push_back(i / 3.0);
  graph.initializer.push_back(std::move(doubles));
  TensorProto u64;
  u64.name = "u64_typed";
  u64.data_type = TensorProto::kUint64;
  u64.dims = {200};
  for (std::uint64_t i = 0; i < 200; ++i) u64.uint64_data.push_back(i * 0x0101010101ull);
  graph.initializer.push_back(std::move(u64));
  TensorProto u32;
  u32.name = "u32_typed";
  u32.data_type = TensorProto::kUint32;
  u32.dims = {300};
  for (std::uint64_t i = 0; i < 300; ++i) u32.uint64_data.push_back(i * 0x01010101ull);
  graph.initializer.push_back(std::move(u32));
  TensorProto strings;
  strings.name = "names";
  strings.data_type = TensorProto::kString;
  strings.dims = {2};
  strings.string_data = {"alpha", "beta"};
  graph.initializer.push_back(std::move(strings));
  graph.initializer.push_back(raw_tensor("tied_a", TensorProto::kFloat, {512}, 7));
  TensorProto tied_b = graph.initializer.back();
  tied_b.name = "tied_b";
  graph.initializer.push_back(std::move(tied_b));
  TensorProto small;
  small.name = "small";
  small.data_type = TensorProto::kInt32;
  small.dims = {3};
  small.int32_data = {1, 2, 3};
  graph.initializer.push_back(std::move(small));
  return model;
}

}  // namespace onnxzip::test_support
