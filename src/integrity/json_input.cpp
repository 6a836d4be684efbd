#include "json_input.h"

#include "message_text.h"

namespace onnxzip::integrity_detail {

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

namespace {

std::string field(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

}  // namespace

bool JsonTreeBuilder::key(std::string& name) {
  Json::object_t& object = open_.back()->get_ref<Json::object_t&>();
  const auto [place, inserted] = object.try_emplace(std::move(name));
  if (!inserted && duplicate_.empty()) duplicate_ = place->first;
  member_ = &place->second;
  return true;
}

// Where `value` goes: the document, the next item of the open array, or the member whose key
// came last. Pointers into open containers stay valid: a container grows only while it is the
// innermost one, and then no pointer into it is held.
Json* JsonTreeBuilder::add_node(Json value) {
  if (open_.empty()) {
    document_ = std::move(value);
    return &document_;
  }
  Json& parent = *open_.back();
  if (parent.is_array()) {
    Json::array_t& items = parent.get_ref<Json::array_t&>();
    items.push_back(std::move(value));
    return &items.back();
  }
  *member_ = std::move(value);
  return member_;
}

void fail_duplicate_key(const std::string& key, const JsonSource& source) {
  source.fail("the key " + detail::quote(key) +
              " appears twice in one object (a signed document must say one thing)");
}

Json parse_json(ByteSpan bytes, const JsonSource& source) {
  JsonTreeBuilder builder;
  sax_parse(bytes, builder, source);
  if (!builder.duplicate().empty()) fail_duplicate_key(builder.duplicate(), source);
  return std::move(builder).document();
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
