// The protocol buffers wire format, and nothing above it.
//
// This header owns the primitives every protobuf message is made of: tags and wire types,
// varints (1 to 10 bytes), ZigZag, little-endian fixed32/fixed64, length-delimited payloads.
// WireReader reads untrusted bytes through bounded sub-ranges and reports every problem as
// onnxzip::Error with the absolute byte offset; WireWriter writes into a caller's buffer and hands
// full buffers to a ByteSink, so output of any size streams through a fixed amount of memory.
// UnknownFields keeps fields a reader does not know, byte for byte, so they can be written back.
//
// It knows nothing of ONNX (see onnx_codec.h for that). All sizes and offsets are 64-bit.
// Anyone may use it.
#ifndef ONNXZIP_PROTOBUF_WIRE_H_
#define ONNXZIP_PROTOBUF_WIRE_H_

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "onnxzip/bytes.h"
#include "onnxzip/error.h"
#include "onnxzip/unknown_fields.h"

namespace onnxzip::wire {

enum class WireType : std::uint8_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,  // Deprecated groups: never produced by ONNX, skipped when unknown.
  kEndGroup = 4,
  kFixed32 = 5,
};

inline constexpr std::uint32_t kMaxFieldNumber = (std::uint32_t{1} << 29) - 1;
inline constexpr std::size_t kMaxVarintSize = 10;
// The largest tag plus the largest length varint: what a writer must have room for before a
// field's payload.
inline constexpr std::size_t kMaxFieldHeaderSize = 2 * kMaxVarintSize;

// "varint", "fixed64", ... for messages.
std::string_view to_string(WireType type) noexcept;

struct FieldTag {
  std::uint32_t number = 0;
  WireType type = WireType::kVarint;
};

constexpr std::uint64_t make_tag(std::uint32_t field_number, WireType type) noexcept {
  return (std::uint64_t{field_number} << 3) | static_cast<std::uint64_t>(type);
}

// ZigZag maps signed integers to unsigned ones so that small magnitudes stay short (sint32/64).
constexpr std::uint64_t zigzag_encode64(std::int64_t value) noexcept {
  return (static_cast<std::uint64_t>(value) << 1) ^ static_cast<std::uint64_t>(value >> 63);
}
constexpr std::int64_t zigzag_decode64(std::uint64_t value) noexcept {
  return static_cast<std::int64_t>((value >> 1) ^ (~(value & 1) + 1));
}
constexpr std::uint32_t zigzag_encode32(std::int32_t value) noexcept {
  return (static_cast<std::uint32_t>(value) << 1) ^ static_cast<std::uint32_t>(value >> 31);
}
constexpr std::int32_t zigzag_decode32(std::uint32_t value) noexcept {
  return static_cast<std::int32_t>((value >> 1) ^ (~(value & 1) + 1));
}

// Bytes the varint encoding of `value` takes: 1 to 10.
constexpr std::size_t varint_size(std::uint64_t value) noexcept {
  // Each byte carries 7 bits. With h the index of the highest set bit (0..63),
  // (h * 9 + 73) / 64 equals h / 7 + 1 over that whole range, without a division.
  const int highest_bit = 63 - std::countl_zero(value | 1);
  return static_cast<std::size_t>((highest_bit * 9 + 73) / 64);
}

// Writes the varint encoding of `value` at `out` (room for 10 bytes required); returns the end.
inline std::uint8_t* encode_varint(std::uint64_t value, std::uint8_t* out) noexcept {
  while (value >= 0x80) {
    *out++ = static_cast<std::uint8_t>(value | 0x80);
    value >>= 7;
  }
  *out++ = static_cast<std::uint8_t>(value);
  return out;
}

enum class VarintStatus : std::uint8_t {
  kOk,
  kTruncated,  // The input ends before the last byte (one without the 0x80 continuation bit).
  kTooLong,    // More than 10 bytes.
  kOverflow,   // A 10th byte above 1: the value does not fit in 64 bits.
};

