// Bytes and who owns them.
//
// ByteSpan borrows and never owns. OwnedBytes is a heap buffer that owns its bytes and is aligned
// (64 bytes by default) so tensor payloads copied into it stay SIMD-friendly. TensorBytes holds a
// tensor's payload in one of two modes: owned (an OwnedBytes), or borrowed (a ByteSpan plus an
// OwnerToken that keeps the backing memory, typically a file mapping, alive for as long as any
// TensorBytes refers to it, or kNoOwner when the caller keeps that memory alive).
//
// fits() / checked_subspan() / checked_add() / checked_mul() are the one place where untrusted
// numbers from a file become offsets, sizes or allocations. Every module may use this header.
#ifndef ONNXZIP_BYTES_H_
#define ONNXZIP_BYTES_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

namespace onnxzip {

using ByteSpan = std::span<const std::uint8_t>;
using MutableByteSpan = std::span<std::uint8_t>;

// Keeps memory that borrowed bytes point into alive. Type-erased: a mapping, a buffer, anything.
using OwnerToken = std::shared_ptr<const void>;

// The owner token that says there is none: whatever borrows with it points into memory that the
// caller alone keeps alive (and unchanged) for as long as it is used. Every function that borrows
// asks for a token, without a default, so that borrowing without one is always spelled out.
inline const OwnerToken kNoOwner{};

// True when [offset, offset + length) lies within [0, size). Cannot overflow.
constexpr bool fits(std::uint64_t offset, std::uint64_t length, std::uint64_t size) noexcept {
  return length <= size && offset <= size - length;
}

// whole[offset, offset + length), or Error(kCorrupt) naming `what` and the range.
ByteSpan checked_subspan(ByteSpan whole, std::uint64_t offset, std::uint64_t length,
                         std::string_view what);

// a + b and a * b, or Error(kCorrupt) naming `what` when the result does not fit in 64 bits.
std::uint64_t checked_add(std::uint64_t a, std::uint64_t b, std::string_view what);
std::uint64_t checked_mul(std::uint64_t a, std::uint64_t b, std::string_view what);

// Rounds `value` up to a multiple of `alignment` (a power of two, non-zero).
constexpr std::uint64_t align_up(std::uint64_t value, std::uint64_t alignment) noexcept {
  return (value + alignment - 1) & ~(alignment - 1);
}

constexpr bool is_power_of_two(std::uint64_t value) noexcept {
  return value != 0 && (value & (value - 1)) == 0;
}

inline constexpr std::size_t kDefaultBufferAlignment = 64;

// An owned, aligned, fixed-size heap buffer. Contents start uninitialized. Copying copies bytes.
class OwnedBytes final {
 public:
  OwnedBytes() noexcept = default;
  explicit OwnedBytes(std::size_t size, std::size_t alignment = kDefaultBufferAlignment);
  static OwnedBytes copy_of(ByteSpan bytes, std::size_t alignment = kDefaultBufferAlignment);

  OwnedBytes(const OwnedBytes& other);
  OwnedBytes& operator=(const OwnedBytes& other);
  OwnedBytes(OwnedBytes&& other) noexcept = default;
  OwnedBytes& operator=(OwnedBytes&& other) noexcept = default;

  std::uint8_t* data() noexcept { return data_.get(); }
  const std::uint8_t* data() const noexcept { return data_.get(); }
  std::size_t size() const noexcept { return size_; }
  std::size_t alignment() const noexcept { return alignment_; }
  bool empty() const noexcept { return size_ == 0; }
  ByteSpan span() const noexcept { return {data_.get(), size_}; }
  MutableByteSpan mutable_span() noexcept { return {data_.get(), size_}; }

 private:
  struct AlignedDelete {
    std::size_t alignment;
    void operator()(std::uint8_t* p) const noexcept;
  };
  std::unique_ptr<std::uint8_t[], AlignedDelete> data_{nullptr, AlignedDelete{1}};
  std::size_t size_ = 0;
  std::size_t alignment_ = 1;
};

// A tensor payload: owned, or borrowed with an owner token or kNoOwner (see the header comment).
// Copying an owned TensorBytes copies the bytes; copying a borrowed one shares the pointer and
// the token. Equality compares bytes, never modes.
class TensorBytes final {
 public:
  TensorBytes() noexcept = default;
  static TensorBytes owned(OwnedBytes bytes) noexcept;
  static TensorBytes copy_of(ByteSpan bytes);
  // Borrows `bytes`, keeping `owner` alive with them; with kNoOwner the caller must keep the
  // memory alive as long as this payload or a copy of it is used.
  static TensorBytes borrowed(ByteSpan bytes, OwnerToken owner) noexcept;

  ByteSpan view() const noexcept { return view_; }
  const std::uint8_t* data() const noexcept { return view_.data(); }
  std::size_t size() const noexcept { return view_.size(); }
  bool empty() const noexcept { return view_.empty(); }

  bool is_owned() const noexcept { return !borrowed_; }
  bool is_borrowed() const noexcept { return borrowed_; }
  const OwnerToken& owner() const noexcept { return owner_; }

  // Turns a borrowed payload into an owned copy; a no-op when already owned.
  void make_owned();
  void clear() noexcept;

  TensorBytes(const TensorBytes& other);
  TensorBytes& operator=(const TensorBytes& other);
  TensorBytes(TensorBytes&& other) noexcept;
  TensorBytes& operator=(TensorBytes&& other) noexcept;
  ~TensorBytes() = default;

  friend bool operator==(const TensorBytes& a, const TensorBytes& b) noexcept;

 private:
  OwnedBytes storage_;  // Used in owned mode only.
  OwnerToken owner_;    // Used in borrowed mode only; may be kNoOwner.
  ByteSpan view_;       // The payload, in either mode.
  bool borrowed_ = false;
};

bool equal_bytes(ByteSpan a, ByteSpan b) noexcept;

}  // namespace onnxzip

#endif  // ONNXZIP_BYTES_H_
