// The `__DIGESTS` statement (spec §12.2): an in-toto Statement v1 shaped exactly as
// model_signing's v1.0 predicate describes a model folder ("files" serialization, resources in
// byte order of their names, the subject digest over the resource digests), plus an `onnxzip`
// record of the ZIP facts that v1.0 verifiers ignore.
#include <algorithm>
#include <string>
#include <unordered_set>
#include <utility>

#include "json_input.h"
#include "json_output.h"
#include "message_text.h"
#include "onnxzip/error.h"
#include "onnxzip/integrity.h"

namespace onnxzip {
namespace {

using integrity_detail::Json;
using integrity_detail::JsonSource;

constexpr std::string_view kStatementType = "https://in-toto.io/Statement/v1";
constexpr std::string_view kPredicateType = "https://model_signing/signature/v1.0";
constexpr std::string_view kAlgorithm = "sha256";

std::string crc_hex(std::uint32_t crc) {
  const std::uint8_t bytes[4] = {
      static_cast<std::uint8_t>(crc >> 24), static_cast<std::uint8_t>(crc >> 16),
      static_cast<std::uint8_t>(crc >> 8), static_cast<std::uint8_t>(crc)};
  return to_hex(bytes);
}

// Lower-case hex of exactly out.size() bytes; false for anything else (upper case included:
// model_signing writes lower case, and one spelling per digest keeps the bytes canonical).
bool parse_hex(std::string_view text, std::span<std::uint8_t> out) {
  if (text.size() != out.size() * 2) return false;
  const auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < out.size(); ++i) {
    const int high = digit(text[2 * i]);
    const int low = digit(text[2 * i + 1]);
    if (high < 0 || low < 0) return false;
    out[i] = static_cast<std::uint8_t>(high * 16 + low);
  }
  return true;
}

Sha256Digest digest_member(const Json& object, std::string_view key, const std::string& path,
                           const JsonSource& source) {
  const std::string& text = integrity_detail::string_member(object, key, path, source);
  Sha256Digest digest{};
  if (!parse_hex(text, digest)) {
    source.fail(path + "." + std::string(key) + " is " + detail::quote(text) +
                ", not 64 lower-case hex digits");
  }
  return digest;
}

}  // namespace

std::string encode_digests(std::string_view model_name, std::vector<EntryDigest> entries) {
  std::sort(entries.begin(), entries.end(),
            [](const EntryDigest& a, const EntryDigest& b) { return a.name < b.name; });
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].name.empty()) {
      throw Error(ErrorCode::kInvalidArgument, "__DIGESTS: an entry without a name");
    }
    if (i > 0 && entries[i].name == entries[i - 1].name) {
      throw Error(ErrorCode::kInvalidArgument,
                  "__DIGESTS: entry " + detail::quote(entries[i].name) + " given twice");
    }
  }
  const Sha256Digest root = root_digest(entries);
  // About 250 bytes an entry: its resource and its facts.
  integrity_detail::JsonText json(1024 + 256 * entries.size());
  json.begin_object();
  json.key("_type");
  json.string(kStatementType);
  json.key("subject");
  json.begin_array();
  json.begin_object();
  json.key("name");
  json.string(model_name);  // Invalid UTF-8 becomes U+FFFD instead of an exception.
  json.key("digest");
  json.begin_object();
  json.key("sha256");
  json.string(to_hex(root));
  json.end_object();
  json.end_object();
  json.end_array();
  json.key("predicateType");
  json.string(kPredicateType);
  json.key("predicate");
  json.begin_object();
  json.key("serialization");
  json.begin_object();
  json.key("method");
  json.string("files");
  json.key("hash_type");
  json.string(kAlgorithm);
  json.key("allow_symlinks");
  json.boolean(false);
  json.key("ignore_paths");
  json.begin_array();
  json.string(kDigestsEntryName);
  json.string(kSignatureEntryName);
  json.end_array();
  json.end_object();
  json.key("resources");
  json.begin_array();
  for (const EntryDigest& entry : entries) {
    json.begin_object();
    json.key("name");
    json.string(entry.name);
    json.key("algorithm");
    json.string(kAlgorithm);
    json.key("digest");
    json.string(to_hex(entry.sha256));
    json.end_object();
  }
  json.end_array();
  json.key("onnxzip");
  json.begin_object();
  json.key("format_version");
  json.string(kIntegrityFormatVersion);
  json.key("entries");
  json.begin_array();
  for (const EntryDigest& entry : entries) {
    json.begin_object();
    json.key("name");
    json.string(entry.name);
    json.key("size");
    json.number(entry.size);
    json.key("crc32");
    json.string(crc_hex(entry.crc32));
    json.end_object();
  }
  json.end_array();
  json.end_object();
  json.end_object();
  json.end_object();
  return std::move(json).finish();
}

