// operator== of every ONNX message, expanded from the field lists of onnx_model.h: presence,
// values (floats bit for bit) and unknown fields.
#include "onnxzip/onnx_model.h"

#include <bit>
#include <cstring>

namespace onnxzip {
namespace {

template <class Kind>
struct FieldEquality {
  template <class Value>
  static bool equal(const Value& a, const Value& b) {
    return a == b;
  }
};

// Floating-point values compare by bit pattern: equal messages serialize to equal bytes.
template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

template <>
struct FieldEquality<field::Float> {
  static bool equal(const std::optional<float>& a, const std::optional<float>& b) {
    if (!a || !b) return !a && !b;
    return std::bit_cast<std::uint32_t>(*a) == std::bit_cast<std::uint32_t>(*b);
  }
};
template <>
struct FieldEquality<field::Floats> {
  static bool equal(const std::vector<float>& a, const std::vector<float>& b) {
    return same_bits(a, b);
  }
};
template <>
struct FieldEquality<field::PackedFloats> : FieldEquality<field::Floats> {};
template <>
struct FieldEquality<field::PackedDoubles> {
  static bool equal(const std::vector<double>& a, const std::vector<double>& b) {
    return same_bits(a, b);
  }
};

}  // namespace

#define ONNXZIP_EQUAL_FIELD_(kind, name, number, oneof) \
  &&FieldEquality<field::kind>::equal(a.name, b.name)

#define ONNXZIP_DEFINE_EQUALITY_(Type, Id, Name)                                                   \
  bool operator==(const Type& a, const Type& b) {                                                  \
    return true ONNXZIP_FIELDS_##Id(ONNXZIP_EQUAL_FIELD_) && a.unknown_fields == b.unknown_fields; \
  }

ONNXZIP_ONNX_MESSAGES(ONNXZIP_DEFINE_EQUALITY_)

#undef ONNXZIP_DEFINE_EQUALITY_
#undef ONNXZIP_EQUAL_FIELD_

}  // namespace onnxzip
