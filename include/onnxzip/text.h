// Text: the value of a string or bytes field of the object model (onnx_model.h).
//
// A Text is owned (it holds a copy, like std::string, short values inline without an allocation)
// or borrowed (a pointer and a length into bytes someone else keeps alive). parse_model with
// no_copy = true from a caller's bytes makes every string field a borrowed Text pointing into
// those bytes, so that parsing a graph of many named nodes does not allocate once per name; as
// for borrowed tensor payloads, the caller must then keep the bytes alive and unchanged for as
// long as the model (or a copy of any part of it) is used. Every other parse, and every Text a
// program builds, owns its bytes. Copying a borrowed Text borrows the same bytes; own() turns a
// Text (and own_strings() in onnx_codec.h a whole message) into owned copies.
//
// Text converts implicitly to std::string_view (free) and to std::string (a copy; str() spells it
// out), and compares with std::string, std::string_view and C strings. Mutating a borrowed Text
// first makes it owned. The bytes are not required to be UTF-8 and may contain NUL, so there is no
// c_str(). Anyone may use this header.
#ifndef ONNXZIP_TEXT_H_
#define ONNXZIP_TEXT_H_

#include <compare>
#include <cstddef>
#include <cstring>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>

namespace onnxzip {

class Text final {
 public:
  using value_type = char;
  using size_type = std::size_t;
  using const_iterator = const char*;
  using iterator = const char*;

  Text() noexcept { set_empty(); }
  Text(std::string_view value) : Text() { assign_owned(value.data(), value.size()); }    // NOLINT
  Text(const std::string& value) : Text() { assign_owned(value.data(), value.size()); }  // NOLINT
  Text(const char* value) : Text() { assign_owned(value, std::strlen(value)); }          // NOLINT
  Text(const char* data, std::size_t size) : Text() { assign_owned(data, size); }
  Text(std::nullptr_t) = delete;

  // A Text that points at `value` without copying it: `value` must outlive it and its copies.
  static Text borrow(std::string_view value) noexcept {
    Text text;
    text.data_ = value.data();
    text.size_ = value.size();
    text.capacity_ = kBorrowed;
    return text;
  }

  Text(const Text& other) : Text() {
    if (other.borrowed()) {
      data_ = other.data_;
      size_ = other.size_;
      capacity_ = kBorrowed;
    } else {
      assign_owned(other.data_, other.size_);
    }
  }
  Text(Text&& other) noexcept : Text() { take(other); }
  Text& operator=(const Text& other) {
    if (this != &other) {
      Text copy(other);
      release();
      take(copy);
    }
    return *this;
  }
  Text& operator=(Text&& other) noexcept {
    if (this != &other) {
      release();
      take(other);
    }
    return *this;
  }
  Text& operator=(std::string_view value) { return *this = Text(value); }
  Text& operator=(const std::string& value) { return *this = Text(value); }
  Text& operator=(const char* value) { return *this = Text(value); }
  ~Text() { release(); }

  const char* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  std::size_t length() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  const char* begin() const noexcept { return data_; }
  const char* end() const noexcept { return data_ + size_; }
  char operator[](std::size_t index) const noexcept { return data_[index]; }
  char front() const noexcept { return data_[0]; }
  char back() const noexcept { return data_[size_ - 1]; }

  // True when the bytes are someone else's (see borrow()).
  bool borrowed() const noexcept { return data_ != local_ && capacity_ == kBorrowed; }
  // Makes a borrowed Text own a copy of its bytes; an owned one is left as it is.
  void own() {
    if (borrowed()) assign_owned(data_, size_);
  }

  std::string_view view() const noexcept { return {data_, size_}; }
  operator std::string_view() const noexcept { return view(); }  // NOLINT
  std::string str() const { return std::string(data_, size_); }
  // For code written against std::string members (a map key, std::stoull): a copy.
  operator std::string() const { return str(); }  // NOLINT

  void clear() noexcept {
    release();
    set_empty();
  }
  Text& append(std::string_view more);
  Text& operator+=(std::string_view more) { return append(more); }
  Text& operator+=(char c) { return append(std::string_view(&c, 1)); }

  friend bool operator==(const Text& a, const Text& b) noexcept { return a.view() == b.view(); }
  friend bool operator==(const Text& a, std::string_view b) noexcept { return a.view() == b; }
  friend bool operator==(const Text& a, const std::string& b) noexcept { return a.view() == b; }
  friend bool operator==(const Text& a, const char* b) noexcept {
    return a.view() == std::string_view(b);
  }
  friend std::strong_ordering operator<=>(const Text& a, const Text& b) noexcept {
    return a.view() <=> b.view();
  }
  friend std::strong_ordering operator<=>(const Text& a, std::string_view b) noexcept {
    return a.view() <=> b;
  }
  friend std::strong_ordering operator<=>(const Text& a, const std::string& b) noexcept {
    return a.view() <=> std::string_view(b);
  }
  friend std::strong_ordering operator<=>(const Text& a, const char* b) noexcept {
    return a.view() <=> std::string_view(b);
  }

  friend std::string operator+(const Text& a, std::string_view b) {
    std::string joined(a.view());
    joined += b;
    return joined;
  }
  friend std::string operator+(std::string_view a, const Text& b) {
    std::string joined(a);
    joined += b.view();
    return joined;
  }
  friend std::string operator+(const Text& a, const Text& b) {
    std::string joined(a.view());
    joined += b.view();
    return joined;
  }
  friend std::string operator+(const Text& a, const char* b) { return a + std::string_view(b); }
  friend std::string operator+(const char* a, const Text& b) { return std::string_view(a) + b; }
  friend std::string operator+(const Text& a, const std::string& b) {
    return a + std::string_view(b);
  }
  friend std::string operator+(const std::string& a, const Text& b) {
    return std::string_view(a) + b;
  }

 private:
  static constexpr std::size_t kLocalCapacity = 15;
  static constexpr std::size_t kBorrowed = static_cast<std::size_t>(-1);

  bool on_heap() const noexcept { return data_ != local_ && capacity_ != kBorrowed; }
  void set_empty() noexcept {
    local_[0] = '\0';
    data_ = local_;
    size_ = 0;
  }
  void release() noexcept {
    if (on_heap()) delete[] const_cast<char*>(data_);
  }
  // Replaces the value with an owned copy of [data, data + size), which may point into this Text.
  void assign_owned(const char* data, std::size_t size);
  // Moves `other`'s value here (this holds nothing) and leaves `other` empty.
  void take(Text& other) noexcept {
    size_ = other.size_;
    if (other.data_ == other.local_) {
      std::memcpy(local_, other.local_, kLocalCapacity + 1);
      data_ = local_;
    } else {
      data_ = other.data_;
      capacity_ = other.capacity_;
    }
    other.set_empty();
  }

  const char* data_;
  std::size_t size_;
  union {
    char local_[kLocalCapacity + 1];
    std::size_t capacity_;  // Heap bytes allocated (plus a NUL), or kBorrowed.
  };
};

std::ostream& operator<<(std::ostream& out, const Text& text);

}  // namespace onnxzip

template <>
struct std::hash<onnxzip::Text> {
  std::size_t operator()(const onnxzip::Text& text) const noexcept {
    return std::hash<std::string_view>()(text.view());
  }
};

#endif  // ONNXZIP_TEXT_H_