struct DecodedVarint {
  std::uint64_t value = 0;
  const std::uint8_t* next = nullptr;  // Past the varint; meaningful only when status is kOk.
  VarintStatus status = VarintStatus::kOk;
};

// The rare multi-byte path of decode_varint.
DecodedVarint decode_varint_slow(const std::uint8_t* p, const std::uint8_t* end) noexcept;

// Decodes the varint at `p`, reading nothing at or past `end`. Non-minimal encodings (0x80 0x00
// for 0) are valid protobuf and accepted, as libprotobuf does; more than 10 bytes, or a 10th byte
// carrying bits past bit 63, are rejected.
inline DecodedVarint decode_varint(const std::uint8_t* p, const std::uint8_t* end) noexcept {
  if (p < end && *p < 0x80) return {*p, p + 1, VarintStatus::kOk};
  // Two bytes: the length of most nested messages and strings.
  if (end - p >= 2 && p[1] < 0x80) {
    return {(std::uint64_t{p[0]} & 0x7f) | (std::uint64_t{p[1]} << 7), p + 2, VarintStatus::kOk};
  }
  return decode_varint_slow(p, end);
}

inline std::uint32_t load_fixed32(const std::uint8_t* p) noexcept {
  std::uint32_t value;
  std::memcpy(&value, p, sizeof value);
  if constexpr (std::endian::native == std::endian::big) value = __builtin_bswap32(value);
  return value;
}
inline std::uint64_t load_fixed64(const std::uint8_t* p) noexcept {
  std::uint64_t value;
  std::memcpy(&value, p, sizeof value);
  if constexpr (std::endian::native == std::endian::big) value = __builtin_bswap64(value);
  return value;
}
inline std::uint8_t* store_fixed32(std::uint32_t value, std::uint8_t* out) noexcept {
  if constexpr (std::endian::native == std::endian::big) value = __builtin_bswap32(value);
  std::memcpy(out, &value, sizeof value);
  return out + sizeof value;
}
inline std::uint8_t* store_fixed64(std::uint64_t value, std::uint8_t* out) noexcept {
  if constexpr (std::endian::native == std::endian::big) value = __builtin_bswap64(value);
  std::memcpy(out, &value, sizeof value);
  return out + sizeof value;
}

// --- Scanning fields without throwing ---
//
// Where a field or a value ends, for code that steps over bytes and decides for itself what a
// fault means (the codec's look-ahead, the model splitter). WireReader reads through the same
// functions and reports each fault as an error.

enum class ScanStatus : std::uint8_t {
  kOk,
  kBadVarint,      // The tag, a varint value or a length is malformed: `varint` says how.
  kBadTag,         // Field number 0 or above kMaxFieldNumber, or wire type 6 or 7.
  kShort,          // Fewer bytes remain than a fixed32 / fixed64 value needs.
  kLengthPastEnd,  // A length beyond the bytes that remain.
  kGroup,          // A start-group or end-group tag: WireReader::skip_value skips groups.
};

struct ScannedValue {
  // kOk: past the value. kLengthPastEnd: past the length. Otherwise where the fault starts.
  const std::uint8_t* next = nullptr;
  std::uint64_t length = 0;  // A length-delimited value's length (also when kLengthPastEnd).
  ScanStatus status = ScanStatus::kOk;
  VarintStatus varint = VarintStatus::kOk;  // When kBadVarint.

  // A length-delimited value's payload; meaningful only when status is kOk.
  ByteSpan payload() const noexcept {
    return ByteSpan(next - length, static_cast<std::size_t>(length));
  }
};

