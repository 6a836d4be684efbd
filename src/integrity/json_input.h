// Private to the integrity layer: JSON read strictly. The size is checked before parsing, a key
// that appears twice in one object is refused (parsers disagree on which one counts, so a
// signed document must not have one), and each accessor names the field's path when it is
// missing or of the wrong type.
#ifndef ONNXZIP_SRC_JSON_INPUT_H_
#define ONNXZIP_SRC_JSON_INPUT_H_

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "onnxzip/bytes.h"
#include "onnxzip/error.h"

namespace onnxzip::integrity_detail {

using Json = nlohmann::json;

// Where the JSON came from, for errors: the file and the entry phrase ("entry '__DIGESTS'").
struct JsonSource {
  std::string file;
  std::string entry;
  std::uint64_t limit = 0;
  std::string_view limit_name;  // The option that sets `limit`.

  [[noreturn]] void fail(const std::string& problem, ErrorCode code = ErrorCode::kCorrupt) const {
    throw Error(code, ErrorContext{file, "", entry}, problem);
  }
};

// Parses `bytes` as one JSON document (UTF-8): Error(kLimitExceeded) when larger than
// source.limit, Error(kCorrupt) for bad JSON (with the byte offset) or a duplicate key.
Json parse_json(ByteSpan bytes, const JsonSource& source);

// The member `key` of `object` (at `path`), which must be present: Error(kCorrupt) otherwise.
const Json& member(const Json& object, std::string_view key, const std::string& path,
                   const JsonSource& source);
// The same, checked to be of the kind, and the value.
const Json& object_member(const Json& object, std::string_view key, const std::string& path,
                          const JsonSource& source);
const Json& array_member(const Json& object, std::string_view key, const std::string& path,
                         const JsonSource& source);
const std::string& string_member(const Json& object, std::string_view key, const std::string& path,
                                 const JsonSource& source);
// A string member that must equal `expected`.
void expect_string(const Json& object, std::string_view key, std::string_view expected,
                   const std::string& path, const JsonSource& source);
// An unsigned integer member (a JSON number without fraction or sign, below 2^64).
std::uint64_t unsigned_member(const Json& object, std::string_view key, const std::string& path,
                              const JsonSource& source);
// `value` at `path` must be an object: Error(kCorrupt) otherwise.
void expect_object(const Json& value, const std::string& path, const JsonSource& source);

}  // namespace onnxzip::integrity_detail

#endif  // ONNXZIP_SRC_JSON_INPUT_H_
