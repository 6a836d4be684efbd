#include "onnxzip/bytes.h"

#include <cstring>
#include <new>
#include <string>

#include "onnxzip/error.h"
#include "page_advice.h"

namespace onnxzip {

ByteSpan checked_subspan(ByteSpan whole, std::uint64_t offset, std::uint64_t length,
                         std::string_view what) {
  if (!fits(offset, length, whole.size())) {
    throw Error(ErrorCode::kCorrupt, std::string(what) + ": range at offset " +
                                         std::to_string(offset) + " of length " +
                                         std::to_string(length) + " exceeds the " +
                                         std::to_string(whole.size()) + " bytes available");
  }
  return whole.subspan(static_cast<std::size_t>(offset), static_cast<std::size_t>(length));
}

std::uint64_t checked_add(std::uint64_t a, std::uint64_t b, std::string_view what) {
  std::uint64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) {
    throw Error(ErrorCode::kCorrupt, std::string(what) + ": " + std::to_string(a) + " + " +
                                         std::to_string(b) + " overflows 64 bits");
  }
  return sum;
}

std::uint64_t checked_mul(std::uint64_t a, std::uint64_t b, std::string_view what) {
  std::uint64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) {
    throw Error(ErrorCode::kCorrupt, std::string(what) + ": " + std::to_string(a) + " * " +
                                         std::to_string(b) + " overflows 64 bits");
  }
  return product;
}

void OwnedBytes::AlignedDelete::operator()(std::uint8_t* p) const noexcept {
  ::operator delete[](p, std::align_val_t{alignment});
}

OwnedBytes::OwnedBytes(std::size_t size, std::size_t alignment)
    : size_(size), alignment_(alignment) {
  if (!is_power_of_two(alignment)) {
    throw Error(ErrorCode::kInvalidArgument,
                "buffer alignment " + std::to_string(alignment) + " is not a power of two");
  }
  if (size != 0) {
    auto* p = static_cast<std::uint8_t*>(::operator new[](size, std::align_val_t{alignment}));
    data_ = std::unique_ptr<std::uint8_t[], AlignedDelete>(p, AlignedDelete{alignment});
    // Owned buffers are about to be filled (copies of tensors, serialized models).
    detail::advise_huge_pages(p, size);
  }
}

OwnedBytes OwnedBytes::copy_of(ByteSpan bytes, std::size_t alignment) {
  OwnedBytes result(bytes.size(), alignment);
  if (!bytes.empty()) std::memcpy(result.data(), bytes.data(), bytes.size());
  return result;
}

OwnedBytes::OwnedBytes(const OwnedBytes& other)
    : OwnedBytes(copy_of(other.span(), other.alignment_)) {}

OwnedBytes& OwnedBytes::operator=(const OwnedBytes& other) {
  if (this != &other) *this = copy_of(other.span(), other.alignment_);
  return *this;
}

bool equal_bytes(ByteSpan a, ByteSpan b) noexcept {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size()) == 0);
}

TensorBytes TensorBytes::owned(OwnedBytes bytes) noexcept {
  TensorBytes result;
  result.storage_ = std::move(bytes);
  result.view_ = result.storage_.span();
  return result;
}

TensorBytes TensorBytes::copy_of(ByteSpan bytes) { return owned(OwnedBytes::copy_of(bytes)); }

TensorBytes TensorBytes::borrowed(ByteSpan bytes, OwnerToken owner) noexcept {
  TensorBytes result;
  result.owner_ = std::move(owner);
  result.view_ = bytes;
  result.borrowed_ = true;
  return result;
}

void TensorBytes::make_owned() {
  if (borrowed_) *this = copy_of(view_);
}

void TensorBytes::clear() noexcept { *this = TensorBytes(); }

TensorBytes::TensorBytes(const TensorBytes& other)
    : storage_(other.storage_), owner_(other.owner_), borrowed_(other.borrowed_) {
  view_ = borrowed_ ? other.view_ : storage_.span();
}

TensorBytes& TensorBytes::operator=(const TensorBytes& other) {
  if (this != &other) {
    TensorBytes copy(other);
    *this = std::move(copy);
  }
  return *this;
}

// Moving an OwnedBytes keeps its heap pointer, so the view stays valid in both modes.
TensorBytes::TensorBytes(TensorBytes&& other) noexcept
    : storage_(std::move(other.storage_)),
      owner_(std::move(other.owner_)),
      view_(other.view_),
      borrowed_(other.borrowed_) {
  other.view_ = {};
  other.borrowed_ = false;
}

TensorBytes& TensorBytes::operator=(TensorBytes&& other) noexcept {
  if (this != &other) {
    storage_ = std::move(other.storage_);
    owner_ = std::move(other.owner_);
    view_ = other.view_;
    borrowed_ = other.borrowed_;
    other.view_ = {};
    other.borrowed_ = false;
  }
  return *this;
}

bool operator==(const TensorBytes& a, const TensorBytes& b) noexcept {
  return equal_bytes(a.view_, b.view_);
}

}  // namespace onnxzip