// The value of wire type `type` at `p`, reading nothing at or past `end`.
inline ScannedValue scan_value(WireType type, const std::uint8_t* p,
                               const std::uint8_t* end) noexcept {
  switch (type) {
    case WireType::kVarint: {
      const DecodedVarint value = decode_varint(p, end);
      if (value.status != VarintStatus::kOk) {
        return {p, 0, ScanStatus::kBadVarint, value.status};
      }
      return {value.next};
    }
    case WireType::kFixed64:
      if (end - p < 8) return {p, 0, ScanStatus::kShort};
      return {p + 8};
    case WireType::kLengthDelimited: {
      const DecodedVarint length = decode_varint(p, end);
      if (length.status != VarintStatus::kOk) {
        return {p, 0, ScanStatus::kBadVarint, length.status};
      }
      if (length.value > static_cast<std::uint64_t>(end - length.next)) {
        return {length.next, length.value, ScanStatus::kLengthPastEnd};
      }
      return {length.next + length.value, length.value};
    }
    case WireType::kFixed32:
      if (end - p < 4) return {p, 0, ScanStatus::kShort};
      return {p + 4};
    case WireType::kStartGroup:
    case WireType::kEndGroup:
      break;
  }
  return {p, 0, ScanStatus::kGroup};
}

struct ScannedTag {
  std::uint64_t number = 0;             // The field number and wire type, also when kBadTag (for
  std::uint8_t type = 0;                // messages).
  ScanStatus status = ScanStatus::kOk;  // kOk, kBadVarint or kBadTag.
  VarintStatus varint = VarintStatus::kOk;  // When kBadVarint.
  const std::uint8_t* next = nullptr;       // Past the tag, when kOk.

  FieldTag field_tag() const noexcept {
    return {static_cast<std::uint32_t>(number), static_cast<WireType>(type)};
  }
};

// The tag at `p`: a varint of field number 1..kMaxFieldNumber and wire type 0..5.
inline ScannedTag scan_tag(const std::uint8_t* p, const std::uint8_t* end) noexcept {
  const DecodedVarint tag = decode_varint(p, end);
  if (tag.status != VarintStatus::kOk) return {0, 0, ScanStatus::kBadVarint, tag.status};
  const std::uint64_t number = tag.value >> 3;
  const auto type = static_cast<std::uint8_t>(tag.value & 7);
  if (number == 0 || number > kMaxFieldNumber || type > 5) {
    return {number, type, ScanStatus::kBadTag};
  }
  return {number, type, ScanStatus::kOk, VarintStatus::kOk, tag.next};
}

struct ScannedField {
  FieldTag tag;
  ScannedValue value;  // Its status is the field's: a bad tag included.
};

// The whole field at `p`, tag and value; groups give kGroup.
inline ScannedField scan_field(const std::uint8_t* p, const std::uint8_t* end) noexcept {
  const ScannedTag tag = scan_tag(p, end);
  if (tag.status != ScanStatus::kOk) return {{}, {p, 0, tag.status, tag.varint}};
  return {tag.field_tag(), scan_value(tag.field_tag().type, tag.next, end)};
}

// Names the thing being read in error messages: a message and optionally one of its fields,
// joined as "TensorProto.dims". Both views must outlive the call (string literals, typically).
struct WireContext {
  std::string_view message;
  std::string_view field;

  constexpr WireContext(const char* message_name) noexcept : message(message_name) {}
  constexpr WireContext(std::string_view message_name, std::string_view field_name = {}) noexcept
      : message(message_name), field(field_name) {}
};

// Reads protobuf wire data from a bounded range of untrusted bytes. Never reads outside the
// range; every failure throws Error with `source` as its context's file part ("" for none: the
// caller adds the place) and the problem "offset N: <context>: <problem>", N being the absolute
// offset (base_offset + position in the outermost reader). Sub-readers made
// by sub_reader() share the source and the offset origin. The reader borrows the bytes and the
// source name; both must outlive it.
class WireReader final {
 public:
  explicit WireReader(ByteSpan bytes, std::string_view source = "<memory>",
                      std::uint64_t base_offset = 0) noexcept
      : p_(bytes.data()),
        end_(bytes.data() + bytes.size()),
        origin_(bytes.data()),
        base_offset_(base_offset),
        source_(source) {}

