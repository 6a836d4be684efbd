#include "onnxzip/internal/protobuf_wire.h"

#include <algorithm>
#include <string>

#include "check.h"

namespace onnxzip::wire {

std::string_view to_string(WireType type) noexcept {
  switch (type) {
    case WireType::kVarint:
      return "varint";
    case WireType::kFixed64:
      return "fixed64";
    case WireType::kLengthDelimited:
      return "length-delimited";
    case WireType::kStartGroup:
      return "start-group";
    case WireType::kEndGroup:
      return "end-group";
    case WireType::kFixed32:
      return "fixed32";
  }
  return "invalid";
}

DecodedVarint decode_varint_slow(const std::uint8_t* p, const std::uint8_t* end) noexcept {
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < kMaxVarintSize; ++i) {
    if (p + i >= end) return {0, nullptr, VarintStatus::kTruncated};
    const std::uint8_t byte = p[i];
    if (i == kMaxVarintSize - 1) {
      // The 10th byte holds bit 63 only: a continuation bit means an 11th byte, any other
      // payload bit a value past 64 bits.
      if (byte & 0x80) return {0, nullptr, VarintStatus::kTooLong};
      if (byte > 1) return {0, nullptr, VarintStatus::kOverflow};
    }
    value |= static_cast<std::uint64_t>(byte & 0x7f) << (7 * i);
    if (!(byte & 0x80)) return {value, p + i + 1, VarintStatus::kOk};
  }
  ONNXZIP_DCHECK(false);  // The 10th byte decided above.
  return {0, nullptr, VarintStatus::kTooLong};
}

void WireReader::fail(ErrorCode code, std::uint64_t offset, const WireContext& where,
                      std::string_view problem) const {
  std::string message;
  message.reserve(where.message.size() + where.field.size() + problem.size() + 40);
  message.append("offset ").append(std::to_string(offset)).append(": ");
  message.append(where.message);
  if (!where.field.empty()) message.append(".").append(where.field);
  message.append(": ").append(problem);
  throw Error(code, {.file = std::string(source_)}, std::move(message));
}

void WireReader::fail_varint(VarintStatus status, const WireContext& where) const {
  switch (status) {
    case VarintStatus::kTruncated:
      fail(ErrorCode::kCorrupt, offset(), where, "truncated varint");
    case VarintStatus::kTooLong:
      fail(ErrorCode::kCorrupt, offset(), where, "varint longer than 10 bytes");
    case VarintStatus::kOverflow:
      fail(ErrorCode::kCorrupt, offset(), where, "varint overflows 64 bits");
    case VarintStatus::kOk:
      break;
  }
  fail(ErrorCode::kCorrupt, offset(), where, "invalid varint");
}

void WireReader::fail_short(std::uint64_t wanted, const WireContext& where) const {
  fail(ErrorCode::kCorrupt, offset(), where,
       "needs " + std::to_string(wanted) + " bytes but only " + std::to_string(remaining()) +
           " remain");
}

void WireReader::fail_length(const std::uint8_t* length_at, std::uint64_t length,
                             std::uint64_t remaining, const WireContext& where) const {
  fail(ErrorCode::kCorrupt, offset_of(length_at), where,
       "length " + std::to_string(length) + " exceeds the " + std::to_string(remaining) +
           " bytes remaining");
}

void WireReader::fail_scan(const ScannedValue& value, WireType type,
                           const WireContext& where) const {
  switch (value.status) {
    case ScanStatus::kBadVarint:
      fail_varint(value.varint, where);
    case ScanStatus::kShort:
      fail_short(type == WireType::kFixed64 ? 8 : 4, where);
    case ScanStatus::kLengthPastEnd:
      fail_length(p_, value.length, static_cast<std::uint64_t>(end_ - value.next), where);
    case ScanStatus::kOk:
    case ScanStatus::kBadTag:
    case ScanStatus::kGroup:
      break;
  }
  fail(ErrorCode::kCorrupt, offset(), where, "malformed value");  // Callers pass no other.
}

