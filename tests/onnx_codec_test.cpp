#include "onnxzip/onnx_codec.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <string>
#include <vector>

#include "onnxzip/error.h"
#include "onnxzip/internal/protobuf_wire.h"
#include "onnxzip/onnx_model.h"
#include "onnxzip/tensor.h"
#include "support/expect_contains.h"
#include "support/onnx_samples.h"
#include "support/scratch_dir.h"

namespace onnxzip {
namespace {

using Bytes = std::vector<std::uint8_t>;
using test_support::every_field_model;
using wire::WireType;

// Builds protobuf bytes field by field, in whatever order and encoding a test needs.
class Pb {
 public:
  Pb& tag(std::uint32_t field, WireType type) { return varint_raw(wire::make_tag(field, type)); }
  Pb& varint_raw(std::uint64_t value) {
    std::uint8_t tmp[wire::kMaxVarintSize];
    bytes_.insert(bytes_.end(), tmp, wire::encode_varint(value, tmp));
    return *this;
  }
  Pb& varint(std::uint32_t field, std::uint64_t value) {
    return tag(field, WireType::kVarint).varint_raw(value);
  }
  Pb& fixed32(std::uint32_t field, std::uint32_t value) {
    tag(field, WireType::kFixed32);
    std::uint8_t tmp[4];
    wire::store_fixed32(value, tmp);
    bytes_.insert(bytes_.end(), tmp, tmp + 4);
    return *this;
  }
  Pb& fixed64(std::uint32_t field, std::uint64_t value) {
    tag(field, WireType::kFixed64);
    std::uint8_t tmp[8];
    wire::store_fixed64(value, tmp);
    bytes_.insert(bytes_.end(), tmp, tmp + 8);
    return *this;
  }
  Pb& len(std::uint32_t field, const Bytes& payload) {
    tag(field, WireType::kLengthDelimited).varint_raw(payload.size());
    return raw(payload);
  }
  Pb& str(std::uint32_t field, std::string_view text) {
    return len(field, Bytes(text.begin(), text.end()));
  }
  Pb& msg(std::uint32_t field, const Pb& message) { return len(field, message.bytes()); }
  Pb& raw(const Bytes& more) {
    bytes_.insert(bytes_.end(), more.begin(), more.end());
    return *this;
  }
  const Bytes& bytes() const { return bytes_; }
  std::size_t size() const { return bytes_.size(); }

