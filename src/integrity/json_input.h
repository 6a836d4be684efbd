// Private to the integrity layer: JSON read strictly. The size is checked before parsing, a key
// that appears twice in one object is refused (parsers disagree on which one counts, so a
// signed document must not have one), and each accessor names the field's path when it is
// missing or of the wrong type.
#ifndef ONNXZIP_SRC_JSON_INPUT_H_
#define ONNXZIP_SRC_JSON_INPUT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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
    throw Error(code, ErrorContext{.file = file, .entry = entry}, problem);
  }
};

// The deepest nesting of arrays and objects a reader accepts (spec §12.1 item 3); the top-level
// value is at depth 1. A statement or a bundle nests 5 deep; without a bound, a hostile entry
// within the size limit made of '[' costs every handler a frame per byte (gigabytes).
inline constexpr std::size_t kMaxJsonDepth = 64;

// Passes nlohmann's SAX events on to `Handler`, and stops the parse at the first array or object
// deeper than kMaxJsonDepth.
template <class Handler>
class DepthLimitedHandler final {
 public:
  explicit DepthLimitedHandler(Handler& handler) : handler_(handler) {}

  bool null() { return handler_.null(); }
  bool boolean(bool value) { return handler_.boolean(value); }
  bool number_integer(Json::number_integer_t value) { return handler_.number_integer(value); }
  bool number_unsigned(Json::number_unsigned_t value) { return handler_.number_unsigned(value); }
  bool number_float(Json::number_float_t value, const std::string& text) {
    return handler_.number_float(value, text);
  }
  bool string(std::string& value) { return handler_.string(value); }
  bool binary(Json::binary_t& value) { return handler_.binary(value); }
  bool start_object(std::size_t size) { return deeper() && handler_.start_object(size); }
  bool key(std::string& name) { return handler_.key(name); }
  bool end_object() {
    --depth_;
    return handler_.end_object();
  }
  bool start_array(std::size_t size) { return deeper() && handler_.start_array(size); }
  bool end_array() {
    --depth_;
    return handler_.end_array();
  }
  template <class Exception>
  bool parse_error(std::size_t position, const std::string& token, const Exception& error) {
    return handler_.parse_error(position, token, error);
  }

  bool too_deep() const noexcept { return too_deep_; }

 private:
  bool deeper() {
    too_deep_ = ++depth_ > kMaxJsonDepth;
    return !too_deep_;
  }

  Handler& handler_;
  std::size_t depth_ = 0;
  bool too_deep_ = false;
};

// Feeds `bytes`, one JSON document (UTF-8), to `handler` (nlohmann's SAX interface, whose
// parse_error throws what it is given): Error(kLimitExceeded) when larger than source.limit,
// unread, and Error(kCorrupt) for bad JSON, with the byte offset, or for arrays and objects
// nested deeper than kMaxJsonDepth.
template <class Handler>
void sax_parse(ByteSpan bytes, Handler& handler, const JsonSource& source) {
  if (bytes.size() > source.limit) {
    source.fail(std::to_string(bytes.size()) + " bytes, more than the limit of " +
                    std::to_string(source.limit) + " (" + std::string(source.limit_name) + ")",
                ErrorCode::kLimitExceeded);
  }
  try {
    DepthLimitedHandler<Handler> limited(handler);
    Json::sax_parse(bytes.begin(), bytes.end(), &limited);
    if (limited.too_deep()) {
      source.fail("not valid JSON for this entry: arrays and objects nested more than " +
                  std::to_string(kMaxJsonDepth) + " deep (spec §12.1 item 3)");
    }
  } catch (const Json::parse_error& error) {
    source.fail("not valid JSON at byte " + std::to_string(error.byte) + " (" +
                std::string(error.what()) + ")");
  } catch (const Json::exception& error) {
    source.fail(std::string("not valid JSON (") + error.what() + ")");
  }
}

// A SAX handler building the document tree as nlohmann's own DOM parser builds it, that also
// notes the first key an object has twice: it looks the key up in the object being built, which
// the tree needs anyway (a callback parser's set of copied keys per object was most of a parse's
// time). Fed one value, scalar or container, it holds that value's tree.
class JsonTreeBuilder final {
 public:
  bool null() { return value(Json(nullptr)); }
  bool boolean(bool value) { return this->value(Json(value)); }
  bool number_integer(Json::number_integer_t value) { return this->value(Json(value)); }
  bool number_unsigned(Json::number_unsigned_t value) { return this->value(Json(value)); }
  bool number_float(Json::number_float_t value, const std::string& /*text*/) {
    return this->value(Json(value));
  }
  // The parser clears its token after each call: the text is moved, not copied.
  bool string(std::string& value) { return this->value(Json(std::move(value))); }
  bool binary(Json::binary_t& value) { return this->value(Json(std::move(value))); }
  // A scalar value, as any of the above gives it.
  bool value(Json value) {
    add_node(std::move(value));
    return true;
  }
  bool start_object(std::size_t /*size*/) {
    open_.push_back(add_node(Json(Json::value_t::object)));
    return true;
  }
  bool key(std::string& name);
  bool end_object() {
    open_.pop_back();
    return true;
  }
  bool start_array(std::size_t /*size*/) {
    open_.push_back(add_node(Json(Json::value_t::array)));
    return true;
  }
  bool end_array() {
    open_.pop_back();
    return true;
  }
  template <class Exception>
  bool parse_error(std::size_t /*position*/, const std::string& /*token*/, const Exception& error) {
    throw error;
  }

  // A container of the value is still open: the value is not whole yet.
  bool building() const noexcept { return !open_.empty(); }
  // The first key an object had twice; "" for none.
  const std::string& duplicate() const noexcept { return duplicate_; }
  Json document() && { return std::move(document_); }

 private:
  Json* add_node(Json value);

  Json document_;
  std::vector<Json*> open_;
  Json* member_ = nullptr;
  std::string duplicate_;
};

// Parses `bytes` as one JSON document (UTF-8): Error(kLimitExceeded) when larger than
// source.limit, Error(kCorrupt) for bad JSON (with the byte offset) or a duplicate key.
Json parse_json(ByteSpan bytes, const JsonSource& source);

// "a string", "an object", "null"...: what `value` is, for a message.
std::string kind_of(const Json& value);
// The error for a key an object has twice.
[[noreturn]] void fail_duplicate_key(const std::string& key, const JsonSource& source);

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
