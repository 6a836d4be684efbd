#include "support/onnx_samples.h"

#include <algorithm>
#include <cstdint>
#include <system_error>

namespace onnxzip::test_support {

std::vector<std::filesystem::path> onnx_testdata_models() {
  std::vector<std::filesystem::path> found;
  std::error_code error;
  if (!std::filesystem::is_directory(kOnnxTestdataRoot, error)) return found;
  for (const auto& entry :
       std::filesystem::recursive_directory_iterator(kOnnxTestdataRoot, error)) {
    if (entry.path().filename() == "model.onnx" && entry.is_regular_file()) {
      found.push_back(entry.path());
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}

ModelProto every_field_model() {
  StringStringEntryProto entry;
  entry.key = "k";
  entry.value = "v";

  TensorProto tensor;
  tensor.dims = {2, 3};
  tensor.data_type = TensorProto::kFloat;
  tensor.segment.emplace().begin = 0;
  tensor.segment->end = 6;
  tensor.float_data = {1.5f, -0.0f};
  tensor.int32_data = {-7, 1 << 20};
  tensor.string_data = {"a", ""};
  tensor.int64_data = {-1, std::int64_t{1} << 40};
  tensor.name = "t";
  tensor.raw_data = TensorBytes::copy_of(std::vector<std::uint8_t>{1, 2, 3});
  tensor.double_data = {3.25};
  tensor.uint64_data = {~std::uint64_t{0}};
  tensor.doc_string = "doc";
  tensor.external_data = {entry};
  tensor.data_location = TensorProto::kDefault;
  tensor.metadata_props = {entry};

  SparseTensorProto sparse;
  sparse.values = tensor;
  sparse.indices = tensor;
  sparse.dims = {4, 5};

  TensorShapeProto shape;
  shape.dim.emplace_back().dim_value = 4;
  shape.dim.emplace_back().dim_param = "batch";
  shape.dim.back().denotation = "DATA_BATCH";

  TypeProto tensor_type;
  tensor_type.tensor_type.emplace().elem_type = TensorProto::kFloat;
  tensor_type.tensor_type->shape = shape;
  tensor_type.denotation = "TENSOR";
  TypeProto sequence_type;
  sequence_type.sequence_type.emplace().elem_type = tensor_type;
  TypeProto map_type;
  map_type.map_type.emplace().key_type = TensorProto::kInt64;
  map_type.map_type->value_type = sequence_type;
  TypeProto optional_type;
  optional_type.optional_type.emplace().elem_type = map_type;
  TypeProto sparse_type;
  sparse_type.sparse_tensor_type.emplace().elem_type = TensorProto::kDouble;
  sparse_type.sparse_tensor_type->shape = shape;
  TypeProto opaque_type;
  opaque_type.opaque_type.emplace().domain = "ai.onnx.ml";
  opaque_type.opaque_type->name = "thing";

  ValueInfoProto value_info;
  value_info.name = "x";
  value_info.type = optional_type;
  value_info.doc_string = "input";
  value_info.metadata_props = {entry};

  GraphProto subgraph;
  subgraph.name = "body";
  subgraph.initializer = {tensor};

  AttributeProto attribute;
  attribute.name = "a";
  attribute.f = 0.5f;
  attribute.i = -3;
  attribute.s = "bytes";
  attribute.t = tensor;
  attribute.g = subgraph;
  attribute.floats = {1.0f, 2.0f};
  attribute.ints = {-1, 0, 1};
  attribute.strings = {"x", "y"};
  attribute.tensors = {tensor};
  attribute.graphs = {subgraph};
  attribute.doc_string = "attr";
  attribute.tp = opaque_type;
  attribute.type_protos = {sparse_type, tensor_type};
  attribute.type = AttributeProto::kGraphs;
  attribute.ref_attr_name = "ref";
  attribute.sparse_tensor = sparse;
  attribute.sparse_tensors = {sparse};

  SimpleShardedDimProto simple;
  simple.dim_param = "n";
  simple.num_shards = 2;
  ShardedDimProto sharded;
  sharded.axis = 0;
  sharded.simple_sharding = {simple};
  IntIntListEntryProto group;
  group.key = 1;
  group.value = {0, 1};
  ShardingSpecProto spec;
  spec.tensor_name = "x";
  spec.device = {0, 1};
  spec.index_to_device_group_map = {group};
  spec.sharded_dim = {sharded};
  NodeDeviceConfigurationProto node_config;
  node_config.configuration_id = "cfg";
  node_config.sharding_spec = {spec};
  node_config.pipeline_stage = 1;

  NodeProto node;
  node.input = {"x", ""};
  node.output = {"y"};
  node.name = "n0";
  node.op_type = "Op";
  node.attribute = {attribute};
  node.doc_string = "node";
  node.domain = "";
  node.overload = "o";
  node.metadata_props = {entry};
  node.device_configurations = {node_config};

  TensorAnnotation annotation;
  annotation.tensor_name = "t";
  annotation.quant_parameter_tensor_names = {entry};

  GraphProto graph;
  graph.node = {node};
  graph.name = "main";
  graph.initializer = {tensor};
  graph.doc_string = "graph";
  graph.input = {value_info};
  graph.output = {value_info};
  graph.value_info = {value_info};
  graph.quantization_annotation = {annotation};
  graph.sparse_initializer = {sparse};
  graph.metadata_props = {entry};

  TrainingInfoProto training;
  training.initialization = subgraph;
  training.algorithm = subgraph;
  training.initialization_binding = {entry};
  training.update_binding = {entry};

  OperatorSetIdProto opset;
  opset.domain = "";
  opset.version = 21;

  FunctionProto function;
  function.name = "f";
  function.input = {"a"};
  function.output = {"b"};
  function.attribute = {"alpha"};
  function.node = {node};
  function.doc_string = "fn";
  function.opset_import = {opset};
  function.domain = "custom";
  function.attribute_proto = {attribute};
  function.value_info = {value_info};
  function.overload = "v2";
  function.metadata_props = {entry};

  DeviceConfigurationProto device;
  device.name = "cfg";
  device.num_devices = 2;
  device.device = {"gpu0", "gpu1"};

  ModelProto model;
  model.ir_version = kIrVersion;
  model.producer_name = "onnxzip";
  model.producer_version = "0";
  model.domain = "test";
  model.model_version = 7;
  model.doc_string = "model";
  model.graph = graph;
  model.opset_import = {opset};
  model.metadata_props = {entry};
  model.training_info = {training};
  model.functions = {function};
  model.configuration = {device};
  return model;
}
}  // namespace onnxzip::test_support