DigestStatement decode_digests(ByteSpan json, const IntegrityLimits& limits,
                               std::string_view source_name) {
  const JsonSource source{std::string(source_name), "entry " + detail::quote(kDigestsEntryName),
                          limits.max_digests_size, "IntegrityLimits::max_digests_size"};
  const Json document = integrity_detail::parse_json(json, source);
  integrity_detail::expect_object(document, "", source);
  integrity_detail::expect_string(document, "_type", kStatementType, "", source);
  integrity_detail::expect_string(document, "predicateType", kPredicateType, "", source);

  DigestStatement statement;
  const Json& subjects = integrity_detail::array_member(document, "subject", "", source);
  if (subjects.size() != 1) {
    source.fail("subject has " + std::to_string(subjects.size()) + " items, expected 1");
  }
  statement.model_name = integrity_detail::string_member(subjects[0], "name", "subject[0]", source);
  const Json& subject_digest =
      integrity_detail::object_member(subjects[0], "digest", "subject[0]", source);
  const Sha256Digest subject_sha256 =
      digest_member(subject_digest, "sha256", "subject[0].digest", source);

  const Json& predicate = integrity_detail::object_member(document, "predicate", "", source);
  const Json& serialization =
      integrity_detail::object_member(predicate, "serialization", "predicate", source);
  const std::string at_serialization = "predicate.serialization";
  integrity_detail::expect_string(serialization, "method", "files", at_serialization, source);
  integrity_detail::expect_string(serialization, "hash_type", kAlgorithm, at_serialization, source);
  const Json& symlinks =
      integrity_detail::member(serialization, "allow_symlinks", at_serialization, source);
  if (symlinks != Json(false)) {
    source.fail(at_serialization + ".allow_symlinks is " + symlinks.dump() + ", expected false");
  }
  const Json& ignored =
      integrity_detail::array_member(serialization, "ignore_paths", at_serialization, source);
  if (ignored != Json::array({kDigestsEntryName, kSignatureEntryName})) {
    source.fail(at_serialization + ".ignore_paths is " + ignored.dump() +
                R"(, expected ["__DIGESTS","__SIGNATURE"])");
  }

  const Json& resources =
      integrity_detail::array_member(predicate, "resources", "predicate", source);
  std::unordered_set<std::string_view> names;
  statement.entries.reserve(resources.size());
  for (std::size_t i = 0; i < resources.size(); ++i) {
    const std::string at = "predicate.resources[" + std::to_string(i) + "]";
    EntryDigest& entry = statement.entries.emplace_back();
    entry.name = integrity_detail::string_member(resources[i], "name", at, source);
    if (entry.name.empty()) source.fail(at + ".name is empty");
    if (!names.insert(resources[i]["name"].get_ref<const std::string&>()).second) {
      source.fail("entry " + detail::quote(entry.name) + " is listed twice (" + at + ")");
    }
    integrity_detail::expect_string(resources[i], "algorithm", kAlgorithm, at, source);
    entry.sha256 = digest_member(resources[i], "digest", at, source);
  }

  const Json& facts_record =
      integrity_detail::object_member(predicate, "onnxzip", "predicate", source);
  integrity_detail::expect_string(facts_record, "format_version", kIntegrityFormatVersion,
                                  "predicate.onnxzip", source);
  const Json& facts =
      integrity_detail::array_member(facts_record, "entries", "predicate.onnxzip", source);
  if (facts.size() != resources.size()) {
    source.fail("predicate.onnxzip.entries has " + std::to_string(facts.size()) +
                " items, predicate.resources " + std::to_string(resources.size()));
  }
  for (std::size_t i = 0; i < facts.size(); ++i) {
    EntryDigest& entry = statement.entries[i];
    const std::string fact_at = "predicate.onnxzip.entries[" + std::to_string(i) + "]";
    const std::string& fact_name =
        integrity_detail::string_member(facts[i], "name", fact_at, source);
    if (fact_name != entry.name) {
      source.fail(fact_at + ".name is " + detail::quote(fact_name) + ", but predicate.resources[" +
                  std::to_string(i) + "].name " + detail::quote(entry.name));
    }
    entry.size = integrity_detail::unsigned_member(facts[i], "size", fact_at, source);
    std::uint8_t crc[4] = {};
    const std::string& crc_text =
        integrity_detail::string_member(facts[i], "crc32", fact_at, source);
    if (!parse_hex(crc_text, crc)) {
      source.fail(fact_at + ".crc32 is " + detail::quote(crc_text) +
                  ", not 8 lower-case hex digits");
    }
    entry.crc32 = (std::uint32_t{crc[0]} << 24) | (std::uint32_t{crc[1]} << 16) |
                  (std::uint32_t{crc[2]} << 8) | crc[3];
  }
  // model_signing hashes the digests in the order the resources are listed.
  statement.root = root_digest(statement.entries);
  if (statement.root != subject_sha256) {
    source.fail("subject[0].digest.sha256 is " + to_hex(subject_sha256) +
                ", but the resources' digests hash to " + to_hex(statement.root));
  }
  return statement;
}

}  // namespace onnxzip
