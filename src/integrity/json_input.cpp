#include "json_input.h"

#include <set>
#include <vector>

#include "message_text.h"

namespace onnxzip::integrity_detail {
namespace {

std::string kind_of(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::object:
      return "an object";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float:
      return "a number";
    case Json::value_t::binary:
    case Json::value_t::discarded:
      break;
  }
  return "not a JSON value";
}

std::string field(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

}  // namespace

Json parse_json(ByteSpan bytes, const JsonSource& source) {
  if (bytes.size() > source.limit) {
    source.fail(std::to_string(bytes.size()) + " bytes, more than the limit of " +
                    std::to_string(source.limit) + " (" + std::string(source.limit_name) + ")",
                ErrorCode::kLimitExceeded);
  }
  // One set of keys per open object; the parser calls back in document order.
  std::vector<std::set<std::string>> open_objects;
  std::string duplicate;
  const Json::parser_callback_t callback = [&](int /*depth*/, Json::parse_event_t event,
                                               Json& parsed) {
    switch (event) {
      case Json::parse_event_t::object_start:
        open_objects.emplace_back();
        break;
      case Json::parse_event_t::object_end:
        if (!open_objects.empty()) open_objects.pop_back();
        break;
      case Json::parse_event_t::key:
        if (!open_objects.empty() &&
            !open_objects.back().insert(parsed.get<std::string>()).second && duplicate.empty()) {
          duplicate = parsed.get<std::string>();
        }
        break;
      case Json::parse_event_t::array_start:
      case Json::parse_event_t::array_end:
      case Json::parse_event_t::value:
        break;
    }
    return true;
  };
  Json document;
  try {
    document = Json::parse(bytes.begin(), bytes.end(), callback);
  } catch (const Json::parse_error& error) {
    source.fail("not valid JSON at byte " + std::to_string(error.byte) + " (" +
                std::string(error.what()) + ")");
  } catch (const Json::exception& error) {
    source.fail(std::string("not valid JSON (") + error.what() + ")");
  }
  if (!duplicate.empty()) {
    source.fail("the key " + detail::quote(duplicate) +
                " appears twice in one object (a signed document must say one thing)");
  }
  return document;
}

void expect_object(const Json& value, const std::string& path, const JsonSource& source) {
  if (!value.is_object()) {
    source.fail((path.empty() ? std::string("the document") : path) + " is " + kind_of(value) +
                ", expected an object");
  }
}

const Json& member(const Json& object, std::string_view key, const std::string& path,
                   const JsonSource& source) {
  expect_object(object, path, source);
  const auto found = object.find(key);
  if (found == object.end()) source.fail(field(path, key) + " is missing");
  return *found;
}

const Json& object_member(const Json& object, std::string_view key, const std::string& path,
                          const JsonSource& source) {
  const Json& value = member(object, key, path, source);
  expect_object(value, field(path, key), source);
  return value;
}

const Json& array_member(const Json& object, std::string_view key, const std::string& path,
                         const JsonSource& source) {
  const Json& value = member(object, key, path, source);
  if (!value.is_array()) {
    source.fail(field(path, key) + " is " + kind_of(value) + ", expected an array");
  }
  return value;
}

const std::string& string_member(const Json& object, std::string_view key, const std::string& path,
                                 const JsonSource& source) {
  const Json& value = member(object, key, path, source);
  if (!value.is_string()) {
    source.fail(field(path, key) + " is " + kind_of(value) + ", expected a string");
  }
  return value.get_ref<const std::string&>();
}

void expect_string(const Json& object, std::string_view key, std::string_view expected,
                   const std::string& path, const JsonSource& source) {
  const std::string& value = string_member(object, key, path, source);
  if (value != expected) {
    source.fail(field(path, key) + " is " + detail::quote(value) + ", expected " +
                detail::quote(expected));
  }
}

std::uint64_t unsigned_member(const Json& object, std::string_view key, const std::string& path,
                              const JsonSource& source) {
  const Json& value = member(object, key, path, source);
  if (!value.is_number_unsigned() &&
      !(value.is_number_integer() && value.get<std::int64_t>() >= 0)) {
    source.fail(field(path, key) + " is " + kind_of(value) +
                (value.is_number() ? " that is not a whole number from 0 to 2^64 - 1" : "") +
                ", expected an unsigned integer");
  }
  return value.get<std::uint64_t>();
}

}  // namespace onnxzip::integrity_detail
