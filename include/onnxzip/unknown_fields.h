// The fields of a protobuf message that its reader did not know, kept to be written back
// (internal/protobuf_wire.h reads and writes them). Anyone may use this header.
#ifndef ONNXZIP_UNKNOWN_FIELDS_H_
#define ONNXZIP_UNKNOWN_FIELDS_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "onnxzip/bytes.h"

namespace onnxzip::wire {

// Fields a reader did not recognise, kept as their exact wire bytes (tag and value) in the order
// they appeared, so that writing them back after the known fields preserves a newer schema's data.
// Every message has one and nearly all are empty, so the bytes live behind a single pointer: an
// empty set costs 8 bytes of the message, not a vector's 24.
class UnknownFields final {
 public:
  UnknownFields() noexcept = default;
  UnknownFields(const UnknownFields& other)
      : bytes_(other.bytes_ ? std::make_unique<std::vector<std::uint8_t>>(*other.bytes_)
                            : nullptr) {}
  UnknownFields(UnknownFields&&) noexcept = default;
  UnknownFields& operator=(const UnknownFields& other) {
    if (this != &other) *this = UnknownFields(other);
    return *this;
  }
  UnknownFields& operator=(UnknownFields&&) noexcept = default;
  ~UnknownFields() = default;

  bool empty() const noexcept { return !bytes_ || bytes_->empty(); }
  std::size_t size() const noexcept { return bytes_ ? bytes_->size() : 0; }
  ByteSpan bytes() const noexcept { return bytes_ ? ByteSpan(*bytes_) : ByteSpan(); }
  // Appends complete fields (tag and value), e.g. from another message's unknown fields.
  void append(ByteSpan field_bytes) {
    if (field_bytes.empty()) return;
    if (!bytes_) bytes_ = std::make_unique<std::vector<std::uint8_t>>();
    bytes_->insert(bytes_->end(), field_bytes.begin(), field_bytes.end());
  }
  void clear() noexcept { bytes_.reset(); }

  friend bool operator==(const UnknownFields& a, const UnknownFields& b) noexcept {
    const ByteSpan x = a.bytes();
    const ByteSpan y = b.bytes();
    return x.size() == y.size() && (x.empty() || std::memcmp(x.data(), y.data(), x.size()) == 0);
  }

 private:
  std::unique_ptr<std::vector<std::uint8_t>> bytes_;
};

}  // namespace onnxzip::wire

#endif  // ONNXZIP_UNKNOWN_FIELDS_H_
