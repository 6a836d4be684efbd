// split_model, join_model and walk_kept_tensors (src/onnx/model_parts.cpp): a model taken apart
// at its top level and put back gives the same bytes, and the walk finds exactly the tensors the
// model's visitor finds -- or says it cannot.
#include "model_parts.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "onnxzip/error.h"
#include "onnxzip/onnx_codec.h"
#include "onnxzip/tensor.h"
#include "support/model_builder.h"
#include "support/onnx_samples.h"

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

// splits_whole says, without throwing, which bytes split_model takes apart: the edit of a
// model's properties decides its path on it before any change.
TEST(ModelParts, SplitsWholeSaysWhatTheSplitTakes) {
  const Bytes bytes = serialize_model(test_support::model_with_tensors_everywhere());
  EXPECT_TRUE(splits_whole(bytes));
  EXPECT_TRUE(splits_whole(Bytes{}));
  const Bytes cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(bytes.size() / 2));
  EXPECT_FALSE(splits_whole(cut));
  EXPECT_THROW(split_model(cut, ParseOptions{}, "m.onnx"), Error);
  // A group (field 30, start 0xF3 0x01, end 0xF4 0x01): the split leaves it to parse_model.
  const Bytes group = concat({bytes, Bytes{0xF3, 0x01, 0xF4, 0x01}});
  EXPECT_FALSE(splits_whole(group));
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

// One tensor as a walker reports it: where it sits and its serialized bytes.
struct SiteAndTensor {
  TensorPlace place;
  std::string path;
  Bytes tensor;
  friend bool operator==(const SiteAndTensor&, const SiteAndTensor&) = default;
};

std::vector<SiteAndTensor> visited_sites(const ModelProto& model) {
  std::vector<SiteAndTensor> out;
  for_each_tensor(model, [&](const TensorProto& tensor, const TensorSite& site) {
    out.push_back({site.place, std::string(site.path), serialize_message(tensor)});
  });
  return out;
}

// The walk over `bytes`, a serialized model, or nothing when it declines them.
std::optional<std::vector<SiteAndTensor>> walked_sites(ByteSpan bytes) {
  const SplitModel split = split_model(bytes, ParseOptions{}, "m.onnx");
  std::vector<SiteAndTensor> out;
  const bool complete = walk_kept_tensors(
      split.kept, ParseOptions{}.max_depth, [&](ByteSpan tensor, const TensorSite& site) {
        out.push_back({site.place, std::string(site.path), bytes_of(tensor)});
      });
  if (!complete) return std::nullopt;
  return out;
}

// for_each_tensor and walk_kept_tensors both follow the table of tensor sites: on the same
// model they report the same tensors at the same sites, in the same order.
TEST(ModelParts, TheWalkAndTheVisitorAgreeOnEveryTestdataModel) {
  const std::vector<std::filesystem::path> models = test_support::onnx_testdata_models();
  ASSERT_GT(models.size(), test_support::kMinTestdataModels)
      << "libonnx-testdata missing or incomplete";
  std::size_t with_tensors = 0;
  std::size_t sites = 0;
  for (const std::filesystem::path& path : models) {
    SCOPED_TRACE(path.string());
    std::ifstream in(path, std::ios::binary);
    const Bytes bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    // The visitor's tensors are serialized anew: the testdata round-trips byte for byte
    // (OnnxConformance), so they are the bytes the walk finds.
    const ModelProto model = parse_model(bytes);
    const std::optional<std::vector<SiteAndTensor>> walked = walked_sites(bytes);
    ASSERT_TRUE(walked.has_value());
    const std::vector<SiteAndTensor> visited = visited_sites(model);
    EXPECT_EQ(*walked, visited);
    with_tensors += !visited.empty();
    sites += visited.size();
  }
  // Some 170 models hold initializers or Constant nodes (381 tensors in all).
  EXPECT_GT(with_tensors, 100u);
  EXPECT_GT(sites, with_tensors);
}

TEST(ModelParts, TheWalkAndTheVisitorAgreeOnTensorsEverywhere) {
  const ModelProto model = test_support::model_with_tensors_everywhere();
  const std::optional<std::vector<SiteAndTensor>> walked = walked_sites(serialize_model(model));
  ASSERT_TRUE(walked.has_value());
  const std::vector<SiteAndTensor> visited = visited_sites(model);
  EXPECT_EQ(*walked, visited);
  // Sparse parts and attribute lists too, in functions and training graphs as well.
  std::set<TensorPlace> places;
  std::set<std::string> roots;
  for (const SiteAndTensor& site : visited) {
    places.insert(site.place);
    roots.insert(site.path.substr(0, site.path.find_first_of("/[")));
  }
  for (const TensorPlace place :
       {TensorPlace::kInitializer, TensorPlace::kSparseInitializerIndices,
        TensorPlace::kAttributeTensor, TensorPlace::kAttributeTensors,
        TensorPlace::kAttributeSparseTensorValues, TensorPlace::kAttributeSparseTensorIndices}) {
    EXPECT_EQ(places.count(place), 1u) << static_cast<int>(place);
  }
  EXPECT_EQ(roots, (std::set<std::string>{"graph", "training_info", "functions"}));
}

// Where the bytes give fields in an order of their own, the walk follows the bytes and still
// names each tensor by its index among its field's occurrences, as a parse would.
TEST(ModelParts, TheWalkNamesInterleavedFieldsByTheirIndex) {
  const Bytes first = serialize_message(raw_tensor("a", TensorProto::kFloat, {2}, 1));
  const Bytes second = serialize_message(raw_tensor("b", TensorProto::kFloat, {2}, 2));
  NodeProto node;
  node.attribute.push_back(
      test_support::tensor_attribute("value", raw_tensor("c", TensorProto::kFloat, {2}, 3)));
  const Bytes graph =
      concat({field(5, first), field(1, serialize_message(node)), field(5, second)});
  const Bytes bytes = field(7, graph);
  const std::optional<std::vector<SiteAndTensor>> walked = walked_sites(bytes);
  ASSERT_TRUE(walked.has_value());
  std::vector<std::string> paths;
  for (const SiteAndTensor& site : *walked) paths.push_back(site.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"graph/initializer[0]", "graph/node[0]/value",
                                             "graph/initializer[1]"}));
  // The parsed model has the same tensors at the same sites, in field order.
  std::vector<std::string> visited;
  for_each_tensor(parse_model(bytes), [&](const TensorProto&, const TensorSite& site) {
    visited.emplace_back(site.path);
  });
  std::sort(paths.begin(), paths.end());
  std::sort(visited.begin(), visited.end());
  EXPECT_EQ(paths, visited);
}

}  // namespace
}  // namespace onnxzip::detail