FieldTag WireReader::read_tag_slow(const WireContext& where) {
  const ScannedTag tag = scan_tag(p_, end_);
  if (tag.status == ScanStatus::kBadVarint) fail_varint(tag.varint, where);
  if (tag.status == ScanStatus::kBadTag) {
    if (tag.number == 0 || tag.number > kMaxFieldNumber) {
      fail(ErrorCode::kCorrupt, offset(), where,
           "invalid field number " + std::to_string(tag.number) + " in tag");
    }
    fail(ErrorCode::kCorrupt, offset(), where,
         "invalid wire type " + std::to_string(tag.type) + " in tag of field " +
             std::to_string(tag.number));
  }
  p_ = tag.next;
  return tag.field_tag();
}

void WireReader::skip_value(FieldTag tag, const WireContext& where, std::uint32_t max_group_depth) {
  if (tag.type == WireType::kStartGroup) {
    skip_group(tag, where, max_group_depth);
    return;
  }
  if (tag.type == WireType::kEndGroup) {
    fail(ErrorCode::kCorrupt, offset(), where,
         "end-group tag of field " + std::to_string(tag.number) + " outside any group");
  }
  const ScannedValue value = scan_value(tag.type, p_, end_);
  if (value.status != ScanStatus::kOk) fail_scan(value, tag.type, where);
  p_ = value.next;
}

void WireReader::skip_group(FieldTag tag, const WireContext& where, std::uint32_t max_group_depth) {
  const std::uint8_t* const group_start = p_;
  if (max_group_depth == 0) {
    fail(ErrorCode::kLimitExceeded, offset(), where, "groups nested too deeply");
  }
  while (true) {
    if (at_end()) {
      fail(ErrorCode::kCorrupt, offset_of(group_start), where,
           "group of field " + std::to_string(tag.number) + " has no end-group tag");
    }
    const std::uint8_t* const inner_start = p_;
    const FieldTag inner = read_tag(where);
    if (inner.type == WireType::kEndGroup) {
      if (inner.number != tag.number) {
        fail(ErrorCode::kCorrupt, offset_of(inner_start), where,
             "end-group tag of field " + std::to_string(inner.number) +
                 " closes the group of field " + std::to_string(tag.number));
      }
      return;
    }
    skip_value(inner, where, max_group_depth - 1);
  }
}

void WireWriter::flush() {
  if (sink_ != nullptr && cur_ != begin_) {
    const auto size = static_cast<std::size_t>(cur_ - begin_);
    sink_->write(ByteSpan(begin_, size));
    flushed_ += size;
    cur_ = begin_;
  }
}

void WireWriter::make_room(std::size_t size) {
  if (sink_ == nullptr) {
    throw Error(ErrorCode::kBadState,
                "protobuf writer: output exceeds its precomputed size (was the message "
                "modified while it was being serialized?)");
  }
  flush();
  if (static_cast<std::size_t>(end_ - cur_) < size) {
    throw Error(ErrorCode::kInvalidArgument, "protobuf writer: buffer of " +
                                                 std::to_string(end_ - begin_) +
                                                 " bytes cannot hold " + std::to_string(size));
  }
}

void WireWriter::write_bytes_slow(ByteSpan bytes) {
  if (sink_ == nullptr) make_room(bytes.size());  // Throws: the output outgrew its size.
  const auto capacity = static_cast<std::size_t>(end_ - begin_);
  if (bytes.size() >= direct_threshold_ || bytes.size() >= capacity) {
    // Large payloads (tensor data) skip the copy through the buffer.
    flush();
    sink_->write(bytes);
    flushed_ += bytes.size();
    return;
  }
  while (!bytes.empty()) {
    if (cur_ == end_) flush();
    const std::size_t piece = std::min(bytes.size(), static_cast<std::size_t>(end_ - cur_));
    std::memcpy(cur_, bytes.data(), piece);
    cur_ += piece;
    bytes = bytes.subspan(piece);
  }
}

}  // namespace onnxzip::wire