  bool at_end() const noexcept { return p_ == end_; }
  std::uint64_t remaining() const noexcept { return static_cast<std::uint64_t>(end_ - p_); }
  // Absolute offset of the next byte, and of any pointer into the outermost range.
  std::uint64_t offset() const noexcept { return offset_of(p_); }
  std::uint64_t offset_of(const std::uint8_t* p) const noexcept {
    return base_offset_ + static_cast<std::uint64_t>(p - origin_);
  }
  const std::uint8_t* position() const noexcept { return p_; }
  const std::uint8_t* end() const noexcept { return end_; }
  std::string_view source() const noexcept { return source_; }

  // A tag: field number 1..2^29-1 and a wire type 0..5.
  FieldTag read_tag(const WireContext& where) {
    if (p_ < end_ && *p_ < 0x80) {
      const std::uint8_t tag = *p_;
      if ((tag >> 3) != 0 && (tag & 7) <= 5) {
        ++p_;
        return {static_cast<std::uint32_t>(tag >> 3), static_cast<WireType>(tag & 7)};
      }
    }
    return read_tag_slow(where);
  }

  std::uint64_t read_varint(const WireContext& where) {
    const DecodedVarint v = decode_varint(p_, end_);
    if (v.status != VarintStatus::kOk) fail_varint(v.status, where);
    p_ = v.next;
    return v.value;
  }

  std::uint32_t read_fixed32(const WireContext& where) {
    if (end_ - p_ < 4) fail_short(4, where);
    const std::uint32_t value = load_fixed32(p_);
    p_ += 4;
    return value;
  }

  std::uint64_t read_fixed64(const WireContext& where) {
    if (end_ - p_ < 8) fail_short(8, where);
    const std::uint64_t value = load_fixed64(p_);
    p_ += 8;
    return value;
  }

  // The next `length` bytes, or Error(kCorrupt) when fewer remain.
  ByteSpan read_bytes(std::uint64_t length, const WireContext& where) {
    if (length > remaining()) fail_short(length, where);
    const ByteSpan bytes(p_, static_cast<std::size_t>(length));
    p_ += length;
    return bytes;
  }

  // A varint length and that many bytes: the payload of a length-delimited field.
  ByteSpan read_length_delimited(const WireContext& where) {
    const std::uint8_t* const start = p_;
    const std::uint64_t length = read_varint(where);
    if (length > remaining()) fail_length(start, length, remaining(), where);
    const ByteSpan bytes(p_, static_cast<std::size_t>(length));
    p_ += length;
    return bytes;
  }

  // A reader over `payload`, which must lie inside this reader's range (from read_bytes or
  // read_length_delimited). It reports offsets relative to the same origin.
  WireReader sub_reader(ByteSpan payload) const noexcept {
    WireReader sub = *this;
    sub.p_ = payload.data();
    sub.end_ = payload.data() + payload.size();
    return sub;
  }

  // Skips the value of a field whose tag was just read. Groups are skipped with their nested
  // groups, at most `max_group_depth` deep (Error(kLimitExceeded) beyond).
  void skip_value(FieldTag tag, const WireContext& where, std::uint32_t max_group_depth = 100);

  [[noreturn]] void fail(ErrorCode code, std::uint64_t offset, const WireContext& where,
                         std::string_view problem) const;

 private:
  FieldTag read_tag_slow(const WireContext& where);
  void skip_group(FieldTag tag, const WireContext& where, std::uint32_t max_group_depth);
  [[noreturn]] void fail_varint(VarintStatus status, const WireContext& where) const;
  [[noreturn]] void fail_short(std::uint64_t wanted, const WireContext& where) const;
  [[noreturn]] void fail_length(const std::uint8_t* length_at, std::uint64_t length,
                                std::uint64_t remaining, const WireContext& where) const;
  // Why scan_value refused the value of `type` at the reader's position.
  [[noreturn]] void fail_scan(const ScannedValue& value, WireType type,
                              const WireContext& where) const;

  const std::uint8_t* p_;
  const std::uint8_t* end_;
  const std::uint8_t* origin_;
  std::uint64_t base_offset_;
  std::string_view source_;
};

