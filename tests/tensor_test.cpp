#include "onnxzip/tensor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "onnxzip/error.h"
#include "onnxzip/onnx_model.h"
#include "support/expect_contains.h"

namespace onnxzip {
namespace {

using Bytes = std::vector<std::uint8_t>;

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

TEST(ElementSize, EveryDataType) {
  struct Case {
    std::int32_t type;
    std::uint32_t bits;
    std::string_view name;
    TypedField field;
  };
  const std::vector<Case> cases = {
      {TensorProto::kUndefined, 0, "UNDEFINED", TypedField::kNone},
      {TensorProto::kFloat, 32, "FLOAT", TypedField::kFloatData},
      {TensorProto::kUint8, 8, "UINT8", TypedField::kInt32Data},
      {TensorProto::kInt8, 8, "INT8", TypedField::kInt32Data},
      {TensorProto::kUint16, 16, "UINT16", TypedField::kInt32Data},
      {TensorProto::kInt16, 16, "INT16", TypedField::kInt32Data},
      {TensorProto::kInt32, 32, "INT32", TypedField::kInt32Data},
      {TensorProto::kInt64, 64, "INT64", TypedField::kInt64Data},
      {TensorProto::kString, 0, "STRING", TypedField::kStringData},
      {TensorProto::kBool, 8, "BOOL", TypedField::kInt32Data},
      {TensorProto::kFloat16, 16, "FLOAT16", TypedField::kInt32Data},
      {TensorProto::kDouble, 64, "DOUBLE", TypedField::kDoubleData},
      {TensorProto::kUint32, 32, "UINT32", TypedField::kUint64Data},
      {TensorProto::kUint64, 64, "UINT64", TypedField::kUint64Data},
      {TensorProto::kComplex64, 64, "COMPLEX64", TypedField::kFloatData},
      {TensorProto::kComplex128, 128, "COMPLEX128", TypedField::kDoubleData},
      {TensorProto::kBfloat16, 16, "BFLOAT16", TypedField::kInt32Data},
      {TensorProto::kFloat8e4m3fn, 8, "FLOAT8E4M3FN", TypedField::kInt32Data},
      {TensorProto::kFloat8e4m3fnuz, 8, "FLOAT8E4M3FNUZ", TypedField::kInt32Data},
      {TensorProto::kFloat8e5m2, 8, "FLOAT8E5M2", TypedField::kInt32Data},
      {TensorProto::kFloat8e5m2fnuz, 8, "FLOAT8E5M2FNUZ", TypedField::kInt32Data},
      {TensorProto::kUint4, 4, "UINT4", TypedField::kInt32Data},
      {TensorProto::kInt4, 4, "INT4", TypedField::kInt32Data},
      {TensorProto::kFloat4e2m1, 4, "FLOAT4E2M1", TypedField::kInt32Data},
      {TensorProto::kFloat8e8m0, 8, "FLOAT8E8M0", TypedField::kInt32Data},
      {TensorProto::kUint2, 2, "UINT2", TypedField::kInt32Data},
      {TensorProto::kInt2, 2, "INT2", TypedField::kInt32Data},
      {27, 0, "", TypedField::kNone},
      {-1, 0, "", TypedField::kNone},
  };
  ASSERT_EQ(cases.size(), static_cast<std::size_t>(TensorProto::kLastDataType) + 3);
  for (const Case& c : cases) {
    EXPECT_EQ(element_bits(c.type), c.bits) << c.type;
    EXPECT_EQ(data_type_name(c.type), c.name) << c.type;
    EXPECT_EQ(typed_field_for(c.type), c.field) << c.type;
    EXPECT_EQ(is_sub_byte_type(c.type), c.bits != 0 && c.bits < 8) << c.type;
  }
}

TEST(TensorByteSize, FromDimsWithSubByteTypesPacked) {
  struct Case {
    std::vector<std::int64_t> dims;
    std::int32_t type;
    std::uint64_t bytes;
  };
  const std::vector<Case> cases = {
      {{}, TensorProto::kFloat, 4},  // A scalar.
      {{2, 3}, TensorProto::kFloat, 24},
      {{0, 5}, TensorProto::kDouble, 0},
      {{7}, TensorProto::kBool, 7},
      {{2}, TensorProto::kComplex128, 32},
      {{3}, TensorProto::kInt4, 2},
      {{4}, TensorProto::kUint4, 2},
      {{1}, TensorProto::kFloat4e2m1, 1},
      {{4}, TensorProto::kInt2, 1},
      {{5}, TensorProto::kUint2, 2},
      {{3, 3}, TensorProto::kFloat16, 18},
      {{std::int64_t{1} << 62}, TensorProto::kInt2, std::uint64_t{1} << 60},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(tensor_byte_size(c.dims, c.type), c.bytes) << data_type_name(c.type);
    EXPECT_EQ(try_tensor_byte_size(c.dims, c.type), c.bytes) << data_type_name(c.type);
  }
  // count * bits would overflow here, the byte size does not.
  EXPECT_EQ(tensor_byte_size(std::uint64_t{1} << 63, TensorProto::kInt4), std::uint64_t{1} << 62);
  EXPECT_EQ(try_tensor_byte_size(std::uint64_t{1} << 63, TensorProto::kInt4),
            std::uint64_t{1} << 62);
  EXPECT_EQ(tensor_byte_size(std::numeric_limits<std::uint64_t>::max(), TensorProto::kUint8),
            std::numeric_limits<std::uint64_t>::max());
}

TEST(TensorByteSize, TryFormsGiveNoSizeWhereTheThrowingOnesFail) {
  const std::vector<std::int64_t> huge = {std::int64_t{1} << 62, 8};
  EXPECT_EQ(try_element_count(huge), std::nullopt);
  EXPECT_EQ(try_tensor_byte_size(huge, TensorProto::kUint8), std::nullopt);
  const std::vector<std::int64_t> large = {std::int64_t{1} << 62};
  EXPECT_EQ(try_element_count(large), std::uint64_t{1} << 62);
  EXPECT_EQ(try_tensor_byte_size(large, TensorProto::kFloat), std::nullopt);
  const std::vector<std::int64_t> negative = {3, -1};
  EXPECT_EQ(try_element_count(negative), std::nullopt);
  // A zero dimension makes the count 0 whatever follows, as element_count says.
  const std::vector<std::int64_t> empty = {0, std::int64_t{1} << 62, 8};
  EXPECT_EQ(try_element_count(empty), element_count(empty));
  TensorProto strings;
  strings.data_type = TensorProto::kString;
  EXPECT_EQ(try_tensor_byte_size(strings), std::nullopt);
  TensorProto unknown;
  unknown.data_type = 99;
  EXPECT_EQ(try_tensor_byte_size(unknown), std::nullopt);
  TensorProto floats;
  floats.data_type = TensorProto::kFloat;
  floats.dims = {2, 3};
  EXPECT_EQ(try_tensor_byte_size(floats), tensor_byte_size(floats));
}

TEST(TensorByteSize, RejectsOverflowNegativeDimsAndTypesWithoutASize) {
  const std::vector<std::int64_t> huge = {std::int64_t{1} << 62, 8};
  EXPECT_CONTAINS(error_of(ErrorCode::kCorrupt,
                           [&] { tensor_byte_size(huge, TensorProto::kUint8, "tensor 'w'"); }),
                  "tensor 'w': element count");
  const std::vector<std::int64_t> large = {std::int64_t{1} << 62};
  EXPECT_CONTAINS(error_of(ErrorCode::kCorrupt,
                           [&] { tensor_byte_size(large, TensorProto::kFloat, "tensor 'w'"); }),
                  "overflows 64 bits");
  const std::vector<std::int64_t> negative = {3, -1};
  EXPECT_CONTAINS(error_of(ErrorCode::kCorrupt,
                           [&] { tensor_byte_size(negative, TensorProto::kFloat, "tensor 'w'"); }),
                  "tensor 'w': dimension -1 is negative");
  TensorProto strings;
  strings.name = "s";
  strings.data_type = TensorProto::kString;
  EXPECT_CONTAINS(error_of(ErrorCode::kUnsupported, [&] { tensor_byte_size(strings); }),
                  "tensor 's': data type 8 (STRING) has no fixed element size");
  TensorProto unknown;
  unknown.data_type = 99;
  EXPECT_CONTAINS(error_of(ErrorCode::kUnsupported, [&] { tensor_byte_size(unknown); }),
                  "data type 99 has no fixed element size");
}

TensorProto payload_tensor(std::int32_t type, std::vector<std::int64_t> dims) {
  TensorProto t;
  t.name = "t";
  t.data_type = type;
  t.dims = std::move(dims);
  return t;
}

TEST(PayloadProblem, ConsistentPayloadsOfEveryFormHaveNone) {
  std::vector<TensorProto> fine;
  TensorProto raw = payload_tensor(TensorProto::kFloat, {2, 3});
  raw.raw_data = TensorBytes::owned(OwnedBytes(24));
  fine.push_back(raw);
  TensorProto typed = payload_tensor(TensorProto::kFloat, {2, 3});
  typed.float_data.assign(6, 1.0f);
  fine.push_back(typed);
  TensorProto complex = payload_tensor(TensorProto::kComplex64, {3});
  complex.float_data.assign(6, 1.0f);  // Real and imaginary parts.
  fine.push_back(complex);
  TensorProto int4 = payload_tensor(TensorProto::kInt4, {5});
  int4.int32_data.assign(3, 0x21);  // One packed byte per entry.
  fine.push_back(int4);
  TensorProto uint32 = payload_tensor(TensorProto::kUint32, {2});
  uint32.uint64_data = {1, 2};
  fine.push_back(uint32);
  TensorProto scalar = payload_tensor(TensorProto::kInt64, {});
  scalar.int64_data = {7};
  fine.push_back(scalar);
  fine.push_back(payload_tensor(TensorProto::kFloat, {0, 4}));  // No elements, no data.
  TensorProto strings = payload_tensor(TensorProto::kString, {2});
  strings.string_data = {Text("a"), Text("")};
  fine.push_back(strings);
  // Nothing to check the data against: unknown and UNDEFINED types.
  TensorProto unknown = payload_tensor(99, {4});
  unknown.raw_data = TensorBytes::owned(OwnedBytes(3));
  fine.push_back(unknown);
  // External data is the external-data readers' concern.
  TensorProto external = payload_tensor(TensorProto::kFloat, {1000});
  external.data_location = TensorProto::kExternal;
  fine.push_back(external);
  for (const TensorProto& t : fine) {
    EXPECT_EQ(payload_problem(t), "") << data_type_name(*t.data_type);
  }
}

TEST(PayloadProblem, EachInconsistencyIsNamed) {
  struct Case {
    std::string what;
    TensorProto tensor;
    std::string problem;
  };
  std::vector<Case> cases;
  {
    TensorProto t = payload_tensor(TensorProto::kFloat, {4, 300});
    t.raw_data = TensorBytes::owned(OwnedBytes(100));
    cases.push_back({"short raw_data", t,
                     "raw_data holds 100 bytes, but dims [4, 300] of FLOAT make 4800 bytes"});
    t.raw_data = TensorBytes::owned(OwnedBytes(4801));
    cases.push_back({"long raw_data", t,
                     "raw_data holds 4801 bytes, but dims [4, 300] of FLOAT make 4800 bytes"});
  }
  {
    TensorProto t = payload_tensor(TensorProto::kFloat, {2, 3});
    t.float_data.assign(5, 0.0f);
    cases.push_back(
        {"short typed field", t, "float_data holds 5 entries, but dims [2, 3] of FLOAT need 6"});
    t.raw_data = TensorBytes::owned(OwnedBytes(24));
    cases.push_back(
        {"raw and typed", t, "carries both raw_data and float_data; which one is the payload?"});
  }
  {
    TensorProto t = payload_tensor(TensorProto::kFloat, {1});
    t.float_data = {1.0f};
    t.int32_data = {1};
    cases.push_back({"two typed fields", t,
                     "carries both float_data and int32_data; which one is the payload?"});
  }
  {
    TensorProto t = payload_tensor(TensorProto::kFloat, {2});
    t.int32_data = {1, 2};
    cases.push_back({"another type's field", t,
                     "holds its values in int32_data, but FLOAT values belong in float_data"});
  }
  {
    TensorProto t = payload_tensor(TensorProto::kComplex128, {2});
    t.double_data.assign(2, 0.0);
    cases.push_back({"complex counts two entries per element", t,
                     "double_data holds 2 entries, but dims [2] of COMPLEX128 need 4"});
  }
  {
    TensorProto t = payload_tensor(TensorProto::kUint2, {5});
    t.int32_data = {1};
    cases.push_back(
        {"packed sub-byte entries", t, "int32_data holds 1 entry, but dims [5] of UINT2 need 2"});
  }
  cases.push_back({"no data at all", payload_tensor(TensorProto::kInt64, {3}),
                   "holds no data, but dims [3] of INT64 make 24 bytes"});
  {
    TensorProto t = payload_tensor(TensorProto::kFloat, {3, -1});
    t.raw_data = TensorBytes::owned(OwnedBytes(0));
    cases.push_back({"negative dimension", t, "dims[1] is -1: a dimension cannot be negative"});
    t.data_type = 99;  // Checked whatever the type.
    cases.push_back(
        {"negative dimension, unknown type", t, "dims[1] is -1: a dimension cannot be negative"});
  }
  {
    TensorProto t = payload_tensor(TensorProto::kUint8, {std::int64_t{1} << 62, 8});
    cases.push_back({"element count overflow", t,
                     "dims [4611686018427387904, 8] of UINT8 make more elements than 64 bits can "
                     "count"});
    t.data_type = TensorProto::kDouble;
    t.dims = {std::int64_t{1} << 62};
    cases.push_back(
        {"byte size overflow", t,
         "dims [4611686018427387904] of DOUBLE make more bytes than 64 bits can count"});
  }
  {
    TensorProto t = payload_tensor(TensorProto::kString, {3});
    t.string_data = {Text("a"), Text("b")};
    cases.push_back(
        {"string count", t, "string_data holds 2 strings, but dims [3] of STRING make 3 elements"});
    t.string_data.clear();
    t.raw_data = TensorBytes::owned(OwnedBytes(3));
    cases.push_back({"strings in raw_data", t,
                     "STRING values cannot be in raw_data (onnx.proto: string_data)"});
  }
  {
    TensorProto t = payload_tensor(TensorProto::kFloat, {1, 2, 3, 4, 5, 6, 7, 8, 9});
    cases.push_back({"many dims are cut short", t,
                     "holds no data, but dims [1, 2, 3, 4, 5, 6, 7, 8, ...] of FLOAT make 1451520 "
                     "bytes"});
  }
  for (const Case& c : cases) EXPECT_EQ(payload_problem(c.tensor), c.problem) << c.what;
}

// One typed <-> raw case: a tensor with its typed field set, and the raw bytes it stands for.
struct ConversionCase {
  std::string label;
  TensorProto tensor;
  Bytes raw;
};

TensorProto typed(std::int32_t type) {
  TensorProto t;
  t.name = "t";
  t.data_type = type;
  return t;
}

// Packs 4-bit elements two per byte, the first in the low nibble.
Bytes pack4(const std::vector<int>& elements) {
  Bytes out((elements.size() + 1) / 2, 0);
  for (std::size_t i = 0; i < elements.size(); ++i) {
    out[i / 2] |= static_cast<std::uint8_t>((elements[i] & 0xf) << (4 * (i % 2)));
  }
  return out;
}

// Packs 2-bit elements four per byte, the first in the lowest bits.
Bytes pack2(const std::vector<int>& elements) {
  Bytes out((elements.size() + 3) / 4, 0);
  for (std::size_t i = 0; i < elements.size(); ++i) {
    out[i / 4] |= static_cast<std::uint8_t>((elements[i] & 0x3) << (2 * (i % 4)));
  }
  return out;
}

std::vector<ConversionCase> conversion_cases() {
  std::vector<ConversionCase> cases;
  auto add = [&](std::string label, TensorProto t, Bytes raw) {
    cases.push_back({std::move(label), std::move(t), std::move(raw)});
  };
  TensorProto t = typed(TensorProto::kFloat);
  t.float_data = {1.0f, -2.5f};
  add("FLOAT", t, {0, 0, 0x80, 0x3f, 0, 0, 0x20, 0xc0});
  t = typed(TensorProto::kComplex64);
  t.float_data = {1.0f, 0.0f};
  add("COMPLEX64", t, {0, 0, 0x80, 0x3f, 0, 0, 0, 0});
  t = typed(TensorProto::kDouble);
  t.double_data = {1.0, -0.0};
  add("DOUBLE", t, {0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0, 0, 0, 0, 0, 0, 0, 0x80});
  t = typed(TensorProto::kComplex128);
  t.double_data = {2.0, 0.5};
  add("COMPLEX128", t, {0, 0, 0, 0, 0, 0, 0, 0x40, 0, 0, 0, 0, 0, 0, 0xe0, 0x3f});
  t = typed(TensorProto::kInt32);
  t.int32_data = {-1, 0x01020304};
  add("INT32", t, {0xff, 0xff, 0xff, 0xff, 4, 3, 2, 1});
  t = typed(TensorProto::kInt16);
  t.int32_data = {-2, 0x1234};
  add("INT16", t, {0xfe, 0xff, 0x34, 0x12});
  t = typed(TensorProto::kUint16);
  t.int32_data = {0xfffe};
  add("UINT16", t, {0xfe, 0xff});
  t = typed(TensorProto::kFloat16);
  t.int32_data = {0x3c00, 0xfbff};  // 1.0 and -65504 as bit patterns, zero-extended.
  add("FLOAT16", t, {0x00, 0x3c, 0xff, 0xfb});
  t = typed(TensorProto::kBfloat16);
  t.int32_data = {0x3f80, 0xc000};
  add("BFLOAT16", t, {0x80, 0x3f, 0x00, 0xc0});
  t = typed(TensorProto::kInt8);
  t.int32_data = {-1, 5, -128};
  add("INT8", t, {0xff, 0x05, 0x80});
  t = typed(TensorProto::kUint8);
  t.int32_data = {255, 0};
  add("UINT8", t, {0xff, 0x00});
  t = typed(TensorProto::kBool);
  t.int32_data = {1, 0, 1};
  add("BOOL", t, {1, 0, 1});
  for (const std::int32_t type :
       {TensorProto::kFloat8e4m3fn, TensorProto::kFloat8e4m3fnuz, TensorProto::kFloat8e5m2,
        TensorProto::kFloat8e5m2fnuz, TensorProto::kFloat8e8m0}) {
    t = typed(type);
    t.int32_data = {0x7e, 0x80};
    add(std::string(data_type_name(type)), t, {0x7e, 0x80});
  }
  // Sub-byte types: int32_data holds the packed bytes, one per entry.
  t = typed(TensorProto::kInt4);
  t.dims = {3};
  const Bytes int4 = pack4({1, -2, 3});
  EXPECT_EQ(int4, (Bytes{0xe1, 0x03}));
  t.int32_data = {0xe1, 0x03};
  add("INT4", t, int4);
  t = typed(TensorProto::kUint4);
  t.dims = {4};
  t.int32_data = {0x21, 0xf0};
  add("UINT4", t, pack4({1, 2, 0, 15}));
  t = typed(TensorProto::kFloat4e2m1);
  t.dims = {2};
  t.int32_data = {0x9a};
  add("FLOAT4E2M1", t, pack4({0xa, 0x9}));
  t = typed(TensorProto::kInt2);
  t.dims = {5};
  const Bytes int2 = pack2({1, -2, -1, 0, 1});
  EXPECT_EQ(int2, (Bytes{0x39, 0x01}));
  t.int32_data = {0x39, 0x01};
  add("INT2", t, int2);
  t = typed(TensorProto::kUint2);
  t.dims = {4};
  t.int32_data = {0xe4};
  add("UINT2", t, pack2({0, 1, 2, 3}));
  t = typed(TensorProto::kInt64);
  t.int64_data = {-1, 2};
  add("INT64", t, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 0, 0, 0});
  t = typed(TensorProto::kUint32);
  t.uint64_data = {0xdeadbeef, 1};
  add("UINT32", t, {0xef, 0xbe, 0xad, 0xde, 1, 0, 0, 0});
  t = typed(TensorProto::kUint64);
  t.uint64_data = {(std::uint64_t{1} << 63) + 1};
  add("UINT64", t, {1, 0, 0, 0, 0, 0, 0, 0x80});
  t = typed(TensorProto::kString);
  t.string_data = {"ab", "", std::string(200, 'z')};
  Bytes strings = {2, 'a', 'b', 0, 0xc8, 0x01};
  strings.insert(strings.end(), 200, 'z');
  add("STRING", t, strings);
  return cases;
}

TEST(TypedRawConversion, EveryTypeBothWays) {
  const auto cases = conversion_cases();
  std::set<std::int32_t> covered;
  for (const ConversionCase& c : cases) {
    SCOPED_TRACE(c.label);
    covered.insert(*c.tensor.data_type);
    EXPECT_EQ(to_bytes(typed_data_to_raw(c.tensor).span()), c.raw);

    TensorProto back = typed(*c.tensor.data_type);
    back.dims = c.tensor.dims;
    set_typed_data_from_raw(c.raw, back);
    EXPECT_EQ(back, c.tensor);

    TensorProto moved = c.tensor;
    move_typed_data_to_raw(moved);
    ASSERT_TRUE(moved.raw_data.has_value());
    EXPECT_EQ(to_bytes(moved.raw_data->view()), c.raw);
    EXPECT_TRUE(moved.float_data.empty() && moved.int32_data.empty() && moved.string_data.empty() &&
                moved.int64_data.empty() && moved.double_data.empty() && moved.uint64_data.empty());
    move_raw_data_to_typed(moved);
    EXPECT_FALSE(moved.raw_data.has_value());
    EXPECT_EQ(moved, c.tensor);
  }
  // Every data type but UNDEFINED has a case.
  EXPECT_EQ(covered.size(), static_cast<std::size_t>(TensorProto::kLastDataType));
}

TEST(TypedRawConversion, WideValuesAreTruncatedToTheElement) {
  TensorProto t = typed(TensorProto::kUint8);
  t.int32_data = {0x1ff};
  EXPECT_EQ(to_bytes(typed_data_to_raw(t).span()), (Bytes{0xff}));
  t = typed(TensorProto::kUint32);
  t.uint64_data = {0x100000002};
  EXPECT_EQ(to_bytes(typed_data_to_raw(t).span()), (Bytes{2, 0, 0, 0}));
}

TEST(TypedRawConversion, MovesAreNoOpsWhenThereIsNothingToMove) {
  TensorProto t = typed(TensorProto::kFloat);
  t.raw_data = TensorBytes::copy_of(Bytes{0, 0, 0x80, 0x3f});
  t.float_data = {2.0f};  // Contradictory input: raw_data wins, nothing is touched.
  const TensorProto before = t;
  move_typed_data_to_raw(t);
  EXPECT_EQ(t, before);
  TensorProto no_raw = typed(TensorProto::kFloat);
  no_raw.float_data = {2.0f};
  const TensorProto before_no_raw = no_raw;
  move_raw_data_to_typed(no_raw);
  EXPECT_EQ(no_raw, before_no_raw);
}

TEST(TypedRawConversion, RejectsPartialElementsAndUnknownTypes) {
  TensorProto half = typed(TensorProto::kFloat16);
  EXPECT_CONTAINS(error_of(ErrorCode::kCorrupt,
                           [&] {
                             set_typed_data_from_raw(Bytes{1, 2, 3}, half);
                           }),
                  "tensor 't': 3 bytes are not a whole number of 2-byte FLOAT16 values");
  TensorProto strings = typed(TensorProto::kString);
  EXPECT_CONTAINS(error_of(ErrorCode::kCorrupt,
                           [&] {
                             set_typed_data_from_raw(Bytes{5, 'a'}, strings);
                           }),
                  "tensor 't': offset 0: string element: length 5 exceeds the 1 bytes");
  TensorProto unknown = typed(99);
  EXPECT_CONTAINS(error_of(ErrorCode::kUnsupported, [&] { typed_data_to_raw(unknown); }),
                  "tensor 't': data type 99 has no typed field");
  TensorProto undefined;
  EXPECT_CONTAINS(error_of(ErrorCode::kUnsupported, [&] { typed_data_to_raw(undefined); }),
                  "unnamed tensor: data type 0 (UNDEFINED) has no typed field");
}

TEST(PresentTypedField, NamesTheFirstFilledFieldInOnnxProtoOrder) {
  TensorProto t = typed(TensorProto::kFloat);
  EXPECT_EQ(present_typed_field(t), "");
  t.raw_data = TensorBytes::owned(OwnedBytes(4));
  EXPECT_EQ(present_typed_field(t), "");  // raw_data is not a typed field.
  const auto fill_one = [](TensorProto& tensor, int field) {
    switch (field) {
      case 0:
        tensor.float_data = {1.0f};
        break;
      case 1:
        tensor.int32_data = {1};
        break;
      case 2:
        tensor.string_data = {Text("s")};
        break;
      case 3:
        tensor.int64_data = {1};
        break;
      case 4:
        tensor.double_data = {1.0};
        break;
      default:
        tensor.uint64_data = {1};
        break;
    }
  };
  const std::string_view names[] = {"float_data", "int32_data",  "string_data",
                                    "int64_data", "double_data", "uint64_data"};
  for (int field = 0; field < 6; ++field) {
    SCOPED_TRACE(names[field]);
    TensorProto only = typed(TensorProto::kFloat);
    fill_one(only, field);
    EXPECT_EQ(present_typed_field(only), names[field]);
    // With every later field filled too, the first one is named.
    for (int later = field + 1; later < 6; ++later) fill_one(only, later);
    EXPECT_EQ(present_typed_field(only), names[field]);
    clear_typed_data(only);
    EXPECT_EQ(present_typed_field(only), "");
  }
}

TEST(ClearTypedData, EmptiesEveryTypedFieldAndKeepsTheRest) {
  TensorProto t = typed(TensorProto::kFloat);
  t.dims = {1};
  t.raw_data = TensorBytes::owned(OwnedBytes(4));
  t.float_data = {1.0f};
  t.int32_data = {1};
  t.string_data = {Text("s")};
  t.int64_data = {1};
  t.double_data = {1.0};
  t.uint64_data = {1};
  clear_typed_data(t);
  EXPECT_TRUE(t.float_data.empty() && t.int32_data.empty() && t.string_data.empty() &&
              t.int64_data.empty() && t.double_data.empty() && t.uint64_data.empty());
  ASSERT_TRUE(t.raw_data.has_value());
  EXPECT_EQ(t.raw_data->size(), 4u);
  EXPECT_EQ(t.name, "t");
  EXPECT_EQ(t.dims, std::vector<std::int64_t>{1});
}

TEST(TensorWithoutData, KeepsWhatTheTensorSaysOfItselfAndNothingOfWhereItsDataIs) {
  TensorProto t = typed(TensorProto::kFloat);
  t.dims = {2, 1};
  t.doc_string = "doc";
  t.metadata_props.emplace_back().key = std::string("origin");
  TensorProto::Segment& segment = t.segment.ensure();
  segment.begin = 1;
  segment.end = 2;
  const std::uint8_t unknown_field[] = {0x98, 0x06, 0x01};  // Field 99, varint 1.
  t.unknown_fields.append(unknown_field);
  TensorProto described = t;  // What the copy must equal: t with no data and no reference.

  t.raw_data = TensorBytes::owned(OwnedBytes(8));
  t.float_data = {1.0f, 2.0f};
  t.data_location = TensorProto::kExternal;
  t.external_data.emplace_back().key = std::string("location");
  EXPECT_EQ(tensor_without_data(t), described);
  EXPECT_EQ(tensor_without_data(described), described);
}

TEST(RawPayload, ViewsRawDataInPlaceOrConvertsTheTypedField) {
  TensorProto raw = typed(TensorProto::kUint8);
  raw.dims = {3};
  const Bytes bytes{7, 8, 9};
  raw.raw_data = TensorBytes::borrowed(bytes, kNoOwner);
  const RawPayload borrowed(raw);
  EXPECT_EQ(borrowed.view().data(), bytes.data());  // No copy.
  EXPECT_EQ(borrowed.view().size(), 3u);

  TensorProto typed_uint8 = typed(TensorProto::kUint8);
  typed_uint8.dims = {3};
  typed_uint8.int32_data = {7, 8, 9};
  const RawPayload converted(typed_uint8);
  EXPECT_EQ(Bytes(converted.view().begin(), converted.view().end()), bytes);

  TensorProto empty = typed(TensorProto::kFloat);
  empty.dims = {0};
  EXPECT_TRUE(RawPayload(empty).view().empty());

  TensorProto undefined;
  EXPECT_CONTAINS(error_of(ErrorCode::kUnsupported, [&] { RawPayload{undefined}; }),
                  "unnamed tensor: data type 0 (UNDEFINED) has no typed field");
}

TEST(TensorLabel, NamesTheTensorQuotedAndItsSite) {
  TensorProto t = typed(TensorProto::kFloat);
  t.name = "w";
  EXPECT_EQ(tensor_label(t), "tensor 'w'");
  EXPECT_EQ(tensor_label(t, "graph/initializer[0]"), "tensor 'w' at graph/initializer[0]");
  t.name = "it's\n\x1b[31m";  // A quote and a terminal escape: one printable line.
  EXPECT_EQ(tensor_label(t), "tensor 'it\\x27s\\x0a\\x1b[31m'");
  t.name = "";
  EXPECT_EQ(tensor_label(t), "tensor ''");  // Present but empty is not unnamed.
  t.name.reset();
  EXPECT_EQ(tensor_label(t), "unnamed tensor");
  EXPECT_EQ(tensor_label(t, "graph/node[0]/value"), "unnamed tensor at graph/node[0]/value");
}

// --- The visitor ---

TensorProto named(const std::string& name, std::size_t payload = 4) {
  TensorProto t;
  t.name = name;
  t.data_type = TensorProto::kUint8;
  t.dims = {static_cast<std::int64_t>(payload)};
  Bytes bytes(payload);
  for (std::size_t i = 0; i < payload; ++i) bytes[i] = static_cast<std::uint8_t>(name.size() + i);
  t.raw_data = TensorBytes::copy_of(bytes);
  return t;
}

SparseTensorProto sparse(const std::string& prefix) {
  SparseTensorProto s;
  s.values = named(prefix + "_values");
  s.indices = named(prefix + "_indices");
  return s;
}

// One tensor in every place a tensor can sit, each named after its place.
ModelProto tensor_in_every_place() {
  GraphProto inner;  // Two levels down: model graph -> node attribute g -> node attribute t.
  inner.initializer = {named("g_init")};
  NodeProto inner_node;
  AttributeProto& inner_value = inner_node.attribute.emplace_back();
  inner_value.name = "value";
  inner_value.t = named("g_node_t");
  inner.node = {inner_node};

  GraphProto listed;
  listed.initializer = {named("graphs_init")};

  AttributeProto attribute;
  attribute.name = "body";
  attribute.t = named("attr_t");
  attribute.g = inner;
  attribute.tensors = {named("attr_tensors")};
  attribute.graphs = {listed};
  attribute.sparse_tensor = sparse("attr_sparse");
  attribute.sparse_tensors = {sparse("attr_sparses")};
  NodeProto node;
  node.attribute = {attribute};

  ModelProto model;
  GraphProto& graph = model.graph.emplace();
  graph.node = {node};
  graph.initializer = {named("init")};
  graph.sparse_initializer = {sparse("sparse_init")};

  TrainingInfoProto& training = model.training_info.emplace_back();
  training.initialization.emplace().initializer = {named("ti_init")};
  training.algorithm.emplace().initializer = {named("ti_algo")};

  FunctionProto& function = model.functions.emplace_back();
  NodeProto function_node;
  AttributeProto& function_value = function_node.attribute.emplace_back();
  function_value.name = "value";
  function_value.t = named("fn_node_t");
  function.node = {function_node};
  AttributeProto& alpha = function.attribute_proto.emplace_back();
  alpha.name = "alpha";
  alpha.tensors = {named("fn_attr_default")};
  return model;
}

TEST(ForEachTensor, ReachesATensorInEveryPlace) {
  ModelProto model = tensor_in_every_place();
  std::map<std::string, std::pair<TensorPlace, std::string>> seen;
  for_each_tensor(model, [&](TensorProto& tensor, const TensorSite& site) {
    EXPECT_TRUE(seen.emplace(*tensor.name, std::pair(site.place, std::string(site.path))).second);
  });
  using P = TensorPlace;
  const std::map<std::string, std::pair<TensorPlace, std::string>> expected = {
      {"init", {P::kInitializer, "graph/initializer[0]"}},
      {"sparse_init_values", {P::kSparseInitializerValues, "graph/sparse_initializer[0]/values"}},
      {"sparse_init_indices",
       {P::kSparseInitializerIndices, "graph/sparse_initializer[0]/indices"}},
      {"attr_t", {P::kAttributeTensor, "graph/node[0]/body"}},
      {"g_init", {P::kInitializer, "graph/node[0]/body/initializer[0]"}},
      {"g_node_t", {P::kAttributeTensor, "graph/node[0]/body/node[0]/value"}},
      {"attr_tensors", {P::kAttributeTensors, "graph/node[0]/body[0]"}},
      {"graphs_init", {P::kInitializer, "graph/node[0]/body[0]/initializer[0]"}},
      {"attr_sparse_values", {P::kAttributeSparseTensorValues, "graph/node[0]/body/values"}},
      {"attr_sparse_indices", {P::kAttributeSparseTensorIndices, "graph/node[0]/body/indices"}},
      {"attr_sparses_values", {P::kAttributeSparseTensorsValues, "graph/node[0]/body[0]/values"}},
      {"attr_sparses_indices",
       {P::kAttributeSparseTensorsIndices, "graph/node[0]/body[0]/indices"}},
      {"ti_init", {P::kInitializer, "training_info[0]/initialization/initializer[0]"}},
      {"ti_algo", {P::kInitializer, "training_info[0]/algorithm/initializer[0]"}},
      {"fn_node_t", {P::kAttributeTensor, "functions[0]/node[0]/value"}},
      {"fn_attr_default", {P::kAttributeTensors, "functions[0]/attribute_proto[0]/alpha[0]"}},
  };
  EXPECT_EQ(seen, expected);

  // The const overload reaches the same tensors; graph and function roots start their paths.
  const ModelProto& const_model = model;
  std::set<std::string> const_seen;
  for_each_tensor(const_model, [&](const TensorProto& tensor, const TensorSite&) {
    const_seen.insert(*tensor.name);
  });
  EXPECT_EQ(const_seen.size(), expected.size());
  std::vector<std::string> graph_paths;
  for_each_tensor(*model.graph, [&](TensorProto&, const TensorSite& site) {
    graph_paths.emplace_back(site.path);
  });
  EXPECT_EQ(graph_paths.front(), "node[0]/body");
  std::vector<std::string> function_paths;
  for_each_tensor(
      static_cast<const FunctionProto&>(model.functions[0]),
      [&](const TensorProto&, const TensorSite& site) { function_paths.emplace_back(site.path); });
  EXPECT_EQ(function_paths,
            (std::vector<std::string>{"node[0]/value", "attribute_proto[0]/alpha[0]"}));
}

// spec/names.md: an attribute is spelled by its name. One without a name (not valid ONNX, but
// parsed) stands for itself as "attribute[i]", and a function's unnamed default leaves its
// segment empty, as the JavaScript package spells them.
TEST(ForEachTensor, SpellsAnAttributeByItsName) {
  ModelProto model;
  NodeProto& node = model.graph.emplace().node.emplace_back();
  node.attribute.emplace_back().i = 3;  // Holds no tensor: no site, but it counts.
  AttributeProto& unnamed = node.attribute.emplace_back();
  unnamed.t = named("t");
  unnamed.tensors = {named("t0"), named("t1")};
  AttributeProto& branch = node.attribute.emplace_back();
  branch.name = "then_branch";
  branch.g.emplace().node.emplace_back().attribute.emplace_back().name = "value";
  branch.g->node[0].attribute[0].t = named("k");
  model.functions.emplace_back().attribute_proto.emplace_back().t = named("f");
  std::vector<std::string> paths;
  for_each_tensor(model,
                  [&](TensorProto&, const TensorSite& site) { paths.emplace_back(site.path); });
  EXPECT_EQ(paths, (std::vector<std::string>{
                       "graph/node[0]/attribute[1]", "graph/node[0]/attribute[1][0]",
                       "graph/node[0]/attribute[1][1]", "graph/node[0]/then_branch/node[0]/value",
                       "functions[0]/attribute_proto[0]/"}));
}

TEST(ForEachTensor, TheVisitorMayChangeTensors) {
  ModelProto model = tensor_in_every_place();
  for_each_tensor(model, [](TensorProto& tensor, const TensorSite&) { tensor.doc_string = "x"; });
  for_each_tensor(model, [](const TensorProto& tensor, const TensorSite&) {
    EXPECT_EQ(tensor.doc_string, "x");
  });
}

// Every site path for_each_tensor gives is a way through the table of tensor sites: from
// ModelProto, one row per segment ("name[i]" exactly for repeated rows; an attribute spelled by
// its name), ending at a TensorProto, and the site's place is the one the rows on the way give.
TEST(TensorSiteTable, EverySitePathIsAWayThroughTheTable) {
  const std::span<const TensorSiteField> table = tensor_site_fields();
  const auto row = [&](SiteMessage parent, std::string_view name) -> const TensorSiteField* {
    for (const TensorSiteField& field : table) {
      if (field.parent == parent && field.name == name) return &field;
    }
    return nullptr;
  };
  const ModelProto model = tensor_in_every_place();
  std::size_t checked = 0;
  for_each_tensor(model, [&](const TensorProto&, const TensorSite& site) {
    SCOPED_TRACE(std::string(site.path));
    SiteMessage at = SiteMessage::kModel;
    TensorPlace place{};
    TensorPlace sparse_values{};
    std::string_view rest = site.path;
    while (!rest.empty()) {
      const std::string_view segment = rest.substr(0, rest.find('/'));
      rest.remove_prefix(std::min(rest.size(), segment.size() + 1));
      const bool indexed = segment.back() == ']';
      std::string_view name = segment.substr(0, segment.find('['));
      // A node's attribute is not spelled; an attribute's name stands for the field taken, which
      // the rest of the path tells: a tensor ends it, a sparse tensor's part or a graph follows.
      if (at == SiteMessage::kNode) at = row(at, "attribute")->child;
      if (at == SiteMessage::kAttribute) {
        const std::string_view next = rest.substr(0, rest.find('/'));
        if (rest.empty()) {
          name = indexed ? "tensors" : "t";
        } else if (next == "values" || next == "indices") {
          name = indexed ? "sparse_tensors" : "sparse_tensor";
        } else {
          name = indexed ? "graphs" : "g";
        }
      }
      const TensorSiteField* const field = row(at, name);
      ASSERT_NE(field, nullptr) << segment << " is no field of " << site_message_name(at);
      EXPECT_EQ(field->repeated, indexed) << segment;
      if (field->child == SiteMessage::kSparseTensor) sparse_values = field->place;
      place = field->parent == SiteMessage::kSparseTensor
                  ? static_cast<TensorPlace>(
                        static_cast<int>(sparse_values) + static_cast<int>(field->place) -
                        static_cast<int>(TensorPlace::kSparseInitializerValues))
                  : field->place;
      at = field->child;
    }
    EXPECT_EQ(at, SiteMessage::kTensor);
    EXPECT_EQ(place, site.place);
    ++checked;
  });
  EXPECT_EQ(checked, 16u);
}

// The table is grouped by parent in SiteMessage order, each parent's fields by number (the
// order for_each_tensor visits in), and every message on the way is reached from ModelProto
// before its own fields.
TEST(TensorSiteTable, GroupedReachableAndNamed) {
  const std::span<const TensorSiteField> table = tensor_site_fields();
  ASSERT_FALSE(table.empty());
  std::set<SiteMessage> reached = {SiteMessage::kModel};
  for (std::size_t i = 0; i < table.size(); ++i) {
    if (i != 0) {
      EXPECT_TRUE(table[i - 1].parent < table[i].parent ||
                  (table[i - 1].parent == table[i].parent && table[i - 1].number < table[i].number))
          << table[i].name;
    }
    EXPECT_EQ(reached.count(table[i].parent), 1u) << table[i].name;
    reached.insert(table[i].child);
  }
  EXPECT_EQ(reached.size(), 8u);  // Every SiteMessage, TensorProto included.
  EXPECT_EQ(site_message_name(SiteMessage::kModel), "ModelProto");
  EXPECT_EQ(site_message_name(SiteMessage::kSparseTensor), "SparseTensorProto");
  EXPECT_EQ(site_message_name(SiteMessage::kTrainingInfo), "TrainingInfoProto");
  EXPECT_EQ(site_message_name(SiteMessage::kTensor), "TensorProto");
}

// --- Consolidation ---

TEST(Consolidate, MovesLargePayloadsIntoOneAlignedSharedBuffer) {
  ModelProto model = tensor_in_every_place();
  model.graph->initializer = {named("big", 100), named("small", 3), named("medium", 10)};
  const ModelProto original = model;
  std::map<std::string, Bytes> before;
  for_each_tensor(model, [&](TensorProto& t, const TensorSite&) {
    before[*t.name] = to_bytes(t.raw_data->view());
  });

  TensorBufferOptions options;
  options.raw_data_threshold = 8;
  options.alignment = 64;
  std::shared_ptr<const OwnedBytes> buffer = consolidate_tensors_to_buffer(model, options);
  ASSERT_NE(buffer, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buffer->data()) % 64, 0u);
  EXPECT_EQ(model, original);  // Same bytes everywhere.

