// Private to the library: the one reader of a tensor's external_data, for the four places that
// follow a reference (the archive loader and verifier, ArchiveWriter::finish, repack, the legacy
// reader).
//
// read_external_data reports what the tensor says and judges nothing; each caller applies its
// own rules to the result (spec §7.2 and §9.4 for .onnxz archives, legacy.h for legacy files).
// The faults that every caller refuses are worded here once (reference_fault), so a tensor that
// gives `offset` twice reads the same whichever path finds it.
#ifndef ONNXZIP_SRC_EXTERNAL_DATA_H_
#define ONNXZIP_SRC_EXTERNAL_DATA_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "onnxzip/onnx_model.h"

namespace onnxzip::detail {

inline constexpr std::string_view kLocationKey = "location";
inline constexpr std::string_view kOffsetKey = "offset";
inline constexpr std::string_view kLengthKey = "length";

// One external_data entry as written (a key or value the entry lacks reads as "").
struct ExternalDataKey {
  std::string_view key;
  std::string_view value;
};

// An `offset` or `length` value as written.
struct ExternalDataNumber {
  std::string_view text;
  // Set when `text` is decimal digits only (no sign, no space, at least one digit) and the
  // number is below 2^64.
  std::optional<std::uint64_t> value{};
  // Set also has no leading zero (except "0" itself): the form spec §7.2 requires of `length`.
  bool canonical = false;
};

// A key that names a place (location, offset, length) given more than once.
struct RepeatedExternalKey {
  std::string_view key;
  std::size_t count;
};

// What one tensor's external_data says. Views into the tensor: valid while it lives unchanged.
struct ExternalData {
  std::vector<ExternalDataKey> keys;         // Every entry, in order.
  std::optional<std::string_view> location;  // The first `location`.
  std::optional<ExternalDataNumber> offset;  // The first `offset`.
  std::optional<ExternalDataNumber> length;  // The first `length`.
  // location, offset and length when given more than once, in the order of their first entry.
  std::vector<RepeatedExternalKey> repeated;
  // Every other key, in order: checksum, basepath, and keys nobody defines.
  std::vector<std::string_view> other_keys;
};

ExternalData read_external_data(const TensorProto& tensor);
// The result would point into a tensor that dies at the end of the call's statement.
ExternalData read_external_data(const TensorProto&& tensor) = delete;

// Why the reference has no single place to read from, or "" when it has one. The faults, first
// found first: a location, offset or length given more than once ("external_data has 2 'offset'
// keys"); no location; an empty location; an offset or length that is not a decimal number
// below 2^64. Every reader refuses these, in these words.
std::string reference_fault(const ExternalData& data);

}  // namespace onnxzip::detail

#endif  // ONNXZIP_SRC_EXTERNAL_DATA_H_
