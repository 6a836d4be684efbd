#include "onnxzip/internal/protobuf_wire.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace onnxzip::wire {
namespace {

using Bytes = std::vector<std::uint8_t>;

// Runs `body`, which must throw Error with `code`; returns the message.
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

struct VarintCase {
  std::uint64_t value;
  Bytes encoding;
};

const std::vector<VarintCase>& varint_cases() {
  static const std::vector<VarintCase> cases = {
      {0, {0x00}},
      {1, {0x01}},
      {127, {0x7f}},
      {128, {0x80, 0x01}},
      {300, {0xac, 0x02}},
      {16383, {0xff, 0x7f}},
      {16384, {0x80, 0x80, 0x01}},
      {(std::uint64_t{1} << 21) - 1, {0xff, 0xff, 0x7f}},
      {std::uint64_t{1} << 28, {0x80, 0x80, 0x80, 0x80, 0x01}},
      {std::uint64_t{1} << 35, {0x80, 0x80, 0x80, 0x80, 0x80, 0x01}},
      {std::uint64_t{1} << 42, {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}},
      {std::uint64_t{1} << 49, {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}},
      {std::uint64_t{1} << 56, {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}},
      {std::uint64_t{1} << 63, {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}},
      {std::numeric_limits<std::uint64_t>::max(),
       {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
  };
  return cases;
}

TEST(Varint, EncodesEveryLengthFromOneToTenBytes) {
  for (const auto& c : varint_cases()) {
    std::uint8_t out[kMaxVarintSize + 1] = {};
    std::uint8_t* end = encode_varint(c.value, out);
    EXPECT_EQ(Bytes(out, end), c.encoding) << c.value;
    EXPECT_EQ(varint_size(c.value), c.encoding.size()) << c.value;
  }
}

TEST(Varint, DecodesEveryLengthFromOneToTenBytes) {
  for (const auto& c : varint_cases()) {
    Bytes input = c.encoding;
    input.push_back(0xee);  // A following byte must not be consumed.
    const DecodedVarint d = decode_varint(input.data(), input.data() + input.size());
    ASSERT_EQ(d.status, VarintStatus::kOk) << c.value;
    EXPECT_EQ(d.value, c.value);
    EXPECT_EQ(d.next, input.data() + c.encoding.size());
  }
}

TEST(Varint, SizeMatchesEncodingAtEverySevenBitBoundary) {
  for (int bits = 0; bits <= 64; ++bits) {
    for (const std::uint64_t delta : {0, 1}) {
      const std::uint64_t value = bits == 64 ? std::numeric_limits<std::uint64_t>::max() - delta
                                             : (std::uint64_t{1} << bits) - delta;
      std::uint8_t out[kMaxVarintSize];
      EXPECT_EQ(varint_size(value), static_cast<std::size_t>(encode_varint(value, out) - out))
          << value;
    }
  }
}

TEST(Varint, AcceptsNonMinimalEncodingsUpToTenBytes) {
  const Bytes zero_in_two = {0x80, 0x00};
  DecodedVarint d = decode_varint(zero_in_two.data(), zero_in_two.data() + 2);
  ASSERT_EQ(d.status, VarintStatus::kOk);
  EXPECT_EQ(d.value, 0u);
  EXPECT_EQ(d.next, zero_in_two.data() + 2);

  const Bytes one_in_ten = {0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
  d = decode_varint(one_in_ten.data(), one_in_ten.data() + one_in_ten.size());
  ASSERT_EQ(d.status, VarintStatus::kOk);
  EXPECT_EQ(d.value, 1u);
}

TEST(Varint, RejectsElevenBytes) {
  const Bytes input = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
  EXPECT_EQ(decode_varint(input.data(), input.data() + input.size()).status,
            VarintStatus::kTooLong);
}

TEST(Varint, RejectsATenthByteAboveOne) {
  for (const std::uint8_t last : {0x02, 0x7f}) {
    const Bytes input = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, last};
    EXPECT_EQ(decode_varint(input.data(), input.data() + input.size()).status,
              VarintStatus::kOverflow)
        << int{last};
  }
}

TEST(Varint, RejectsEveryTruncation) {
  for (const auto& c : varint_cases()) {
    for (std::size_t keep = 0; keep < c.encoding.size(); ++keep) {
      EXPECT_EQ(decode_varint(c.encoding.data(), c.encoding.data() + keep).status,
                VarintStatus::kTruncated)
          << c.value << " cut to " << keep;
    }
  }
}

TEST(ZigZag, MapsSmallMagnitudesToSmallValues) {
  const std::vector<std::pair<std::int64_t, std::uint64_t>> cases = {
      {0, 0},
      {-1, 1},
      {1, 2},
      {-2, 3},
      {2147483647, 4294967294},
      {-2147483648LL, 4294967295},
      {std::numeric_limits<std::int64_t>::max(), std::numeric_limits<std::uint64_t>::max() - 1},
      {std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::uint64_t>::max()},
  };
  for (const auto& [signed_value, encoded] : cases) {
    EXPECT_EQ(zigzag_encode64(signed_value), encoded) << signed_value;
    EXPECT_EQ(zigzag_decode64(encoded), signed_value) << encoded;
  }
  const std::vector<std::pair<std::int32_t, std::uint32_t>> cases32 = {
      {0, 0},
      {-1, 1},
      {1, 2},
      {std::numeric_limits<std::int32_t>::max(), 0xfffffffe},
      {std::numeric_limits<std::int32_t>::min(), 0xffffffff},
  };
  for (const auto& [signed_value, encoded] : cases32) {
    EXPECT_EQ(zigzag_encode32(signed_value), encoded) << signed_value;
    EXPECT_EQ(zigzag_decode32(encoded), signed_value) << encoded;
  }
}

TEST(Fixed, StoresAndLoadsLittleEndian) {
  std::uint8_t out[8];
  EXPECT_EQ(store_fixed32(0x04030201, out), out + 4);
  EXPECT_EQ(Bytes(out, out + 4), (Bytes{1, 2, 3, 4}));
  EXPECT_EQ(load_fixed32(out), 0x04030201u);
  EXPECT_EQ(store_fixed64(0x0807060504030201, out), out + 8);
  EXPECT_EQ(Bytes(out, out + 8), (Bytes{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(load_fixed64(out), 0x0807060504030201u);
}

TEST(WireReader, ReadsEveryWireTypeAndReportsAbsoluteOffsets) {
  // field 1 varint 150, field 2 fixed64, field 3 "abc", field 4 fixed32.
  const Bytes input = {0x08, 0x96, 0x01, 0x11, 1,   2,   3,    4, 5, 6, 7,
                       8,    0x1a, 0x03, 'a',  'b', 'c', 0x25, 9, 8, 7, 6};
  WireReader reader(input, "test.bin", 1000);
  EXPECT_EQ(reader.offset(), 1000u);
  FieldTag tag = reader.read_tag("M");
  EXPECT_EQ(tag.number, 1u);
  EXPECT_EQ(tag.type, WireType::kVarint);
  EXPECT_EQ(reader.read_varint("M"), 150u);
  tag = reader.read_tag("M");
  EXPECT_EQ(tag.type, WireType::kFixed64);
  EXPECT_EQ(reader.read_fixed64("M"), 0x0807060504030201u);
  tag = reader.read_tag("M");
  EXPECT_EQ(tag.type, WireType::kLengthDelimited);
  const ByteSpan payload = reader.read_length_delimited("M");
  EXPECT_EQ(std::string(payload.begin(), payload.end()), "abc");
  const WireReader sub = reader.sub_reader(payload);
  EXPECT_EQ(sub.offset(), 1014u);  // Absolute, not relative to the payload.
  EXPECT_EQ(sub.remaining(), 3u);
  tag = reader.read_tag("M");
  EXPECT_EQ(tag.number, 4u);
  EXPECT_EQ(tag.type, WireType::kFixed32);
  EXPECT_EQ(reader.read_fixed32("M"), 0x06070809u);
  EXPECT_TRUE(reader.at_end());
}

TEST(WireReader, ReadsMultiByteTags) {
  const Bytes input = {0xa2, 0x06, 0x00};  // Field 100, length-delimited, empty.
  WireReader reader(input);
  const FieldTag tag = reader.read_tag("M");
  EXPECT_EQ(tag.number, 100u);
  EXPECT_EQ(tag.type, WireType::kLengthDelimited);
}

TEST(WireReader, RejectsInvalidTagsWithTheirOffset) {
  const Bytes field_zero = {0x08, 0x01, 0x00};
  WireReader a(field_zero, "in.pb");
  a.read_tag("M");
  a.read_varint("M");
  std::string message = error_of(ErrorCode::kCorrupt, [&] { a.read_tag("M"); });
  EXPECT_NE(message.find("in.pb: offset 2: M: invalid field number 0"), std::string::npos)
      << message;

  const Bytes wire_type_six = {0x0e};
  WireReader b(wire_type_six, "in.pb");
  message = error_of(ErrorCode::kCorrupt, [&] { b.read_tag("M"); });
  EXPECT_NE(message.find("offset 0: M: invalid wire type 6"), std::string::npos) << message;

  const Bytes truncated_tag = {0x80};
  WireReader c(truncated_tag, "in.pb");
  message = error_of(ErrorCode::kCorrupt, [&] { c.read_tag({"M", "f"}); });
  EXPECT_NE(message.find("offset 0: M.f: truncated varint"), std::string::npos) << message;
}

TEST(WireReader, RejectsALengthPastTheEndAtTheLengthOffset) {
  const Bytes input = {0x0a, 0x05, 'a', 'b'};
  WireReader reader(input, "in.pb", 10);
  reader.read_tag("M");
  const std::string message = error_of(ErrorCode::kCorrupt, [&] {
    reader.read_length_delimited({"M", "name"});
  });
  EXPECT_NE(message.find("in.pb: offset 11: M.name: length 5 exceeds the 2 bytes remaining"),
            std::string::npos)
      << message;
}

TEST(WireReader, RejectsShortFixedValues) {
  const Bytes input = {1, 2, 3};
  WireReader reader(input);
  EXPECT_NE(error_of(ErrorCode::kCorrupt, [&] { reader.read_fixed32("M"); })
                .find("needs 4 bytes but only 3 remain"),
            std::string::npos);
  EXPECT_NE(error_of(ErrorCode::kCorrupt, [&] { reader.read_fixed64("M"); }).find("needs 8 bytes"),
            std::string::npos);
}

TEST(WireReader, SkipsEveryWireTypeIncludingNestedGroups) {
  // 1:varint, 2:fixed64, 3:len, 5:fixed32, 6:group{ 7:varint, 8:group{} }, then 9:varint 42.
  const Bytes input = {0x08, 0xff, 0x01, 0x11, 0,    0,    0,    0,    0, 0,
                       0,    0,    0x1a, 0x02, 1,    2,    0x2d, 0,    0, 0,
                       0,    0x33, 0x38, 0x05, 0x43, 0x44, 0x34, 0x48, 42};
  WireReader reader(input);
  for (int i = 0; i < 5; ++i) reader.skip_value(reader.read_tag("M"), "M");
  const FieldTag tag = reader.read_tag("M");
  EXPECT_EQ(tag.number, 9u);
  EXPECT_EQ(reader.read_varint("M"), 42u);
  EXPECT_TRUE(reader.at_end());
}

TEST(WireReader, RejectsBrokenGroups) {
  const Bytes mismatched = {0x33, 0x3c};  // Group 6 closed by end-group 7.
  WireReader a(mismatched);
  EXPECT_NE(error_of(ErrorCode::kCorrupt, [&] { a.skip_value(a.read_tag("M"), "M"); })
                .find("offset 1: M: end-group tag of field 7 closes the group of field 6"),
            std::string::npos);

  const Bytes unterminated = {0x33, 0x38, 0x01};
  WireReader b(unterminated);
  EXPECT_NE(error_of(ErrorCode::kCorrupt, [&] { b.skip_value(b.read_tag("M"), "M"); })
                .find("has no end-group tag"),
            std::string::npos);

  const Bytes stray_end = {0x34};
  WireReader c(stray_end);
  EXPECT_NE(error_of(ErrorCode::kCorrupt, [&] { c.skip_value(c.read_tag("M"), "M"); })
                .find("outside any group"),
            std::string::npos);

  Bytes deep(200, 0x33);  // 200 nested start-group tags of field 6.
  WireReader d(deep);
  EXPECT_NE(error_of(ErrorCode::kLimitExceeded, [&] { d.skip_value(d.read_tag("M"), "M", 50); })
                .find("groups nested too deeply"),
            std::string::npos);
}

// skip_value reports a malformed value exactly as reading it would: the same message at the
// same offset (both go through scan_value).
TEST(WireReader, SkippingAMalformedValueFailsAsReadingItDoes) {
  struct Case {
    WireType type;
    Bytes value;
  };
  const std::vector<Case> cases = {
      {WireType::kVarint, {0x80, 0x80}},     // Truncated.
      {WireType::kVarint, Bytes(11, 0x80)},  // Eleven bytes.
      {WireType::kVarint, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}},
      {WireType::kFixed64, {1, 2, 3, 4, 5, 6, 7}},     // One byte short.
      {WireType::kFixed32, {1, 2, 3}},                 // One byte short.
      {WireType::kLengthDelimited, {0x05, 'a', 'b'}},  // Length past the end.
      {WireType::kLengthDelimited, {0x80}},            // Truncated length.
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(to_string(c.type)) + ", " + std::to_string(c.value.size()) + " bytes");
    Bytes input = {static_cast<std::uint8_t>(make_tag(3, c.type))};
    input.insert(input.end(), c.value.begin(), c.value.end());
    WireReader skipping(input, "in.pb", 100);
    const FieldTag tag = skipping.read_tag("M");
    const std::string skipped = error_of(ErrorCode::kCorrupt, [&] {
      skipping.skip_value(tag, {"M", "f"});
    });
    WireReader reading(input, "in.pb", 100);
    reading.read_tag("M");
    const std::string read = error_of(ErrorCode::kCorrupt, [&] {
      const WireContext where("M", "f");
      switch (c.type) {
        case WireType::kVarint:
          reading.read_varint(where);
          break;
        case WireType::kFixed64:
          reading.read_fixed64(where);
          break;
        case WireType::kFixed32:
          reading.read_fixed32(where);
          break;
        default:
          reading.read_length_delimited(where);
          break;
      }
    });
    EXPECT_EQ(skipped, read);
    EXPECT_NE(skipped.find("in.pb: offset 101: M.f: "), std::string::npos) << skipped;
  }
}

TEST(ScanField, FindsTheEndOfEveryWireTypeWithoutThrowing) {
  // field 1 varint 150, field 2 fixed64, field 3 "abc", field 4 fixed32.
  const Bytes input = {0x08, 0x96, 0x01, 0x11, 1,   2,   3,    4, 5, 6, 7,
                       8,    0x1a, 0x03, 'a',  'b', 'c', 0x25, 9, 8, 7, 6};
  const std::uint8_t* p = input.data();
  const std::uint8_t* const end = p + input.size();
  std::vector<std::size_t> ends;
  std::vector<std::uint32_t> numbers;
  while (p < end) {
    const ScannedField field = scan_field(p, end);
    ASSERT_EQ(field.value.status, ScanStatus::kOk);
    numbers.push_back(field.tag.number);
    if (field.tag.type == WireType::kLengthDelimited) {
      EXPECT_EQ(std::string(field.value.payload().begin(), field.value.payload().end()), "abc");
    }
    p = field.value.next;
    ends.push_back(static_cast<std::size_t>(p - input.data()));
  }
  EXPECT_EQ(numbers, (std::vector<std::uint32_t>{1, 2, 3, 4}));
  EXPECT_EQ(ends, (std::vector<std::size_t>{3, 12, 17, 22}));
}

TEST(ScanField, SaysWhatIsWrongWhereItStarts) {
  struct Case {
    Bytes field;
    ScanStatus status;
    VarintStatus varint;
  };
  const std::vector<Case> cases = {
      {{0x80}, ScanStatus::kBadVarint, VarintStatus::kTruncated},          // The tag.
      {{0x00, 0x01}, ScanStatus::kBadTag, VarintStatus::kOk},              // Field 0.
      {{0x0e, 0x01}, ScanStatus::kBadTag, VarintStatus::kOk},              // Wire type 6.
      {{0x08, 0xff}, ScanStatus::kBadVarint, VarintStatus::kTruncated},    // The value.
      {{0x11, 1, 2}, ScanStatus::kShort, VarintStatus::kOk},               // fixed64.
      {{0x15, 1, 2}, ScanStatus::kShort, VarintStatus::kOk},               // fixed32.
      {{0x0a, 0x03, 'a'}, ScanStatus::kLengthPastEnd, VarintStatus::kOk},  // Length 3 of 1.
      {{0x0b, 0x0c}, ScanStatus::kGroup, VarintStatus::kOk},               // Start-group.
      {{0x0c}, ScanStatus::kGroup, VarintStatus::kOk},                     // End-group.
  };
  for (const Case& c : cases) {
    const ScannedField field = scan_field(c.field.data(), c.field.data() + c.field.size());
    EXPECT_EQ(field.value.status, c.status) << c.field.size() << " bytes from " << int{c.field[0]};
    EXPECT_EQ(field.value.varint, c.varint) << int{c.field[0]};
  }
  // A length past the end is told with the length and where the payload would start.
  const Bytes past = {0x0a, 0x03, 'a'};
  const ScannedField field = scan_field(past.data(), past.data() + past.size());
  EXPECT_EQ(field.value.length, 3u);
  EXPECT_EQ(field.value.next, past.data() + 2);
}

// Records each write separately so tests can see which bytes bypassed the buffer.
class RecordingSink final : public ByteSink {
 public:
  void write(ByteSpan bytes) override { writes.emplace_back(bytes.begin(), bytes.end()); }
  Bytes joined() const {
    Bytes all;
    for (const auto& w : writes) all.insert(all.end(), w.begin(), w.end());
    return all;
  }
  std::vector<Bytes> writes;
};

TEST(WireWriter, WritesThroughASmallBufferAndSendsLargePayloadsDirectly) {
  std::vector<std::uint8_t> buffer(32);
  RecordingSink sink;
  WireWriter writer(buffer, &sink, /*direct_threshold=*/100);
  Bytes expected;
  for (std::uint32_t i = 1; i <= 20; ++i) {
    writer.write_tag(i, WireType::kVarint);
    writer.write_varint(std::uint64_t{1} << (3 * i));
    std::uint8_t tmp[20];
    std::uint8_t* p = encode_varint(make_tag(i, WireType::kVarint), tmp);
    p = encode_varint(std::uint64_t{1} << (3 * i), p);
    expected.insert(expected.end(), tmp, p);
  }
  const Bytes big(150, 0xab);
  writer.write_length_delimited(21, big);
  expected.insert(expected.end(), {0xaa, 0x01, 0x96, 0x01});
  expected.insert(expected.end(), big.begin(), big.end());
  const Bytes medium(50, 0xcd);  // Below the threshold: copied through the buffer in pieces.
  writer.write_bytes(medium);
  expected.insert(expected.end(), medium.begin(), medium.end());
  writer.write_fixed32(0x01020304);
  writer.write_fixed64(0x0102030405060708);
  expected.insert(expected.end(), {4, 3, 2, 1, 8, 7, 6, 5, 4, 3, 2, 1});
  writer.flush();
  EXPECT_EQ(writer.position(), expected.size());
  EXPECT_EQ(sink.joined(), expected);
  bool big_went_direct = false;
  for (const auto& w : sink.writes) big_went_direct |= (w == big);
  EXPECT_TRUE(big_went_direct);
  for (const auto& w : sink.writes) EXPECT_LE(w.size(), std::max<std::size_t>(32, big.size()));
}

TEST(WireWriter, WithoutASinkOverflowIsABadState) {
  std::vector<std::uint8_t> buffer(4);
  WireWriter writer(buffer, nullptr);
  writer.write_fixed32(7);
  EXPECT_EQ(writer.position(), 4u);
  EXPECT_NE(error_of(ErrorCode::kBadState, [&] { writer.write_varint(1); })
                .find("exceeds its precomputed size"),
            std::string::npos);
  const Bytes more = {1, 2};
  EXPECT_THROW(writer.write_bytes(more), Error);
}

TEST(WireWriter, VectorSinkAppends) {
  std::vector<std::uint8_t> out = {9};
  VectorSink sink(out);
  std::vector<std::uint8_t> buffer(kMaxFieldHeaderSize);
  WireWriter writer(buffer, &sink);
  writer.write_length_delimited(1, Bytes{'h', 'i'});
  writer.flush();
  EXPECT_EQ(out, (Bytes{9, 0x0a, 0x02, 'h', 'i'}));
}

TEST(UnknownFields, KeepsBytesInOrderAndCompares) {
  UnknownFields a;
  EXPECT_TRUE(a.empty());
  a.append(Bytes{0x08, 0x01});
  a.append(Bytes{0x15, 1, 2, 3, 4});
  EXPECT_EQ(Bytes(a.bytes().begin(), a.bytes().end()), (Bytes{0x08, 0x01, 0x15, 1, 2, 3, 4}));
  UnknownFields b;
  b.append(Bytes{0x08, 0x01, 0x15, 1, 2, 3, 4});
  EXPECT_EQ(a, b);
  b.clear();
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace onnxzip::wire