  std::size_t moved = 0;
  std::vector<std::pair<std::size_t, std::size_t>> ranges;
  for_each_tensor(model, [&](TensorProto& t, const TensorSite&) {
    const TensorBytes& data = *t.raw_data;
    EXPECT_EQ(to_bytes(data.view()), before[*t.name]) << *t.name;
    if (data.size() < 8) {
      EXPECT_TRUE(data.is_owned()) << *t.name;
      return;
    }
    ++moved;
    EXPECT_TRUE(data.is_borrowed()) << *t.name;
    EXPECT_EQ(data.owner().get(), buffer.get()) << *t.name;
    const auto offset = static_cast<std::size_t>(data.data() - buffer->data());
    EXPECT_EQ(offset % 64, 0u) << *t.name;
    ranges.emplace_back(offset, offset + data.size());
  });
  EXPECT_EQ(moved, 2u);  // "big" and "medium"; every other payload has 4 or 3 bytes.
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(buffer->size(), 128 + 10u);  // "big" at 0, "medium" at 128.
  for (std::size_t i = 100; i < 128 && i < buffer->size(); ++i) EXPECT_EQ(buffer->data()[i], 0);
}

TEST(Consolidate, TheTokenKeepsTheBufferAliveWithoutTheCaller) {
  ModelProto model = tensor_in_every_place();
  std::weak_ptr<const OwnedBytes> weak = consolidate_tensors_to_buffer(model, {});
  ASSERT_FALSE(weak.expired());  // Threshold 0 and alignment 0: every payload, packed together.
  TensorProto copy = model.graph->initializer[0];
  const Bytes expected = to_bytes(copy.raw_data->view());
  model = ModelProto();
  EXPECT_FALSE(weak.expired());
  EXPECT_EQ(to_bytes(copy.raw_data->view()), expected);
  copy = TensorProto();
  EXPECT_TRUE(weak.expired());
}

TEST(Consolidate, PacksContiguouslyWithoutAlignmentAndRejectsBadAlignment) {
  ModelProto model;
  model.graph.emplace().initializer = {named("a", 3), named("b", 5)};
  const auto buffer = consolidate_tensors_to_buffer(model, {});
  ASSERT_NE(buffer, nullptr);
  EXPECT_EQ(buffer->size(), 8u);
  EXPECT_EQ(model.graph->initializer[1].raw_data->data(), buffer->data() + 3);

  TensorBufferOptions odd;
  odd.alignment = 48;
  EXPECT_CONTAINS(
      error_of(ErrorCode::kInvalidArgument, [&] { consolidate_tensors_to_buffer(model, odd); }),
      "alignment 48 is not a power of two");
  TensorBufferOptions high;
  high.raw_data_threshold = 1000;
  EXPECT_EQ(consolidate_tensors_to_buffer(model, high), nullptr);
}

}  // namespace
}  // namespace onnxzip