 private:
  Bytes bytes_;
};

Bytes packed_varints(std::initializer_list<std::uint64_t> values) {
  Pb pb;
  for (const std::uint64_t v : values) pb.varint_raw(v);
  return pb.bytes();
}

template <class Body>
std::string error_of(ErrorCode code, Body&& body) {
  try {
    body();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error thrown";
  return {};
}

Bytes to_bytes(ByteSpan span) { return Bytes(span.begin(), span.end()); }

TEST(OnnxCodec, EveryMessageAndFieldRoundTrips) {
  const ModelProto model = every_field_model();
  const Bytes bytes = serialize_model(model);
  const ModelProto parsed = parse_model(bytes);
  EXPECT_EQ(parsed, model);
  EXPECT_EQ(serialize_model(parsed), bytes);
  EXPECT_EQ(serialized_size(model), bytes.size());
  EXPECT_EQ(
      parsed.graph->node[0].attribute[0].type_protos[0].sparse_tensor_type->shape->dim[1].dim_param,
      "batch");
  EXPECT_EQ(parsed.configuration[0].device[1], "gpu1");
  EXPECT_EQ(parsed.graph->node[0]
                .device_configurations[0]
                .sharding_spec[0]
                .sharded_dim[0]
                .simple_sharding[0]
                .num_shards,
            2);
}

TEST(OnnxCodec, EqualityComparesPresenceValuesAndFloatBits) {
  ModelProto a = every_field_model();
  ModelProto b = a;
  EXPECT_EQ(a, b);
  b.graph->node[0].attribute[0].f = -0.5f;
  EXPECT_NE(a, b);
  b = a;
  b.graph->node[0].domain.reset();  // Present-but-empty differs from absent.
  EXPECT_NE(a, b);
  b = a;
  a.graph->initializer[0].float_data[0] = std::bit_cast<float>(0x7fc00001u);  // A NaN.
  b.graph->initializer[0].float_data[0] = std::bit_cast<float>(0x7fc00001u);
  EXPECT_EQ(a, b);
  b.graph->initializer[0].float_data[1] = 0.0f;  // Was -0.0.
  EXPECT_NE(a, b);
}

TEST(OnnxCodec, WritesKnownFieldsInNumberOrderWithTheDeclaredEncoding) {
  // AttributeProto: name = 1, ints = 8 (unpacked in onnx.proto), type = 20; TensorProto dims = 1
  // (unpacked), int64_data = 7 (packed).
  AttributeProto attribute;
  attribute.type = AttributeProto::kInts;
  attribute.ints = {1, -1};
  attribute.name = "axes";
  EXPECT_EQ(serialize_message(attribute), Pb().str(1, "axes")
                                              .varint(8, 1)
                                              .varint(8, ~std::uint64_t{0})
                                              .varint(20, AttributeProto::kInts)
                                              .bytes());

  TensorProto tensor;
  tensor.int64_data = {300, 1};
  tensor.dims = {2, 1};
  EXPECT_EQ(serialize_message(tensor),
            Pb().varint(1, 2).varint(1, 1).len(7, packed_varints({300, 1})).bytes());
}

TEST(OnnxCodec, PackedAndUnpackedInputParseToTheSameModel) {
  const Bytes packed = Pb().len(1, packed_varints({2, 3}))
                           .len(4, Bytes{0, 0, 0x80, 0x3f, 0, 0, 0, 0x40})
                           .len(5, packed_varints({1, ~std::uint64_t{0}}))
                           .len(7, packed_varints({5}))
                           .len(10, Bytes{0, 0, 0, 0, 0, 0, 0xf0, 0x3f})
                           .len(11, packed_varints({9, 10}))
                           .bytes();
  const Bytes unpacked = Pb().varint(1, 2)
                             .varint(1, 3)
                             .fixed32(4, 0x3f800000)
                             .fixed32(4, 0x40000000)
                             .varint(5, 1)
                             .varint(5, ~std::uint64_t{0})
                             .varint(7, 5)
                             .fixed64(10, 0x3ff0000000000000)
                             .varint(11, 9)
                             .varint(11, 10)
                             .bytes();
  const TensorProto a = parse_message<TensorProto>(packed);
  const TensorProto b = parse_message<TensorProto>(unpacked);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.dims, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(a.float_data, (std::vector<float>{1.0f, 2.0f}));
  EXPECT_EQ(a.int32_data, (std::vector<std::int32_t>{1, -1}));
  EXPECT_EQ(a.double_data, (std::vector<double>{1.0}));
  EXPECT_EQ(a.uint64_data, (std::vector<std::uint64_t>{9, 10}));
  // Canonical output: dims unpacked, the *_data fields packed, -1 as a 10-byte varint.
  const Bytes canonical = Pb().varint(1, 2)
                              .varint(1, 3)
                              .len(4, Bytes{0, 0, 0x80, 0x3f, 0, 0, 0, 0x40})
                              .len(5, packed_varints({1, ~std::uint64_t{0}}))
                              .len(7, packed_varints({5}))
                              .len(10, Bytes{0, 0, 0, 0, 0, 0, 0xf0, 0x3f})
                              .len(11, packed_varints({9, 10}))
                              .bytes();
  EXPECT_EQ(serialize_message(a), canonical);
  EXPECT_EQ(serialize_message(b), canonical);

  // AttributeProto.floats / ints are unpacked in onnx.proto: packed input is read, unpacked out.
  const AttributeProto attribute = parse_message<AttributeProto>(
      Pb().len(7, Bytes{0, 0, 0x80, 0x3f}).len(8, packed_varints({4, 5})).bytes());
  EXPECT_EQ(attribute.floats, (std::vector<float>{1.0f}));
  EXPECT_EQ(attribute.ints, (std::vector<std::int64_t>{4, 5}));
  EXPECT_EQ(serialize_message(attribute),
            Pb().fixed32(7, 0x3f800000).varint(8, 4).varint(8, 5).bytes());
}

TEST(OnnxCodec, PresenceOfDefaultValuesSurvives) {
  // data_type = 0 and name = "" are present on the wire and must stay present.
  const Bytes input = Pb().varint(2, 0).str(8, "").bytes();
  const TensorProto tensor = parse_message<TensorProto>(input);
  ASSERT_TRUE(tensor.data_type.has_value());
  EXPECT_EQ(*tensor.data_type, 0);
  ASSERT_TRUE(tensor.name.has_value());
  EXPECT_EQ(*tensor.name, "");
  EXPECT_FALSE(tensor.doc_string.has_value());
  EXPECT_EQ(serialize_message(tensor), input);

  const TensorProto absent = parse_message<TensorProto>(Bytes{});
  EXPECT_FALSE(absent.data_type.has_value());
  EXPECT_FALSE(absent.name.has_value());
  EXPECT_NE(absent, tensor);
  EXPECT_TRUE(serialize_message(absent).empty());

  // An empty but present sub-message is written as a zero-length field.
  ModelProto model;
  model.graph.emplace();
  EXPECT_EQ(serialize_model(model), (Bytes{0x3a, 0x00}));
  EXPECT_TRUE(parse_model(Bytes{0x3a, 0x00}).graph.has_value());
}

TEST(OnnxCodec, UnknownFieldsOfEveryWireTypeAreKeptInOrderAndWrittenBack) {
  const Bytes unknown = Pb().varint(100, 150)
                            .fixed64(101, 0x0102030405060708)
                            .str(102, "future")
                            .tag(103, WireType::kStartGroup)
                            .varint(104, 1)
                            .tag(103, WireType::kEndGroup)
                            .fixed32(105, 0xdeadbeef)
                            .bytes();
  const Bytes node_bytes = Pb().str(3, "n").str(4, "Add").raw(unknown).bytes();
  const NodeProto node = parse_message<NodeProto>(node_bytes);
  EXPECT_EQ(*node.op_type, "Add");
  EXPECT_EQ(to_bytes(node.unknown_fields.bytes()), unknown);
  EXPECT_EQ(serialize_message(node), node_bytes);

  // Nested: an unknown field inside a graph inside a model, and one at the model level.
  const Bytes graph_bytes = Pb().str(2, "g").raw(unknown).bytes();
  const Bytes model_bytes = Pb().varint(1, 10).msg(7, Pb().raw(graph_bytes)).varint(99, 1).bytes();
  const ModelProto model = parse_model(model_bytes);
  EXPECT_EQ(to_bytes(model.graph->unknown_fields.bytes()), unknown);
  EXPECT_EQ(to_bytes(model.unknown_fields.bytes()), Pb().varint(99, 1).bytes());
  EXPECT_EQ(serialize_model(model), model_bytes);
}

// Unknown fields at every level of a deep model (inside a tensor inside an attribute inside a
// node of a subgraph, inside a oneof member), of every wire type, one of them a length-delimited
// field whose payload is itself a message with unknown groups: all kept opaque, where they were,
// and written back by both writers.
TEST(OnnxCodec, UnknownFieldsAtEveryDepthSurviveBothWriters) {
  const Bytes every_type = Pb().varint(1000, ~std::uint64_t{0})
                               .fixed64(1001, 0x1122334455667788)
                               .str(1002, "")
                               .tag(1003, WireType::kStartGroup)
                               .tag(1004, WireType::kStartGroup)
                               .fixed32(5, 7)
                               .tag(1004, WireType::kEndGroup)
                               .tag(1003, WireType::kEndGroup)
                               .fixed32(1005, 0x3f800000)
                               .bytes();
  const Bytes nested_unknown =
      Pb().msg(77, Pb().str(1, "looks like a message").raw(every_type)).bytes();
  const auto with_unknown = [&](Pb known, std::uint64_t marker) {
    return known.raw(every_type).varint(2000, marker).raw(nested_unknown);
  };
  const Pb tensor = with_unknown(Pb().varint(1, 2).varint(2, 1).str(8, "w"), 1);
  const Pb dimension = with_unknown(Pb().varint(1, 4), 2);
  const Pb tensor_type =
      with_unknown(Pb().varint(1, 1).msg(2, with_unknown(Pb().msg(1, dimension), 3)), 4);
  const Pb value_info =
      with_unknown(Pb().str(1, "x").msg(2, with_unknown(Pb().msg(1, tensor_type), 5)), 6);
  const Pb inner_node = with_unknown(Pb().str(4, "Inner"), 7);
  const Pb subgraph = with_unknown(Pb().msg(1, inner_node).str(2, "body").msg(11, value_info), 8);
  const Pb attribute =
      with_unknown(Pb().str(1, "a").msg(5, tensor).msg(6, subgraph).varint(20, 5), 9);
  const Pb node = with_unknown(Pb().str(4, "If").msg(5, attribute), 10);
  const Pb graph = with_unknown(Pb().msg(1, node).str(2, "main").msg(5, tensor), 11);
  const Bytes input = with_unknown(Pb().varint(1, 8).msg(7, graph), 12).bytes();

  const ModelProto model = parse_model(input);
  const Bytes expected_unknown = Pb().raw(every_type).varint(2000, 9).raw(nested_unknown).bytes();
  const AttributeProto& parsed_attribute = model.graph->node.at(0).attribute.at(0);
  EXPECT_EQ(to_bytes(parsed_attribute.unknown_fields.bytes()), expected_unknown);
  const GraphProto& parsed_subgraph = *parsed_attribute.g;
  EXPECT_EQ(to_bytes(parsed_subgraph.node.at(0).unknown_fields.bytes()),
            Pb().raw(every_type).varint(2000, 7).raw(nested_unknown).bytes());
  const TypeProto::Tensor& parsed_type = *parsed_subgraph.input.at(0).type->tensor_type;
  EXPECT_EQ(to_bytes(parsed_type.shape->dim.at(0).unknown_fields.bytes()),
            Pb().raw(every_type).varint(2000, 2).raw(nested_unknown).bytes());
  EXPECT_EQ(parsed_type.shape->dim.at(0).dim_value, 4);
  EXPECT_EQ(to_bytes(parsed_attribute.t->unknown_fields.bytes()),
            Pb().raw(every_type).varint(2000, 1).raw(nested_unknown).bytes());

  EXPECT_EQ(serialize_model(model), input);
  Bytes streamed;
  wire::VectorSink sink(streamed);
  serialize_model(model, sink);
  EXPECT_EQ(streamed, input);
  EXPECT_EQ(serialized_size(model), input.size());
  EXPECT_EQ(parse_model(streamed), model);
  // Unknown fields take part in equality.
  ModelProto changed = model;
  changed.graph->node[0].attribute[0].g->node[0].unknown_fields.clear();
  EXPECT_NE(changed, model);
}

TEST(OnnxCodec, UnknownFieldsInterleavedWithKnownOnesMoveAfterThemInOrder) {
  const TensorProto tensor =
      parse_message<TensorProto>(Pb().varint(50, 1).str(8, "w").varint(51, 2).varint(2, 1).bytes());
  EXPECT_EQ(serialize_message(tensor),
            Pb().varint(2, 1).str(8, "w").varint(50, 1).varint(51, 2).bytes());
}

TEST(OnnxCodec, OneofMembersClearEachOtherAndRepeatedOccurrencesMerge) {
  const auto dim =
      parse_message<TensorShapeProto::Dimension>(Pb().varint(1, 5).str(2, "n").bytes());
  EXPECT_FALSE(dim.dim_value.has_value());
  EXPECT_EQ(dim.dim_param, "n");
  EXPECT_EQ(serialize_message(dim), Pb().str(2, "n").bytes());

  const auto sharded =
      parse_message<SimpleShardedDimProto>(Pb().str(2, "n").varint(1, 3).varint(3, 2).bytes());
  EXPECT_FALSE(sharded.dim_param.has_value());
  EXPECT_EQ(sharded.dim_value, 3);

  const auto switched =
      parse_message<TypeProto>(Pb().msg(1, Pb().varint(1, 1)).msg(4, Pb()).str(6, "d").bytes());
  EXPECT_FALSE(switched.tensor_type.has_value());
  EXPECT_TRUE(switched.sequence_type.has_value());
  EXPECT_EQ(switched.denotation, "d");  // Not part of the oneof.

  const auto merged =
      parse_message<TypeProto>(Pb().msg(1, Pb().varint(1, 1)).msg(1, Pb().msg(2, Pb())).bytes());
  ASSERT_TRUE(merged.tensor_type.has_value());
  EXPECT_EQ(merged.tensor_type->elem_type, 1);
  EXPECT_TRUE(merged.tensor_type->shape.has_value());

  const ModelProto model = parse_model(
      Pb().msg(7, Pb().msg(1, Pb().str(4, "A"))).msg(7, Pb().msg(1, Pb().str(4, "B"))).bytes());
  ASSERT_EQ(model.graph->node.size(), 2u);
  EXPECT_EQ(model.graph->node[1].op_type, "B");
}

TEST(OnnxCodec, MergeMessageAppendsAndReplaces) {
  TensorProto tensor;
  tensor.dims = {1};
  tensor.name = "old";
  merge_message(Pb().varint(1, 2).str(8, "new").bytes(), tensor);
  EXPECT_EQ(tensor.dims, (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(tensor.name, "new");
}

TEST(OnnxCodec, Int32FieldsAreSignExtendedAndTruncatedLikeLibprotobuf) {
  TensorProto tensor;
  tensor.data_type = -2;
  const Bytes bytes = serialize_message(tensor);
  EXPECT_EQ(bytes, Pb().varint(2, static_cast<std::uint64_t>(std::int64_t{-2})).bytes());
  EXPECT_EQ(bytes.size(), 11u);
  // A 5-byte (non-canonical) negative int32 and a value wider than 32 bits.
  EXPECT_EQ(parse_message<TensorProto>(Pb().varint(2, 0xfffffffe).bytes()).data_type, -2);
  EXPECT_EQ(parse_message<TensorProto>(Pb().varint(2, 0x100000007).bytes()).data_type, 7);
}

TEST(OnnxCodec, NoCopyFromBytesBorrowsLargePayloadsWithoutAToken) {
  const Bytes big(2000, 0x5a);
  const Bytes small(10, 0x11);
  const Bytes input = Pb().msg(7, Pb().msg(5, Pb().str(8, "big").len(9, big))
                                      .msg(5, Pb().str(8, "small").len(9, small)))
                          .bytes();
  ParseOptions options;
  options.no_copy = true;
  const ModelProto model = parse_model(input, options);
  const TensorBytes& big_data = *model.graph->initializer[0].raw_data;
  EXPECT_TRUE(big_data.is_borrowed());
  EXPECT_EQ(big_data.owner(), nullptr);
  EXPECT_GE(big_data.data(), input.data());
  EXPECT_LE(big_data.data() + big_data.size(), input.data() + input.size());
  EXPECT_EQ(to_bytes(big_data.view()), big);
  const TensorBytes& small_data = *model.graph->initializer[1].raw_data;
  EXPECT_TRUE(small_data.is_owned());  // Below raw_data_threshold (1024).
  EXPECT_EQ(to_bytes(small_data.view()), small);

  options.raw_data_threshold = 0;
  EXPECT_TRUE(parse_model(input, options).graph->initializer[1].raw_data->is_borrowed());

  const ModelProto copied = parse_model(input);
  EXPECT_TRUE(copied.graph->initializer[0].raw_data->is_owned());
  EXPECT_EQ(copied, model);
}

bool points_into(const Text& text, const Bytes& bytes) {
  const auto* const first = reinterpret_cast<const char*>(bytes.data());
  return text.data() >= first && text.data() + text.size() <= first + bytes.size();
}

TEST(OnnxCodec, NoCopyFromBytesBorrowsEveryStringAndCopyingParsesOwnThem) {
  const std::string long_name = "/encoder/layer.0/attn/MatMul_output_0";
  const Bytes input =
      Pb().str(2, "producer")
          .msg(7, Pb().msg(1, Pb().str(1, long_name)
                                  .str(1, "x")
                                  .str(2, "y")
                                  .str(4, "MatMul")
                                  .msg(5, Pb().str(1, "axis").str(4, "some string")))
                      .str(2, "graph"))
          .bytes();
  ParseOptions options;
  options.no_copy = true;
  ModelProto model = parse_model(input, options);
  const NodeProto& node = model.graph->node[0];
  for (const Text* text : std::initializer_list<const Text*>{
           &*model.producer_name, &*model.graph->name, &node.input[0], &node.input[1],
           &node.output[0], &*node.op_type, &*node.attribute[0].name, &*node.attribute[0].s}) {
    EXPECT_TRUE(text->borrowed()) << *text;
    EXPECT_TRUE(points_into(*text, input)) << *text;
  }
  EXPECT_EQ(node.input[0], long_name);
  EXPECT_EQ(*node.attribute[0].s, "some string");

  // A copy borrows the same bytes; own_strings detaches a whole message.
  ModelProto copy = model;
  EXPECT_EQ(copy.graph->node[0].input[0].data(), node.input[0].data());
  own_strings(copy);
  EXPECT_FALSE(copy.graph->node[0].input[0].borrowed());
  EXPECT_FALSE(points_into(copy.graph->node[0].input[0], input));
  EXPECT_FALSE(copy.producer_name->borrowed());
  EXPECT_EQ(copy, model);

  // Without no_copy, and with an owner token (a mapped file), strings are copies.
  const ModelProto owned = parse_model(input);
  EXPECT_FALSE(owned.graph->node[0].input[0].borrowed());
  EXPECT_FALSE(points_into(owned.graph->node[0].input[0], input));
  const ModelProto with_token =
      parse_message<ModelProto>(input, std::make_shared<int>(0), options, "<memory>");
  EXPECT_FALSE(with_token.graph->node[0].input[0].borrowed());
  EXPECT_EQ(owned, model);
  EXPECT_EQ(with_token, model);

  // Serializing borrowed strings writes the same bytes as owned ones.
  EXPECT_EQ(serialize_model(model), input);
  EXPECT_EQ(serialize_model(owned), input);
}

// A graph whose node and value_info runs are each far longer than the parser's look-ahead for
// sizing repeated fields (128 KiB), so that their vectors are sized by estimate.
ModelProto long_graph(std::size_t nodes) {
  ModelProto model;
  GraphProto& graph = model.graph.emplace();
  for (std::size_t i = 0; i < nodes; ++i) {
    NodeProto& node = graph.node.emplace_back();
    node.name = "/encoder/layer." + std::to_string(i) + "/MatMul";
    node.op_type = i % 3 == 0 ? "LayerNormalization" : "MatMul";
    node.input = {Text("x" + std::to_string(i)), Text("w" + std::to_string(i))};
    node.output.emplace_back("x" + std::to_string(i + 1));
    ValueInfoProto& info = graph.value_info.emplace_back();
    info.name = node.output[0];
    TypeProto::Tensor& tensor = info.type.ensure().tensor_type.ensure();
    tensor.elem_type = TensorProto::kFloat;
    tensor.shape.ensure().dim.emplace_back().dim_param = "batch";
  }
  return model;
}

TEST(OnnxCodec, LongRunsOfRepeatedFieldsParseWhetherTogetherOrInterleaved) {
  const ModelProto model = long_graph(20000);
  const Bytes input = serialize_model(model);
  ASSERT_GT(input.size(), 1000000u);
  ParseOptions no_copy;
  no_copy.no_copy = true;
  const ModelProto parsed = parse_model(input, no_copy);
  EXPECT_EQ(parsed, model);
  EXPECT_EQ(parse_model(input), model);
  // Reserved room is bounded by the input (at most 4 bytes of elements per byte of input) or, once
  // a vector had to grow, by twice the elements present.
  const auto bounded = [&](const auto& v) {
    using T = typename std::decay_t<decltype(v)>::value_type;
    return v.capacity() <= std::max(4 * input.size() / sizeof(T), 2 * v.size());
  };
  EXPECT_TRUE(bounded(parsed.graph->node)) << parsed.graph->node.capacity();
  EXPECT_TRUE(bounded(parsed.graph->value_info)) << parsed.graph->value_info.capacity();

  // The same fields interleaved (node, value_info, node, ...): every run has one element, and the
  // vectors grow as they go.
  Pb graph;
  for (std::size_t i = 0; i < model.graph->node.size(); ++i) {
    graph.len(1, serialize_message(model.graph->node[i]));
    graph.len(13, serialize_message(model.graph->value_info[i]));
  }
  const Bytes interleaved_input = Pb().msg(7, graph).bytes();  // Borrowed from: kept alive.
  const ModelProto interleaved = parse_model(interleaved_input, no_copy);
  EXPECT_EQ(interleaved, model);
}

TEST(OnnxCodec, ALongRunFollowedByOtherFieldsReservesABoundedAmount) {
  // 2,000 nodes (past the look-ahead) and then 8 MB of doc_string: the estimate from the bytes
  // left would be far too high; it is capped by the input size.
  const ModelProto nodes = long_graph(2000);
  Pb graph;
  for (const NodeProto& node : nodes.graph->node) graph.len(1, serialize_message(node));
  graph.str(10, std::string(8 << 20, 'd'));
  const Bytes input = Pb().msg(7, graph).bytes();
  const ModelProto parsed = parse_model(input);
  EXPECT_EQ(parsed.graph->node, nodes.graph->node);
  EXPECT_LE(parsed.graph->node.capacity() * sizeof(NodeProto), 4 * input.size());
}

TEST(OnnxCodec, NoCopyWithAlignmentCopiesMisalignedPayloads) {
  const Bytes payload(64, 0x33);
  const Bytes tensor_bytes = Pb().len(9, payload).bytes();  // Payload starts at offset 2.
  OwnedBytes aligned_input = OwnedBytes::copy_of(tensor_bytes, 64);
  ParseOptions options;
  options.no_copy = true;
  options.raw_data_threshold = 0;
  options.alignment = 2;
  TensorProto tensor = parse_message<TensorProto>(aligned_input.span(), options);
  EXPECT_TRUE(tensor.raw_data->is_borrowed());
  options.alignment = 64;
  tensor = parse_message<TensorProto>(aligned_input.span(), options);
  EXPECT_TRUE(tensor.raw_data->is_owned());
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(tensor.raw_data->data()) % 64, 0u);
  EXPECT_EQ(to_bytes(tensor.raw_data->view()), payload);
  options.alignment = 24;
  EXPECT_CONTAINS(error_of(ErrorCode::kInvalidArgument,
                           [&] { parse_message<TensorProto>(aligned_input.span(), options); }),
                  "alignment 24 is not a power of two");
}

std::filesystem::path temp_path(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("onnx_codec_test_" + name);
}

void write_file(const std::filesystem::path& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

Bytes read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

TEST(OnnxCodec, NoCopyFromAPathBorrowsWithTheMappingAsToken) {
  const Bytes payload(4096, 0x7e);
  const Bytes input = Pb().msg(7, Pb().msg(5, Pb().str(8, "w").len(9, payload))).bytes();
  const auto path = temp_path("no_copy.onnx");
  write_file(path, input);
  ParseOptions options;
  options.no_copy = true;
  ModelProto model = parse_model_file(path, options);
  std::filesystem::remove(path);  // The mapping outlives the file's name.
  const TensorBytes& data = *model.graph->initializer[0].raw_data;
  EXPECT_TRUE(data.is_borrowed());
  EXPECT_NE(data.owner(), nullptr);
  const ModelProto copy = model;  // Copies share the token.
  EXPECT_EQ(copy.graph->initializer[0].raw_data->owner(), data.owner());
  model = ModelProto();
  EXPECT_EQ(to_bytes(copy.graph->initializer[0].raw_data->view()), payload);

  write_file(path, input);
  const ModelProto owned = parse_model_file(path);
  std::filesystem::remove(path);
  EXPECT_TRUE(owned.graph->initializer[0].raw_data->is_owned());
  EXPECT_EQ(owned, copy);
}

TEST(OnnxCodec, ParseFromAMissingPathIsNotFound) {
  EXPECT_CONTAINS(
      error_of(ErrorCode::kNotFound, [] { parse_model_file(temp_path("does_not_exist.onnx")); }),
      "does_not_exist.onnx");
}

// --- Malformed input: the code and the byte offset ---

TEST(OnnxCodecMalformed, TruncatedVarint) {
  const Bytes input = {0x08, 0x80};
  EXPECT_CONTAINS(error_of(ErrorCode::kCorrupt, [&] { parse_model(input, {}, "m.onnx"); }),
                  "m.onnx: offset 1: ModelProto.ir_version: truncated varint");
}

TEST(OnnxCodecMalformed, TruncatedVarintInsideAPackedBlock) {
  const Bytes input = Pb().msg(7, Pb().msg(5, Pb().len(7, Bytes{0x01, 0x80}))).bytes();
  // graph tag+len (2) + initializer tag+len (2) + int64_data tag+len (2) + one varint (1).
  EXPECT_CONTAINS(error_of(ErrorCode::kCorrupt, [&] { parse_model(input); }),
                  "offset 7: TensorProto.int64_data: truncated varint");
}

TEST(OnnxCodecMalformed, LengthPastTheEnd) {
  const Bytes input = {0x08, 0x01, 0x12, 0x05, 'a'};
  EXPECT_CONTAINS(error_of(ErrorCode::kCorrupt, [&] { parse_model(input); }),
                  "offset 3: ModelProto.producer_name: length 5 exceeds the 1 bytes remaining");
  // Inside a nested message the bound is the nested message, not the input.
  const Bytes nested = Pb().msg(7, Pb().raw({0x12, 0x03, 'a'})).str(2, "padding").bytes();
  EXPECT_CONTAINS(error_of(ErrorCode::kCorrupt, [&] { parse_model(nested); }),
                  "offset 3: GraphProto.name: length 3 exceeds the 1 bytes remaining");
}

TEST(OnnxCodecMalformed, WrongWireTypeForAKnownField) {
  const Bytes input = {0x08, 0x01, 0x0a, 0x00};  // ir_version as length-delimited.
  EXPECT_CONTAINS(error_of(ErrorCode::kCorrupt, [&] { parse_model(input); }),
                  "offset 2: ModelProto.ir_version: wire type length-delimited, expected varint");
  const Bytes graph_as_varint = {0x38, 0x01};
  EXPECT_CONTAINS(error_of(ErrorCode::kCorrupt, [&] { parse_model(graph_as_varint); }),
                  "offset 0: ModelProto.graph: wire type varint, expected length-delimited");
}

// Regression (found by onnx_roundtrip_fuzzer): sizing a repeated field from its run of elements
// read past the input when the last element was cut short.
TEST(OnnxCodecMalformed, ARunOfRepeatedElementsCutShortFailsCleanly) {
  const Bytes varints = Pb().varint(1, 1).varint(1, 2).raw({0x08, 0x80}).bytes();
  EXPECT_CONTAINS(error_of(ErrorCode::kCorrupt, [&] { parse_message<TensorProto>(varints); }),
                  "offset 5: TensorProto.dims: truncated varint");
  const Bytes floats = Pb().fixed32(7, 1).raw({0x3d, 0x00, 0x00}).bytes();
  EXPECT_CONTAINS(error_of(ErrorCode::kCorrupt, [&] { parse_message<AttributeProto>(floats); }),
                  "offset 6: AttributeProto.floats: needs 4 bytes but only 2 remain");
  const Bytes doubles = Pb().fixed64(10, 1).raw({0x51, 0x00}).bytes();
  EXPECT_CONTAINS(error_of(ErrorCode::kCorrupt, [&] { parse_message<TensorProto>(doubles); }),
                  "offset 10: TensorProto.double_data: needs 8 bytes but only 1 remain");
  const Bytes strings = Pb().str(1, "x").raw({0x0a, 0x05, 'y'}).bytes();
  EXPECT_CONTAINS(error_of(ErrorCode::kCorrupt, [&] { parse_message<NodeProto>(strings); }),
                  "offset 4: NodeProto.input: length 5 exceeds the 1 bytes remaining");
}

TEST(OnnxCodecMalformed, InvalidTagsAndPackedLengths) {
  const Bytes field_zero = Pb().msg(7, Pb().raw({0x00})).bytes();
  EXPECT_CONTAINS(error_of(ErrorCode::kCorrupt, [&] { parse_model(field_zero); }),
                  "offset 2: GraphProto: invalid field number 0");
  const Bytes odd_floats = Pb().len(4, Bytes{1, 2, 3}).bytes();
  EXPECT_CONTAINS(error_of(ErrorCode::kCorrupt, [&] { parse_message<TensorProto>(odd_floats); }),
                  "offset 0: TensorProto.float_data: packed length 3 is not a multiple of 4");
  const Bytes bad_unknown = Pb().varint(1, 1).tag(60, WireType::kFixed64).raw({1, 2}).bytes();
  EXPECT_CONTAINS(error_of(ErrorCode::kCorrupt, [&] { parse_model(bad_unknown); }),
                  "offset 4: ModelProto.60: needs 8 bytes but only 2 remain");
}

// Subgraphs nested `levels` deep: Model.graph -> (node -> attribute.g -> graph) repeated.
// `header_offsets` receives, for every nested message, the offset of the tag that opens it.
Bytes nested_subgraphs(int levels, std::vector<std::size_t>* header_offsets) {
  // Built inside out; each wrapper is a field tag (one byte) and a length varint.
  Bytes body;
  std::vector<std::size_t> header_sizes;     // Innermost first.
  const std::uint32_t fields[] = {6, 5, 1};  // attribute.g, node.attribute, graph.node.
  for (int i = 0; i < levels * 3; ++i) {
    const Bytes inner = body;
    body = Pb().len(fields[i % 3], inner).bytes();
    header_sizes.push_back(body.size() - inner.size());
  }
  const Bytes inner = body;
  body = Pb().len(7, inner).bytes();
  header_sizes.push_back(body.size() - inner.size());
  std::reverse(header_sizes.begin(), header_sizes.end());
  std::size_t offset = 0;
  for (const std::size_t size : header_sizes) {
    header_offsets->push_back(offset);
    offset += size;
  }
  return body;
}

TEST(OnnxCodecMalformed, DepthBombFailsAtTheLimitWithItsOffset) {
  std::vector<std::size_t> offsets;
  const Bytes bomb = nested_subgraphs(1000, &offsets);  // 3001 nested messages.
  // The model is depth 1; the tag opening depth 101 is the 100th nested header.
  const std::string message = error_of(ErrorCode::kLimitExceeded, [&] { parse_model(bomb); });
  EXPECT_CONTAINS(message, "offset " + std::to_string(offsets[99]) + ": ");
  EXPECT_CONTAINS(message, "messages nested deeper than max_depth (100)");

  std::vector<std::size_t> unused;
  ParseOptions options;
  options.max_depth = 5;  // Model, graph, node, attribute, subgraph.
  EXPECT_NO_THROW(parse_model(nested_subgraphs(1, &unused), options));
  options.max_depth = 4;
  EXPECT_CONTAINS(error_of(ErrorCode::kLimitExceeded,
                           [&] { parse_model(nested_subgraphs(1, &unused), options); }),
                  "AttributeProto.g: messages nested deeper than max_depth (4)");
}

TEST(OnnxCodecMalformed, SizesBeyondTheLimits) {
  ParseOptions options;
  options.max_message_size = 16;
  const Bytes long_name = Pb().varint(1, 1).str(2, std::string(20, 'x')).bytes();
  EXPECT_CONTAINS(error_of(ErrorCode::kLimitExceeded, [&] { parse_model(long_name, options); }),
                  "offset 0: ModelProto: input of 24 bytes exceeds max_message_size (16)");
  // A declared length far beyond the input: corrupt, before any allocation.
  const Bytes huge_length = Pb().tag(2, WireType::kLengthDelimited).varint_raw(1ULL << 40).bytes();
  EXPECT_CONTAINS(error_of(ErrorCode::kCorrupt, [&] { parse_model(huge_length); }),
                  "offset 1: ModelProto.producer_name: length 1099511627776 exceeds the 0 bytes "
                  "remaining");

  ParseOptions few;
  few.max_elements = 3;
  const Bytes four_dims = Pb().varint(1, 1).varint(1, 2).varint(1, 3).varint(1, 4).bytes();
  EXPECT_CONTAINS(
      error_of(ErrorCode::kLimitExceeded, [&] { parse_message<TensorProto>(four_dims, few); }),
      "offset 6: TensorProto.dims: more than max_elements (3) elements");
  const Bytes four_packed = Pb().len(7, packed_varints({1, 2, 3, 4})).bytes();
  EXPECT_CONTAINS(
      error_of(ErrorCode::kLimitExceeded, [&] { parse_message<TensorProto>(four_packed, few); }),
      "offset 0: TensorProto.int64_data: more than max_elements (3)");

  ParseOptions small_tensors;
  small_tensors.max_tensor_bytes = 8;
  const Bytes nine = Pb().str(8, "w").len(9, Bytes(9, 0)).bytes();
  EXPECT_CONTAINS(
      error_of(ErrorCode::kLimitExceeded, [&] { parse_message<TensorProto>(nine, small_tensors); }),
      "offset 4: TensorProto.raw_data: tensor payload of 9 bytes exceeds "
      "max_tensor_bytes (8)");
}

TEST(OnnxCodecMalformed, EveryTruncationOfAValidModelFailsCleanly) {
  const Bytes bytes = serialize_model(every_field_model());
  for (std::size_t keep = 0; keep < bytes.size(); ++keep) {
    try {
      parse_model(ByteSpan(bytes.data(), keep));
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kCorrupt) << e.what();
    }
  }
}

// --- Serialization ---

class ChunkRecorder final : public wire::ByteSink {
 public:
  void write(ByteSpan bytes) override {
    ++writes;
    out.insert(out.end(), bytes.begin(), bytes.end());
  }
  Bytes out;
  int writes = 0;
};

TEST(OnnxCodec, StreamedBufferedAndFileOutputAreIdentical) {
  ModelProto model = every_field_model();
  // A payload bigger than the stream buffer goes straight to the sink.
  model.graph->initializer[0].raw_data = TensorBytes::copy_of(Bytes(3 << 20, 0xab));
  const Bytes expected = serialize_model(model);
  ChunkRecorder sink;
  serialize_model(model, sink);
  EXPECT_EQ(sink.out, expected);
  EXPECT_GE(sink.writes, 2);

  const OwnedBytes owned = serialize_model_to_owned_bytes(model);
  EXPECT_EQ(to_bytes(owned.span()), expected);

  const auto path = temp_path("streamed.onnx");
  serialize_model_to_file(model, path);
  EXPECT_EQ(read_file(path), expected);
  std::filesystem::remove(path);

  const MessageSerializer<ModelProto> serializer(model);
  EXPECT_EQ(serializer.size(), expected.size());
  Bytes span_out(expected.size());
  serializer.write(MutableByteSpan(span_out));
  EXPECT_EQ(span_out, expected);
  Bytes wrong_size(expected.size() - 1);
  EXPECT_THROW(serializer.write(MutableByteSpan(wrong_size)), Error);

  // Straight into a caller's span: exact, larger (the message at its start), too small.
  Bytes direct(expected.size());
  EXPECT_EQ(serialize_model(model, MutableByteSpan(direct)), expected.size());
  EXPECT_EQ(direct, expected);
  Bytes larger(expected.size() + 100, 0x77);
  EXPECT_EQ(serialize_model(model, MutableByteSpan(larger)), expected.size());
  EXPECT_EQ(Bytes(larger.begin(), larger.begin() + static_cast<std::ptrdiff_t>(expected.size())),
            expected);
  EXPECT_CONTAINS(error_of(ErrorCode::kInvalidArgument,
                           [&] { serialize_model(model, MutableByteSpan(wrong_size)); }),
                  "does not fit in an output span of " + std::to_string(wrong_size.size()));
  const GraphProto& graph = *model.graph;
  Bytes graph_out(serialized_size(graph));
  EXPECT_EQ(serialize_message(graph, MutableByteSpan(graph_out)), graph_out.size());
  EXPECT_EQ(graph_out, serialize_message(graph));
}

// serialize_model writes back to front in chunks with large payloads kept aside; the streamed
// path writes front to back from a size table. Both must give the same bytes across chunk
// boundaries, payload holes and strings larger than a chunk.
TEST(OnnxCodec, SinglePassAndSizedWritersAgreeAcrossChunksAndLargePayloads) {
  ModelProto model = every_field_model();
  GraphProto& graph = *model.graph;
  for (int i = 0; i < 3000; ++i) {
    NodeProto& node = graph.node.emplace_back();
    node.op_type = "Op" + std::to_string(i);
    node.input = {std::string(static_cast<std::size_t>(i % 300), 'i')};
    if (i % 500 == 0) {
      AttributeProto& attribute = node.attribute.emplace_back();
      attribute.name = "value";
      attribute.t.emplace().raw_data = TensorBytes::copy_of(Bytes(5000 + i, 0x42));
      attribute.t->float_data.assign(2000 + i, 0.25f);  // A packed block over 4 KiB.
    }
  }
  graph.doc_string = std::string(3 << 20, 'd');  // Larger than any chunk.
  const Bytes single_pass = serialize_model(model);
  Bytes sized;
  wire::VectorSink sink(sized);
  serialize_model(model, sink);
  EXPECT_EQ(single_pass, sized);
  EXPECT_EQ(serialized_size(model), single_pass.size());
  EXPECT_EQ(parse_model(single_pass), model);
  const TensorProto& tensor = *graph.node[1001].attribute.at(0).t;  // Node 1000 (after node 0).
  EXPECT_EQ(serialize_message(tensor),
            serialize_message(parse_message<TensorProto>(serialize_message(tensor))));
}

SerializeOptions sized_only() {
  SerializeOptions options;
  options.max_buffered_structure_bytes = 0;  // Never snapshot: size, then write front to back.
  return options;
}

TEST(OnnxCodec, AChangeBetweenSizingAndWritingIsDetected) {
  ModelProto model = every_field_model();
  const MessageSerializer<ModelProto> serializer(model, sized_only());
  model.graph->node[0].op_type = "AMuchLongerOperatorName";
  ChunkRecorder sink;
  EXPECT_CONTAINS(error_of(ErrorCode::kBadState, [&] { serializer.write(sink); }),
                  "changed between sizing and writing");
}

// SerializeOptions::substitutions: every writer writes the substitute in place of the tensor
// (nested at any depth, or the message itself) and leaves the model alone.
TEST(OnnxCodec, SubstitutedTensorsAreWrittenInPlaceOfTheOriginals) {
  ModelProto model = every_field_model();
  GraphProto& graph = *model.graph;
  TensorProto& initializer = graph.initializer.emplace_back();
  initializer.name = "big";
  initializer.raw_data = TensorBytes::copy_of(Bytes(10000, 0x11));
  AttributeProto& attribute = graph.node[0].attribute.emplace_back();
  attribute.name = "value";
  attribute.t.emplace().float_data = {1.0f, 2.0f};
  const ModelProto before = model;

  TensorSubstitutions substitutions;
  TensorProto reference;
  reference.name = "big";
  reference.data_location = TensorProto::kExternal;
  substitutions.emplace(&initializer, reference);
  TensorProto replaced_attribute;
  replaced_attribute.int64_data = {7};
  substitutions.emplace(&*attribute.t, replaced_attribute);
  ModelProto expected_model = model;
  expected_model.graph->initializer.back() = reference;
  *expected_model.graph->node[0].attribute.back().t = replaced_attribute;
  const Bytes expected = serialize_model(expected_model);

  SerializeOptions options;
  options.substitutions = &substitutions;
  EXPECT_EQ(serialize_model(model, options), expected);
  EXPECT_EQ(to_bytes(serialize_model_to_owned_bytes(model, options).span()), expected);
  Bytes direct(expected.size());
  EXPECT_EQ(serialize_model(model, MutableByteSpan(direct), options), expected.size());
  EXPECT_EQ(direct, expected);
  const MessageSerializer<ModelProto> serializer(model, options);
  EXPECT_EQ(serializer.size(), expected.size());
  Bytes streamed;
  wire::VectorSink sink(streamed);
  serializer.write(sink);
  EXPECT_EQ(streamed, expected);
  // The sized two-pass strategy too (no structure budget).
  options.max_buffered_structure_bytes = 0;
  const MessageSerializer<ModelProto> sized(model, options);
  Bytes sized_out(static_cast<std::size_t>(sized.size()));
  sized.write(MutableByteSpan(sized_out));
  EXPECT_EQ(sized_out, expected);
  EXPECT_EQ(model, before);
  // The message itself may be a substituted tensor.
  EXPECT_EQ(serialize_message(initializer, options), serialize_message(reference));
}

// A serializer whose structure fits the budget keeps a snapshot of it and reads only the large
// payloads from the message when writing: a payload replaced meanwhile is detected.
TEST(OnnxCodec, ASnapshotDetectsAReplacedPayload) {
  ModelProto model = every_field_model();
  model.graph->initializer[0].raw_data = TensorBytes::copy_of(Bytes(10000, 0x21));
  const Bytes expected = serialize_model(model);
  const MessageSerializer<ModelProto> serializer(model);
  ChunkRecorder before;
  serializer.write(before);
  EXPECT_EQ(before.out, expected);

  model.graph->initializer[0].raw_data = TensorBytes::copy_of(Bytes(10000, 0x22));
  ChunkRecorder sink;
  EXPECT_CONTAINS(error_of(ErrorCode::kBadState, [&] { serializer.write(sink); }),
                  "changed between sizing and writing");
  Bytes out(static_cast<std::size_t>(serializer.size()));
  EXPECT_CONTAINS(error_of(ErrorCode::kBadState, [&] { serializer.write(MutableByteSpan(out)); }),
                  "changed between sizing and writing");
}

// Both strategies of the streamed writers (one-pass snapshot within the structure budget, sizing
// pass beyond it) give the same bytes, for every budget from none to ample.
TEST(OnnxCodec, StreamedOutputIsTheSameWithAndWithoutTheStructureBudget) {
  ModelProto model = every_field_model();
  model.graph->initializer[0].raw_data = TensorBytes::copy_of(Bytes(300000, 0x5c));
  model.graph->initializer[0].float_data.assign(5000, 0.5f);  // A packed block over 4 KiB.
  for (int i = 0; i < 2000; ++i) model.graph->node.push_back(model.graph->node[0]);
  const Bytes expected = serialize_model(model);
  for (const std::uint64_t budget : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{16384},
                                     std::uint64_t{1} << 20, std::uint64_t{1} << 30}) {
    SCOPED_TRACE(budget);
    SerializeOptions options;
    options.max_buffered_structure_bytes = budget;
    ChunkRecorder sink;
    serialize_model(model, sink, options);
    EXPECT_EQ(sink.out, expected);
    const MessageSerializer<ModelProto> serializer(model, options);
    EXPECT_EQ(serializer.size(), expected.size());
    Bytes out(expected.size());
    serializer.write(MutableByteSpan(out));
    EXPECT_EQ(out, expected);
  }
}

// An anonymous private mapping: untouched pages are the shared zero page, so gigabytes cost no
// memory.
class ZeroMapping final {
 public:
  explicit ZeroMapping(std::size_t size) : size_(size) {
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    data_ = p == MAP_FAILED ? nullptr : static_cast<std::uint8_t*>(p);
  }
  ~ZeroMapping() {
    if (data_ != nullptr) ::munmap(data_, size_);
  }
  ZeroMapping(const ZeroMapping&) = delete;
  ZeroMapping& operator=(const ZeroMapping&) = delete;
  std::uint8_t* data() const { return data_; }

 private:
  std::size_t size_;
  std::uint8_t* data_;
};

// Checks streamed output against the input without reading gigabytes: a piece handed over at
// its original address is the original byte range itself.
class CompareSink final : public wire::ByteSink {
 public:
  explicit CompareSink(ByteSpan expected) : expected_(expected) {}
  void write(ByteSpan bytes) override {
    ASSERT_LE(position + bytes.size(), expected_.size());
    const std::uint8_t* const same_place = expected_.data() + position;
    if (bytes.data() != same_place) {
      ASSERT_EQ(std::memcmp(bytes.data(), same_place, bytes.size()), 0) << position;
    } else {
      ++zero_copy_pieces;
    }
    position += bytes.size();
  }
  std::uint64_t position = 0;
  int zero_copy_pieces = 0;

 private:
  ByteSpan expected_;
};

TEST(OnnxCodec, AModelOver2GBWithInlineWeightsParsesAndSerializes) {
  const std::uint64_t payload_size = (std::uint64_t{5} << 29) + 3;  // 2.5 GiB + 3.
  Pb tensor_header;
  tensor_header.str(8, "huge").tag(9, WireType::kLengthDelimited).varint_raw(payload_size);
  const std::uint64_t tensor_size = tensor_header.size() + payload_size;
  Pb graph_header;
  graph_header.tag(5, WireType::kLengthDelimited).varint_raw(tensor_size);
  const std::uint64_t graph_size = graph_header.size() + tensor_size;
  Pb header;
  header.varint(1, 10).tag(7, WireType::kLengthDelimited).varint_raw(graph_size);
  header.raw(graph_header.bytes()).raw(tensor_header.bytes());
  const std::uint64_t total = header.size() + payload_size;

  ZeroMapping mapping(static_cast<std::size_t>(total));
  if (mapping.data() == nullptr) GTEST_SKIP() << "cannot reserve address space";
  std::memcpy(mapping.data(), header.bytes().data(), header.size());
  const ByteSpan input(mapping.data(), static_cast<std::size_t>(total));

  ParseOptions options;
  options.no_copy = true;
  const ModelProto model = parse_model(input, options);
  const TensorBytes& data = *model.graph->initializer.at(0).raw_data;
  EXPECT_EQ(data.size(), payload_size);
  EXPECT_EQ(data.data(), mapping.data() + header.size());

  EXPECT_EQ(serialized_size(model), total);
  CompareSink sink(input);
  serialize_model(model, sink);
  EXPECT_EQ(sink.position, total);
  EXPECT_EQ(sink.zero_copy_pieces, 1);
}

// Every data type, as raw_data and in its typed field: the wire form parses back to the same
// tensor and the same bytes, and the typed field holds what raw_data held.
TEST(OnnxCodec, EveryDataTypeRoundTripsAsRawDataAndTypedData) {
  for (std::int32_t type = 1; type <= TensorProto::kLastDataType; ++type) {
    SCOPED_TRACE(std::string(data_type_name(type)));
    TensorProto raw;
    raw.name = "t";
    raw.dims = {3, 5};  // An odd count: sub-byte types end in a partly filled byte.
    raw.data_type = type;
    TensorProto typed = raw;
    if (type == TensorProto::kString) {
      raw.raw_data = TensorBytes::copy_of(Bytes{});  // Not meaningful for STRING, but legal.
      typed.string_data = {"", "a", std::string(300, 'z'), std::string("\0\xff", 2)};
    } else {
      Bytes payload(static_cast<std::size_t>(tensor_byte_size(raw)));
      // Every bit pattern class: negative signed values, NaNs, the top bit of 64-bit values.
      for (std::size_t i = 0; i < payload.size(); ++i) {
        payload[i] = static_cast<std::uint8_t>(0xf7 - i * 37 - static_cast<std::size_t>(type));
      }
      raw.raw_data = TensorBytes::copy_of(payload);
      set_typed_data_from_raw(payload, typed);
      EXPECT_EQ(to_bytes(typed_data_to_raw(typed).span()), payload);
    }
    for (const TensorProto* tensor : {&raw, &typed}) {
      const Bytes bytes = serialize_message(*tensor);
      const TensorProto parsed = parse_message<TensorProto>(bytes);
      EXPECT_EQ(parsed, *tensor);
      EXPECT_EQ(serialize_message(parsed), bytes);
      EXPECT_EQ(serialized_size(*tensor), bytes.size());
      ModelProto model;
      model.graph.emplace().initializer = {*tensor};
      EXPECT_EQ(parse_model(serialize_model(model)), model);
    }
    if (type != TensorProto::kString) {
      const TensorProto parsed = parse_message<TensorProto>(serialize_message(typed));
      EXPECT_EQ(to_bytes(typed_data_to_raw(parsed).span()), to_bytes(raw.raw_data->view()));
    }
  }
}

// A model over 2 GB with inline weights (one payload alone over 2 GiB, past any 32-bit length),
// written to disk by serialize_model_to_file and parsed back from the path, borrowing and
// copying. The payload borrows from an anonymous mapping, so only the pages marked cost memory.
TEST(OnnxCodecSlow, AModelOver2GBOnDiskRoundTripsThroughItsPath) {
  const std::uint64_t huge_size = (std::uint64_t{2} << 30) + 17;
  ZeroMapping mapping(static_cast<std::size_t>(huge_size));
  if (mapping.data() == nullptr) GTEST_SKIP() << "cannot reserve address space";
  // Markers at both ends and across the 2 GiB line catch a payload read from the wrong place.
  for (const std::uint64_t at :
       {std::uint64_t{0}, (std::uint64_t{1} << 31) - 100, huge_size - 300}) {
    for (std::uint64_t i = 0; i < 200; ++i)
      mapping.data()[at + i] = static_cast<std::uint8_t>(i + 1);
  }

  ModelProto model;
  model.ir_version = kIrVersion;
  GraphProto& graph = model.graph.emplace();
  graph.name = "over_2gb";
  TensorProto& before = graph.initializer.emplace_back();
  before.name = "before";
  before.data_type = TensorProto::kFloat;
  before.dims = {3};
  before.float_data = {1.0f, -2.5f, 3.25f};
  TensorProto& huge = graph.initializer.emplace_back();
  huge.name = "huge";
  huge.data_type = TensorProto::kUint8;
  huge.dims = {static_cast<std::int64_t>(huge_size)};
  huge.raw_data = TensorBytes::borrowed(
      ByteSpan(mapping.data(), static_cast<std::size_t>(huge_size)), kNoOwner);
  TensorProto& after = graph.initializer.emplace_back();
  after.name = "after";
  after.data_type = TensorProto::kUint8;
  after.dims = {5000};
  Bytes after_bytes(5000);
  for (std::size_t i = 0; i < after_bytes.size(); ++i)
    after_bytes[i] = static_cast<std::uint8_t>(i * 7);
  after.raw_data = TensorBytes::copy_of(after_bytes);
  graph.node.emplace_back().op_type = "Identity";

  const test_support::ScratchDir scratch("over_2gb");
  const auto path = scratch / "model.onnx";
  serialize_model_to_file(model, path);
  const std::uint64_t size = serialized_size(model);
  EXPECT_GT(size, std::uint64_t{1} << 31);
  EXPECT_EQ(std::filesystem::file_size(path), size);
  {
    ParseOptions no_copy;
    no_copy.no_copy = true;
    const ModelProto mapped = parse_model_file(path, no_copy);
    const TensorBytes& data = *mapped.graph->initializer.at(1).raw_data;
    EXPECT_TRUE(data.is_borrowed());
    EXPECT_NE(data.owner(), nullptr);
    EXPECT_EQ(data.size(), huge_size);
    EXPECT_TRUE(mapped == model);  // Compares all 2 GiB.
  }
  {
    const ModelProto copied = parse_model_file(path);
    EXPECT_TRUE(copied.graph->initializer.at(1).raw_data->is_owned());
    EXPECT_EQ(to_bytes(copied.graph->initializer.at(2).raw_data->view()), after_bytes);
    EXPECT_TRUE(copied == model);
  }
  std::filesystem::remove(path);
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace onnxzip
