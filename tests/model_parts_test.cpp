// split_model, join_model and walk_kept_tensors (src/onnx/model_parts.cpp): a model taken apart
// at its top level and put back gives the same bytes, and the walk finds exactly the tensors the
// model's visitor finds -- or says it cannot.
#include "model_parts.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "onnxzip/error.h"
#include "onnxzip/onnx_codec.h"
#include "onnxzip/tensor.h"
#include "support/model_builder.h"

namespace onnxzip::detail {
namespace {

using Bytes = std::vector<std::uint8_t>;
using test_support::raw_tensor;

Bytes bytes_of(ByteSpan span) { return Bytes(span.begin(), span.end()); }

Bytes field(std::uint32_t number, const Bytes& payload) {
  return test_support::wire_field(number, payload);
}

Bytes concat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const Bytes& part : parts) out.insert(out.end(), part.begin(), part.end());
  return out;
}

// Every tensor the model's visitor finds, serialized, in its order (depth first in field order:
// the order of the bytes our serializer writes).
std::vector<Bytes> visited_tensors(const ModelProto& model) {
  std::vector<Bytes> out;
  for_each_tensor(model, [&](const TensorProto& tensor, const TensorSite&) {
    out.push_back(serialize_message(tensor));
  });
  return out;
}

std::vector<Bytes> walked_tensors(const std::vector<KeptField>& kept, bool* complete) {
  std::vector<Bytes> out;
  *complete =
      walk_kept_tensors(kept, 100, [&](ByteSpan tensor) { out.push_back(bytes_of(tensor)); });
  return out;
}

TEST(ModelParts, SplitAndJoinGiveBackTheBytes) {
  const ModelProto model = test_support::model_with_tensors_everywhere();
  const Bytes bytes = serialize_model(model);
  const SplitModel split = split_model(bytes, ParseOptions{}, "m.onnx");

  EXPECT_FALSE(split.properties.graph.has_value());
  EXPECT_TRUE(split.properties.training_info.empty());
  EXPECT_TRUE(split.properties.functions.empty());
  EXPECT_EQ(split.properties.producer_name, model.producer_name);
  EXPECT_EQ(split.properties.opset_import, model.opset_import);
  ASSERT_GE(split.kept.size(), 3u);
  EXPECT_EQ(split.kept.front().number, 7u);
  EXPECT_EQ(bytes_of(split.kept.front().payload), serialize_message(*model.graph));
  EXPECT_EQ(split.kept.size(), 1 + model.training_info.size() + model.functions.size());
  EXPECT_EQ(bytes_of(join_model(split.properties, split.kept).span()), bytes);

  // Changed properties come out where a whole serialization puts them.
  SplitModel changed = split_model(bytes, ParseOptions{}, "m.onnx");
  changed.properties.doc_string = std::string(300, 'd');
  changed.properties.metadata_props.emplace_back().key = "license";
  ModelProto whole = model;
  whole.doc_string = changed.properties.doc_string;
  whole.metadata_props.emplace_back().key = "license";
  EXPECT_EQ(bytes_of(join_model(changed.properties, changed.kept).span()), serialize_model(whole));
}

TEST(ModelParts, KeptFieldsStayAsAnotherWriterEncodedThem) {
  // The graph's name after its initializer, and the graph after the opset imports: protobuf
  // takes fields in any order, our serializer writes them in field-number order.
  GraphProto graph;
  graph.initializer.push_back(raw_tensor("w", TensorProto::kFloat, {4}, 1));
  GraphProto name_only;
  name_only.name = "late";
  const Bytes graph_bytes = concat({serialize_message(graph), serialize_message(name_only)});
  ModelProto properties;
  properties.ir_version = 9;
  properties.opset_import.emplace_back().version = 17;
  const Bytes bytes = concat({serialize_model(properties), field(7, graph_bytes)});

  SplitModel split = split_model(bytes, ParseOptions{}, "m.onnx");
  ASSERT_EQ(split.kept.size(), 1u);
  EXPECT_EQ(bytes_of(split.kept[0].payload), graph_bytes);
  split.properties.producer_name = "edited";
  const OwnedBytes joined = join_model(split.properties, split.kept);
  // The graph's bytes as they were, now before the opset imports (field 8).
  const ModelProto parsed = parse_model(joined.span());
  EXPECT_EQ(*parsed.graph->name, "late");
  EXPECT_EQ(parsed.producer_name, "edited");
  const Bytes out = bytes_of(joined.span());
  const Bytes kept_field = field(7, graph_bytes);
  EXPECT_NE(std::search(out.begin(), out.end(), kept_field.begin(), kept_field.end()), out.end());
  EXPECT_NE(serialize_model(parsed), out);  // A whole serialization would reorder the graph.
}