// Where a WireWriter's output goes. Implementations write or copy every byte given, or throw.
class ByteSink {
 public:
  virtual ~ByteSink() = default;
  virtual void write(ByteSpan bytes) = 0;

 protected:
  ByteSink() = default;
  ByteSink(const ByteSink&) = default;
  ByteSink& operator=(const ByteSink&) = default;
};

// Appends to a std::vector.
class VectorSink final : public ByteSink {
 public:
  explicit VectorSink(std::vector<std::uint8_t>& out) noexcept : out_(out) {}
  void write(ByteSpan bytes) override { out_.insert(out_.end(), bytes.begin(), bytes.end()); }

 private:
  std::vector<std::uint8_t>& out_;
};

// Writes protobuf wire data into `buffer`. With a sink, a full buffer is handed to the sink and
// reused, and payloads of at least `direct_threshold` bytes go to the sink without being copied
// through the buffer (flush() at the end). Without a sink, the buffer must hold the whole output:
// running out throws Error(kBadState). The buffer must hold at least kMaxFieldHeaderSize bytes.
class WireWriter final {
 public:
  WireWriter(MutableByteSpan buffer, ByteSink* sink,
             std::uint64_t direct_threshold = UINT64_MAX) noexcept
      : begin_(buffer.data()),
        cur_(buffer.data()),
        end_(buffer.data() + buffer.size()),
        sink_(sink),
        direct_threshold_(direct_threshold) {}
  WireWriter(const WireWriter&) = delete;
  WireWriter& operator=(const WireWriter&) = delete;

  // Makes room for `size` (at most the buffer size) contiguous bytes.
  void reserve(std::size_t size) {
    if (static_cast<std::size_t>(end_ - cur_) < size) make_room(size);
  }

  void write_varint(std::uint64_t value) {
    if (static_cast<std::size_t>(end_ - cur_) >= kMaxVarintSize) {
      cur_ = encode_varint(value, cur_);
    } else {
      // Near the end of the buffer: an exactly sized output has no room to spare.
      std::uint8_t bytes[kMaxVarintSize];
      write_bytes(ByteSpan(bytes, static_cast<std::size_t>(encode_varint(value, bytes) - bytes)));
    }
  }
  void write_tag(std::uint32_t field_number, WireType type) {
    write_varint(make_tag(field_number, type));
  }
  void write_fixed32(std::uint32_t value) {
    reserve(4);
    cur_ = store_fixed32(value, cur_);
  }
  void write_fixed64(std::uint64_t value) {
    reserve(8);
    cur_ = store_fixed64(value, cur_);
  }
  void write_bytes(ByteSpan bytes) {
    if (static_cast<std::size_t>(end_ - cur_) >= bytes.size()) {
      if (!bytes.empty()) std::memcpy(cur_, bytes.data(), bytes.size());
      cur_ += bytes.size();
    } else {
      write_bytes_slow(bytes);
    }
  }
  void write_length_delimited(std::uint32_t field_number, ByteSpan payload) {
    write_tag(field_number, WireType::kLengthDelimited);
    write_varint(payload.size());
    write_bytes(payload);
  }

  // Unchecked writes after reserve(): the caller made room for them.
  std::uint8_t*& cursor() noexcept { return cur_; }

  // Hands the buffered bytes to the sink (a no-op without one).
  void flush();
  // Bytes written so far, flushed or not.
  std::uint64_t position() const noexcept {
    return flushed_ + static_cast<std::uint64_t>(cur_ - begin_);
  }

 private:
  void make_room(std::size_t size);
  void write_bytes_slow(ByteSpan bytes);

  std::uint8_t* begin_;
  std::uint8_t* cur_;
  std::uint8_t* end_;
  ByteSink* sink_;
  std::uint64_t direct_threshold_;
  std::uint64_t flushed_ = 0;
};

}  // namespace onnxzip::wire

#endif  // ONNXZIP_PROTOBUF_WIRE_H_
