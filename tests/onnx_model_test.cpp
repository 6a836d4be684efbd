#include "onnxzip/onnx_model.h"

#include <gtest/gtest.h>

#include <string>
#include <type_traits>
#include <utility>

#include "onnxzip/error.h"

namespace onnxzip {
namespace {

static_assert(OnnxMessage<ModelProto>);
static_assert(OnnxMessage<TensorProto::Segment>);
static_assert(OnnxMessage<TypeProto::Opaque>);
static_assert(OnnxMessage<NodeDeviceConfigurationProto>);
static_assert(!OnnxMessage<std::string>);
static_assert(!OnnxMessage<Box<GraphProto>>);
// The member types follow from the field kinds.
static_assert(std::is_same_v<decltype(TensorProto::raw_data), std::optional<TensorBytes>>);
static_assert(std::is_same_v<decltype(TensorProto::dims), std::vector<std::int64_t>>);
static_assert(std::is_same_v<decltype(AttributeProto::g), Box<GraphProto>>);
static_assert(std::is_same_v<decltype(ModelProto::ir_version), std::optional<std::int64_t>>);
static_assert(std::is_same_v<decltype(NodeProto::name), std::optional<Text>>);
static_assert(std::is_same_v<decltype(NodeProto::input), std::vector<Text>>);
static_assert(std::is_same_v<decltype(ValueInfoProto::type), Inline<TypeProto>>);
static_assert(std::is_same_v<decltype(TypeProto::Sequence::elem_type), Box<TypeProto>>);

TEST(Box, IsAnOptionalSubMessageThatCopiesDeeply) {
  Box<GraphProto> a;
  EXPECT_FALSE(a.has_value());
  EXPECT_FALSE(a);
  EXPECT_EQ(a.get(), nullptr);
  GraphProto& graph = a.ensure();
  graph.name = "g";
  EXPECT_EQ(&a.ensure(), &graph);  // ensure() keeps an existing message.
  Box<GraphProto> b = a;
  ASSERT_TRUE(b.has_value());
  EXPECT_NE(b.get(), a.get());
  EXPECT_EQ(b, a);
  b->name = "h";
  EXPECT_NE(b, a);
  EXPECT_EQ(a->name, "g");

  b.emplace();  // Present and empty: differs from absent and from a named graph.
  EXPECT_TRUE(b.has_value());
  EXPECT_FALSE(b->name.has_value());
  EXPECT_NE(b, Box<GraphProto>());
  b.reset();
  EXPECT_EQ(b, Box<GraphProto>());

  Box<GraphProto> moved = std::move(a);
  EXPECT_EQ(moved->name, "g");
  GraphProto other;
  other.name = "o";
  moved = other;
  EXPECT_EQ(moved->name, "o");
  EXPECT_EQ(Box<GraphProto>(other), moved);
}

TEST(Inline, HasBoxsInterfaceAndStoresTheMessageInPlace) {
  Inline<TypeProto> a;
  EXPECT_FALSE(a.has_value());
  EXPECT_EQ(a.get(), nullptr);
  TypeProto& type = a.ensure();
  EXPECT_EQ(static_cast<const void*>(&type), static_cast<const void*>(a.get()));
  EXPECT_GE(reinterpret_cast<const char*>(&type), reinterpret_cast<const char*>(&a));
  EXPECT_LT(reinterpret_cast<const char*>(&type), reinterpret_cast<const char*>(&a + 1));
  type.tensor_type.ensure().elem_type = TensorProto::kFloat;
  EXPECT_EQ(&a.ensure(), &type);
  Inline<TypeProto> b = a;
  EXPECT_EQ(b, a);
  b->tensor_type->elem_type = TensorProto::kInt64;
  EXPECT_NE(b, a);
  b.emplace();  // Present and empty differs from absent.
  EXPECT_TRUE(b.has_value());
  EXPECT_NE(b, Inline<TypeProto>());
  b.reset();
  EXPECT_EQ(b, Inline<TypeProto>());
  EXPECT_THROW((void)b.value(), Error);
  b = *a;
  EXPECT_EQ(b.value(), *a);
}

TEST(Box, ValueOfAnAbsentMessageIsABadState) {
  const Box<TensorProto> empty;
  EXPECT_THROW(
      {
        try {
          (void)empty.value();
        } catch (const Error& e) {
          EXPECT_EQ(e.code(), ErrorCode::kBadState);
          throw;
        }
      },
      Error);
}

TEST(MessageEquality, ComparesPresenceUnknownFieldsAndNestedMessages) {
  NodeProto a;
  a.op_type = "Add";
  a.attribute.emplace_back().name = "x";
  NodeProto b = a;
  EXPECT_EQ(a, b);
  b.attribute[0].g.emplace();
  EXPECT_NE(a, b);
  b = a;
  b.unknown_fields.append(std::vector<std::uint8_t>{0xf8, 0x06, 0x01});
  EXPECT_NE(a, b);
  b = a;
  b.domain = "";
  EXPECT_NE(a, b);
  TensorShapeProto::Dimension d1, d2;
  d1.dim_value = 0;
  EXPECT_NE(d1, d2);
  d2.dim_value = 0;
  EXPECT_EQ(d1, d2);
}

}  // namespace
}  // namespace onnxzip
