// json_text: the one JSON writer (the integrity entries, the tool's --json), written without a
// document tree, must give the bytes nlohmann/json's dump(2) writes for the same document
// (earlier archives and the spec's vectors were made that way), escaping included.
#include "onnxzip/internal/json_text.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "onnxzip/integrity.h"
#include "support/external_tool.h"
#include "support/scratch_dir.h"
#include "support/test_keys.h"

namespace onnxzip {
namespace {

using Ordered = nlohmann::ordered_json;

std::string nlohmann_text(const Ordered& document) {
  return document.dump(2, ' ', false, Ordered::error_handler_t::replace) + "\n";
}

// Writes `value` through JsonText, as the encoders do.
void write(JsonText& json, const Ordered& value) {
  if (value.is_object()) {
    json.begin_object();
    for (const auto& [key, member] : value.items()) {
      json.key(key);
      write(json, member);
    }
    json.end_object();
  } else if (value.is_array()) {
    json.begin_array();
    for (const Ordered& item : value) write(json, item);
    json.end_array();
  } else if (value.is_string()) {
    json.string(value.get_ref<const std::string&>());
  } else if (value.is_boolean()) {
    json.boolean(value.get<bool>());
  } else if (value.is_null()) {
    json.null();
  } else if (value.is_number_unsigned()) {
    json.number(value.get<std::uint64_t>());
  } else {
    json.number(value.get<std::int64_t>());
  }
}

std::string json_text(const Ordered& document) {
  JsonText json(16);
  write(json, document);
  return std::move(json).finish();
}

TEST(JsonTextTest, LaysOutNestedAndEmptyContainersAsNlohmannDump) {
  const Ordered document = {
      {"a", "b"},
      {"empty array", Ordered::array()},
      {"empty object", Ordered::object()},
      {"nested", {{"list", {1, 2, Ordered::array({Ordered::object(), "x"})}}, {"flag", false}}},
      {"numbers", {0, 18446744073709551615ull, -1, -9223372036854775807ll - 1}},
      {"null", nullptr},
      {"true", true},
      {"objects", Ordered::array({{{"k", "v"}}, {{"k", "w"}, {"l", Ordered::array()}}})}};
  EXPECT_EQ(json_text(document), nlohmann_text(document));
  EXPECT_EQ(json_text(Ordered::array()), "[]\n");
  EXPECT_EQ(json_text(Ordered::object()), "{}\n");
}

TEST(JsonTextTest, EscapesStringsAsNlohmannDumpAndReplacesInvalidUtf8) {
  for (const std::string& text :
       {std::string("plain ASCII ~!@#$%^&*()"), std::string("quote \" and backslash \\"),
        std::string("controls \b\f\n\r\t \x01 \x1f and DEL \x7f"),
        std::string("caf\xc3\xa9 \xe2\x82\xac"), std::string("bad \xff\xfe UTF-8 \xc3"),
        std::string("nul \0 inside", 13), std::string()}) {
    std::string written;
    append_json_string(written, text);
    EXPECT_EQ(written, Ordered(text).dump(-1, ' ', false, Ordered::error_handler_t::replace))
        << text;
    const Ordered document = {{text, text}};
    EXPECT_EQ(json_text(document), nlohmann_text(document)) << text;
  }
}

TEST(JsonTextTest, DigestsAndSignatureAreNlohmannsLayoutOfTheirOwnContent) {
  std::vector<EntryDigest> entries;
  for (const std::string name : {"w\"1", "__MODEL_PROTO", "caf\xc3\xa9", "a\\b"}) {
    entries.push_back(
        {name,
         Sha256::of(ByteSpan(reinterpret_cast<const std::uint8_t*>(name.data()), name.size())),
         name.size() * 1000003, 0xdeadbeef});
  }
  const std::string digests = encode_digests("model \xff \"x\"", entries);
  EXPECT_EQ(digests, nlohmann_text(Ordered::parse(digests)));
  EXPECT_NE(digests.find("\"name\": \"model \xef\xbf\xbd \\\"x\\\"\""), std::string::npos);
  if (!test_support::find_tool("openssl")) GTEST_SKIP() << "no openssl tool";
  const test_support::ScratchDir dir("json_text");
  const PrivateKey key =
      PrivateKey::load(test_support::make_key_pair(dir.path(), "key").private_pem);
  const std::string signature = encode_signature(
      ByteSpan(reinterpret_cast<const std::uint8_t*>(digests.data()), digests.size()), key);
  EXPECT_EQ(signature, nlohmann_text(Ordered::parse(signature)));
  EXPECT_NE(signature.find("\"hint\": \"" + key.key_id() + "\""), std::string::npos);
}

}  // namespace
}  // namespace onnxzip