TEST(ModelParts, JoinRefusesPropertiesWithAGraph) {
  const Bytes bytes = serialize_model(test_support::model_with_tensors_everywhere());
  SplitModel split = split_model(bytes, ParseOptions{}, "m.onnx");
  split.properties.graph.ensure().name = "second";
  EXPECT_THROW(join_model(split.properties, split.kept), Error);
  split.properties.graph.reset();
  split.properties.functions.emplace_back();
  EXPECT_THROW(join_model(split.properties, split.kept), Error);
}

TEST(ModelParts, SplitReportsMalformedBytes) {
  const Bytes bytes = serialize_model(test_support::model_with_tensors_everywhere());
  // Cut inside the graph field: its length runs past the end.
  const Bytes cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(bytes.size() / 2));
  EXPECT_THROW(split_model(cut, ParseOptions{}, "m.onnx"), Error);
  // A graph field of the wrong wire type stays with the properties, whose parse refuses it.
  const Bytes varint_graph = {0x38, 0x01};  // Field 7, varint 1.
  EXPECT_THROW(split_model(varint_graph, ParseOptions{}, "m.onnx"), Error);
  EXPECT_THROW(parse_model(varint_graph), Error);
}

TEST(ModelParts, TheWalkFindsTheTensorsTheVisitorFinds) {
  const ModelProto model = test_support::model_with_tensors_everywhere();
  const Bytes bytes = serialize_model(model);
  const SplitModel split = split_model(bytes, ParseOptions{}, "m.onnx");
  bool complete = false;
  const std::vector<Bytes> walked = walked_tensors(split.kept, &complete);
  EXPECT_TRUE(complete);
  const std::vector<Bytes> visited = visited_tensors(model);
  EXPECT_GE(visited.size(), 15u);
  EXPECT_EQ(walked, visited);
}

// The walk's result for the model `bytes` (kept alive here: the split borrows from them).
struct Walk {
  std::size_t tensors = 0;
  bool complete = false;
};
Walk walk(const Bytes& bytes, std::uint32_t max_depth = 100) {
  const SplitModel split = split_model(bytes, ParseOptions{}, "m.onnx");
  Walk result;
  result.complete = walk_kept_tensors(split.kept, max_depth, [&](ByteSpan) { ++result.tensors; });
  return result;
}

TEST(ModelParts, TheWalkDeclinesWhatOnlyAWholeParseSettles) {
  GraphProto graph;
  graph.initializer.push_back(raw_tensor("w", TensorProto::kFloat, {4}, 1));
  const Bytes graph_bytes = serialize_message(graph);
  const Bytes tensor = serialize_message(raw_tensor("t", TensorProto::kFloat, {2}, 2));

  // Two graph fields: protobuf merges them into one graph.
  const Bytes twice = concat({field(7, graph_bytes), field(7, graph_bytes)});
  EXPECT_FALSE(walk(twice).complete);
  EXPECT_EQ(parse_model(twice).graph->initializer.size(), 2u);
  EXPECT_EQ(walk(field(7, graph_bytes)).tensors, 1u);
  EXPECT_TRUE(walk(field(7, graph_bytes)).complete);

  // An attribute's `t` given twice merges into one tensor; once is plain.
  const Bytes merged = field(7, field(1, field(5, concat({field(5, tensor), field(5, tensor)}))));
  EXPECT_FALSE(walk(merged).complete);
  const Bytes once = field(7, field(1, field(5, field(5, tensor))));
  EXPECT_EQ(walk(once).tensors, 1u);
  EXPECT_TRUE(walk(once).complete);

  // An initializer field that is not length-delimited.
  const Bytes varint_initializer = {0x28, 0x01};  // Field 5, varint 1.
  EXPECT_FALSE(walk(field(7, varint_initializer)).complete);

  // A node whose length runs past its graph.
  Bytes broken_node = field(1, Bytes(10, 0));
  broken_node.resize(5);
  EXPECT_FALSE(walk(field(7, broken_node)).complete);

  // Deeper than the limit: graph (2) -> node (3) -> attribute (4) -> tensor (5).
  EXPECT_FALSE(walk(once, 4).complete);
  EXPECT_TRUE(walk(once, 5).complete);
}

}  // namespace
}  // namespace onnxzip::detail
