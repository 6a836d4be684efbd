// The `__DIGESTS` statement (spec §12.2): an in-toto Statement v1 shaped exactly as
// model_signing's v1.0 predicate describes a model folder ("files" serialization, resources in
// byte order of their names, the subject digest over the resource digests), plus an `onnxzip`
// record of the ZIP facts that v1.0 verifiers ignore.
#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "json_input.h"
#include "message_text.h"
#include "onnxzip/error.h"
#include "onnxzip/integrity.h"
#include "onnxzip/internal/json_text.h"

namespace onnxzip {
namespace {

using integrity_detail::Json;
using integrity_detail::JsonSource;
using integrity_detail::JsonTreeBuilder;
using integrity_detail::kind_of;

constexpr std::string_view kStatementType = "https://in-toto.io/Statement/v1";
constexpr std::string_view kPredicateType = "https://model_signing/signature/v1.0";
constexpr std::string_view kAlgorithm = "sha256";

// A CRC-32 as the statement writes it: its four bytes big-endian, in hex.
std::array<std::uint8_t, 4> crc_bytes(std::uint32_t crc) {
  return {static_cast<std::uint8_t>(crc >> 24), static_cast<std::uint8_t>(crc >> 16),
          static_cast<std::uint8_t>(crc >> 8), static_cast<std::uint8_t>(crc)};
}

// Lower-case hex of exactly out.size() bytes; false for anything else (upper case included:
// model_signing writes lower case, and one spelling per digest keeps the bytes canonical).
bool parse_hex(std::string_view text, std::span<std::uint8_t> out) {
  // Each byte's value as a lower-case hex digit, 0xff for none: a signed edit reads two
  // thousand digests, and a table beats comparisons per digit.
  static constexpr std::array<std::uint8_t, 256> kDigit = [] {
    std::array<std::uint8_t, 256> digits{};
    digits.fill(0xff);
    for (int i = 0; i < 10; ++i) digits['0' + i] = static_cast<std::uint8_t>(i);
    for (int i = 0; i < 6; ++i) digits['a' + i] = static_cast<std::uint8_t>(10 + i);
    return digits;
  }();
  if (text.size() != out.size() * 2) return false;
  std::uint8_t invalid = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::uint8_t high = kDigit[static_cast<unsigned char>(text[2 * i])];
    const std::uint8_t low = kDigit[static_cast<unsigned char>(text[2 * i + 1])];
    invalid |= high | low;
    out[i] = static_cast<std::uint8_t>(high << 4 | (low & 15));
  }
  return (invalid & 0xf0) == 0;
}

// What a value of the statement is (spec §12.2): the reader below walks this schema as the
// parser's events arrive. kSkip is a value the statement may carry but nothing reads (an unknown
// member, subject items after the first): its objects are still checked for duplicate keys.
enum class Node : std::uint8_t {
  kSkip,
  // Objects and arrays.
  kDocument,
  kSubjects,
  kSubject,
  kSubjectDigest,
  kPredicate,
  kSerialization,
  kResources,
  kResource,
  kRecord,
  kFacts,
  kFact,
  // Values.
  kTypeField,
  kPredicateTypeField,
  kModelName,
  kRootDigest,
  kMethod,
  kHashType,
  kAllowSymlinks,
  kIgnorePaths,
  kResourceName,
  kAlgorithmField,
  kResourceDigest,
  kFormatVersion,
  kFactName,
  kFactSize,
  kFactCrc,
};

struct Member {
  std::string_view key;
  Node node;
};

// The members of each object, all required, in the order their absence is reported.
std::span<const Member> members_of(Node node) {
  static constexpr Member kDocument[] = {{"_type", Node::kTypeField},
                                         {"predicateType", Node::kPredicateTypeField},
                                         {"subject", Node::kSubjects},
                                         {"predicate", Node::kPredicate}};
  static constexpr Member kSubject[] = {{"name", Node::kModelName},
                                        {"digest", Node::kSubjectDigest}};
  static constexpr Member kSubjectDigest[] = {{"sha256", Node::kRootDigest}};
  static constexpr Member kPredicate[] = {{"serialization", Node::kSerialization},
                                          {"resources", Node::kResources},
                                          {"onnxzip", Node::kRecord}};
  static constexpr Member kSerialization[] = {{"method", Node::kMethod},
                                              {"hash_type", Node::kHashType},
                                              {"allow_symlinks", Node::kAllowSymlinks},
                                              {"ignore_paths", Node::kIgnorePaths}};
  static constexpr Member kResource[] = {{"name", Node::kResourceName},
                                         {"algorithm", Node::kAlgorithmField},
                                         {"digest", Node::kResourceDigest}};
  static constexpr Member kRecord[] = {{"format_version", Node::kFormatVersion},
                                       {"entries", Node::kFacts}};
  static constexpr Member kFact[] = {
      {"name", Node::kFactName}, {"size", Node::kFactSize}, {"crc32", Node::kFactCrc}};
  switch (node) {
    case Node::kDocument:
      return kDocument;
    case Node::kSubject:
      return kSubject;
    case Node::kSubjectDigest:
      return kSubjectDigest;
    case Node::kPredicate:
      return kPredicate;
    case Node::kSerialization:
      return kSerialization;
    case Node::kResource:
      return kResource;
    case Node::kRecord:
      return kRecord;
    case Node::kFact:
      return kFact;
    default:
      return {};
  }
}

bool is_object_node(Node node) { return !members_of(node).empty(); }
bool is_array_node(Node node) {
  return node == Node::kSubjects || node == Node::kResources || node == Node::kFacts;
}

// The item an array node holds at `index`.
Node item_of(Node array, std::size_t index) {
  switch (array) {
    case Node::kSubjects:
      return index == 0 ? Node::kSubject : Node::kSkip;
    case Node::kResources:
      return Node::kResource;
    case Node::kFacts:
      return Node::kFact;
    default:
      return Node::kSkip;
  }
}

// A resource's facts from the `onnxzip` record, joined to the resource of the same index once
// both lists are read (the record may come first: JSON members have no order).
struct Fact {
  std::string name;
  std::uint64_t size = 0;
  std::uint32_t crc32 = 0;
};

// Reads `__DIGESTS` from the parser's events straight into the statement, without a document
// tree (building and walking one was most of a signed edit's time): each value is checked
// against the schema as it arrives. The first problem is kept and reported once the whole text
// has parsed, so that, as with a tree, bad JSON comes first, then a key an object has twice, then
// what the statement says.
class DigestsReader final {
 public:
  bool null() { return scalar(Json(nullptr)); }
  bool boolean(bool value) { return scalar(Json(value)); }
  bool number_integer(Json::number_integer_t value) { return scalar(Json(value)); }
  bool number_unsigned(Json::number_unsigned_t value);
  bool number_float(Json::number_float_t value, const std::string& /*text*/) {
    return scalar(Json(value));
  }
  bool string(std::string& value);
  bool binary(Json::binary_t& value) { return scalar(Json(std::move(value))); }
  bool start_object(std::size_t /*size*/) { return start(false); }
  bool key(std::string& name);
  bool end_object() { return end(false); }
  bool start_array(std::size_t /*size*/) { return start(true); }
  bool end_array() { return end(true); }
  template <class Exception>
  bool parse_error(std::size_t /*position*/, const std::string& /*token*/, const Exception& error) {
    throw error;
  }

  // After the parse: the statement, or Error(kCorrupt) naming the first problem's field.
  DigestStatement finish(const JsonSource& source) &&;

 private:
  static constexpr std::uint8_t kUnknownMember = 0xff;
  // An open object or array; small, since hostile text may nest them deeply.
  struct Frame {
    std::size_t items = 0;  // An array's items begun.
    // An object's keys not in members_of(node): the first here, all in `others` from the
    // second on (a set a level would cost hostile nesting more memory than a tree).
    std::string first_other;
    std::unique_ptr<std::unordered_set<std::string>> others;
    std::uint32_t seen = 0;  // An object's members_of(node) read, a bit each.
    Node node = Node::kSkip;
    Node member = Node::kSkip;  // An object's value after the last key: members_of(node)[index].
    std::uint8_t member_index = kUnknownMember;
    bool array = false;
    bool has_other = false;  // first_other holds a key.

    // Notes a key not in members_of(node); false when the object had it already.
    bool add_other(const std::string& key) {
      if (!has_other) {
        has_other = true;
        first_other = key;
        return true;
      }
      if (!others) {
        others = std::make_unique<std::unordered_set<std::string>>();
        others->insert(std::move(first_other));
      }
      return others->insert(key).second;
    }
  };

  // The node of the value that comes next.
  Node next_node() const {
    if (stack_.empty()) return Node::kDocument;
    const Frame& frame = stack_.back();
    return frame.array ? item_of(frame.node, frame.items) : frame.member;
  }
  // Begins the value that comes next (the array around it counts it) and says what it is.
  Node begin_value() {
    const Node node = next_node();
    if (!stack_.empty() && stack_.back().array) ++stack_.back().items;
    return node;
  }
  // The path of the value begun last, as messages name it: "predicate.resources[3].digest".
  std::string path() const;
  void problem(std::string text) {
    if (problem_.empty()) problem_ = std::move(text);
  }
  void wrong_kind(Node node, std::string_view kind);
  bool scalar(Json value);
  bool start(bool array);
  bool end(bool array);
  // Passes an event of a captured value (kAllowSymlinks, kIgnorePaths: their messages show the
  // value) on, and checks the value once it is whole.
  template <class Event>
  bool to_capture(const Event& event) {
    event(*capture_);
    if (!capture_->building()) {
      if (duplicate_.empty()) duplicate_ = capture_->duplicate();
      check_captured(capture_node_, std::move(*capture_).document());
      capture_.reset();
    }
    return true;
  }
  void check_captured(Node node, const Json& value);
  void expect_text(const std::string& value, std::string_view expected) {
    if (value != expected) {
      problem(path() + " is " + detail::quote(value) + ", expected " + detail::quote(expected));
    }
  }
  template <std::size_t N>
  void hex_value(const std::string& value, std::array<std::uint8_t, N>& out) {
    if (!parse_hex(value, out)) {
      problem(path() + " is " + detail::quote(value) + ", not " + std::to_string(2 * N) +
              " lower-case hex digits");
    }
  }

  std::vector<Frame> stack_;
  std::unique_ptr<JsonTreeBuilder> capture_;
  Node capture_node_ = Node::kSkip;
  DigestStatement statement_;
  Sha256Digest subject_sha256_{};
  std::vector<Fact> facts_;
  std::string duplicate_;
  std::string problem_;
};

std::string DigestsReader::path() const {
  std::string text;
  for (const Frame& frame : stack_) {
    if (frame.array) {
      text += "[" + std::to_string(frame.items - 1) + "]";
    } else if (frame.member_index != kUnknownMember) {
      if (!text.empty()) text += '.';
      text += members_of(frame.node)[frame.member_index].key;
    }
  }
  return text;
}

void DigestsReader::wrong_kind(Node node, std::string_view kind) {
  std::string_view expected = "a string";
  std::string_view qualifier;
  if (is_object_node(node)) {
    expected = "an object";
  } else if (is_array_node(node)) {
    expected = "an array";
  } else if (node == Node::kFactSize) {
    expected = "an unsigned integer";
    if (kind == "a number") qualifier = " that is not a whole number from 0 to 2^64 - 1";
  }
  const std::string at = path();
  problem((at.empty() ? std::string("the document") : at) + " is " + std::string(kind) +
          std::string(qualifier) + ", expected " + std::string(expected));
}

void DigestsReader::check_captured(Node node, const Json& value) {
  if (node == Node::kAllowSymlinks) {
    if (value != Json(false)) problem(path() + " is " + value.dump() + ", expected false");
    return;
  }
  if (!value.is_array()) {
    wrong_kind(Node::kResources, kind_of(value));  // Any array node: the message is the same.
  } else if (value != Json::array({kDigestsEntryName, kSignatureEntryName})) {
    problem(path() + " is " + value.dump() + R"(, expected ["__DIGESTS","__SIGNATURE"])");
  }
}

bool DigestsReader::scalar(Json value) {
  if (capture_) return to_capture([&](JsonTreeBuilder& tree) { tree.value(std::move(value)); });
  const Node node = begin_value();
  if (node == Node::kAllowSymlinks || node == Node::kIgnorePaths) {
    check_captured(node, value);
  } else if (node != Node::kSkip) {
    wrong_kind(node, kind_of(value));
  }
  return true;
}

bool DigestsReader::number_unsigned(Json::number_unsigned_t value) {
  if (capture_ || next_node() != Node::kFactSize) return scalar(Json(value));
  begin_value();
  facts_.back().size = value;
  return true;
}

bool DigestsReader::string(std::string& value) {
  if (capture_) return scalar(Json(std::move(value)));
  const Node node = begin_value();
  switch (node) {
    case Node::kSkip:
      break;
    case Node::kTypeField:
      expect_text(value, kStatementType);
      break;
    case Node::kPredicateTypeField:
      expect_text(value, kPredicateType);
      break;
    case Node::kMethod:
      expect_text(value, "files");
      break;
    case Node::kHashType:
    case Node::kAlgorithmField:
      expect_text(value, kAlgorithm);
      break;
    case Node::kFormatVersion:
      expect_text(value, kIntegrityFormatVersion);
      break;
    case Node::kModelName:
      statement_.model_name = std::move(value);
      break;
    case Node::kRootDigest:
      hex_value(value, subject_sha256_);
      break;
    case Node::kResourceName:
      if (value.empty()) problem(path() + " is empty");
      statement_.entries.back().name = std::move(value);
      break;
    case Node::kResourceDigest:
      hex_value(value, statement_.entries.back().sha256);
      break;
    case Node::kFactName:
      facts_.back().name = std::move(value);
      break;
    case Node::kFactCrc: {
      std::array<std::uint8_t, 4> crc{};
      hex_value(value, crc);
      facts_.back().crc32 = (std::uint32_t{crc[0]} << 24) | (std::uint32_t{crc[1]} << 16) |
                            (std::uint32_t{crc[2]} << 8) | crc[3];
      break;
    }
    case Node::kAllowSymlinks:
    case Node::kIgnorePaths:
      check_captured(node, Json(std::move(value)));
      break;
    default:
      wrong_kind(node, "a string");
      break;
  }
  return true;
}

bool DigestsReader::start(bool array) {
  if (capture_) {
    return to_capture(
        [&](JsonTreeBuilder& tree) { array ? tree.start_array(0) : tree.start_object(0); });
  }
  Node node = begin_value();
  if (node == Node::kAllowSymlinks || node == Node::kIgnorePaths) {
    capture_ = std::make_unique<JsonTreeBuilder>();
    capture_node_ = node;
    array ? capture_->start_array(0) : capture_->start_object(0);
    return true;
  }
  if (node != Node::kSkip && (array ? !is_array_node(node) : !is_object_node(node))) {
    wrong_kind(node, array ? "an array" : "an object");
    node = Node::kSkip;  // Read for its syntax and its keys only.
  }
  if (node == Node::kResource) statement_.entries.emplace_back();
  if (node == Node::kFact) facts_.emplace_back();
  Frame& frame = stack_.emplace_back();
  frame.node = node;
  frame.array = array;
  return true;
}

bool DigestsReader::key(std::string& name) {
  if (capture_) return to_capture([&](JsonTreeBuilder& tree) { tree.key(name); });
  Frame& frame = stack_.back();
  const std::span<const Member> members = members_of(frame.node);
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (members[i].key != name) continue;
    const std::uint32_t bit = std::uint32_t{1} << i;
    if ((frame.seen & bit) != 0 && duplicate_.empty()) duplicate_ = name;
    frame.seen |= bit;
    frame.member = members[i].node;
    frame.member_index = static_cast<std::uint8_t>(i);
    return true;
  }
  if (!frame.add_other(name) && duplicate_.empty()) duplicate_ = name;
  frame.member = Node::kSkip;
  frame.member_index = kUnknownMember;
  return true;
}

bool DigestsReader::end(bool array) {
  if (capture_) {
    return to_capture([&](JsonTreeBuilder& tree) { array ? tree.end_array() : tree.end_object(); });
  }
  Frame& frame = stack_.back();
  const std::span<const Member> members = members_of(frame.node);
  for (std::size_t i = 0; i < members.size(); ++i) {
    if ((frame.seen & (std::uint32_t{1} << i)) == 0) {
      frame.member_index = static_cast<std::uint8_t>(i);  // So the path names the member.
      problem(path() + " is missing");
      break;
    }
  }
  if (frame.node == Node::kSubjects && frame.items != 1) {
    problem("subject has " + std::to_string(frame.items) + " items, expected 1");
  }
  stack_.pop_back();
  return true;
}

DigestStatement DigestsReader::finish(const JsonSource& source) && {
  if (!duplicate_.empty()) integrity_detail::fail_duplicate_key(duplicate_, source);
  if (!problem_.empty()) source.fail(problem_);
  std::vector<EntryDigest>& entries = statement_.entries;
  std::unordered_set<std::string_view> names;
  names.reserve(entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (!names.insert(entries[i].name).second) {
      source.fail("entry " + detail::quote(entries[i].name) + " is listed twice (" +
                  "predicate.resources[" + std::to_string(i) + "])");
    }
  }
  if (facts_.size() != entries.size()) {
    source.fail("predicate.onnxzip.entries has " + std::to_string(facts_.size()) +
                " items, predicate.resources " + std::to_string(entries.size()));
  }
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (facts_[i].name != entries[i].name) {
      source.fail("predicate.onnxzip.entries[" + std::to_string(i) + "].name is " +
                  detail::quote(facts_[i].name) + ", but predicate.resources[" + std::to_string(i) +
                  "].name " + detail::quote(entries[i].name));
    }
    entries[i].size = facts_[i].size;
    entries[i].crc32 = facts_[i].crc32;
  }
  // model_signing hashes the digests in the order the resources are listed.
  statement_.root = root_digest(entries);
  if (statement_.root != subject_sha256_) {
    source.fail("subject[0].digest.sha256 is " + to_hex(subject_sha256_) +
                ", but the resources' digests hash to " + to_hex(statement_.root));
  }
  return std::move(statement_);
}

}  // namespace

namespace {

// The statement's parts, in document order (spec §12.2).
void write_subject(JsonText& json, std::string_view model_name, const Sha256Digest& root) {
  json.key("subject");
  json.begin_array();
  json.begin_object();
  json.key("name");
  json.string(model_name);  // Invalid UTF-8 becomes U+FFFD instead of an exception.
  json.key("digest");
  json.begin_object();
  json.key("sha256");
  json.hex_string(root);
  json.end_object();
  json.end_object();
  json.end_array();
}

void write_serialization(JsonText& json) {
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
}

void write_resources(JsonText& json, const std::vector<EntryDigest>& entries) {
  json.key("resources");
  json.begin_array();
  for (const EntryDigest& entry : entries) {
    json.begin_object();
    json.key("name");
    json.string(entry.name);
    json.key("algorithm");
    json.string(kAlgorithm);
    json.key("digest");
    json.hex_string(entry.sha256);
    json.end_object();
  }
  json.end_array();
}

// What the model signing format does not say: each entry's size and CRC-32.
void write_onnxzip_facts(JsonText& json, const std::vector<EntryDigest>& entries) {
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
    json.hex_string(crc_bytes(entry.crc32));
    json.end_object();
  }
  json.end_array();
  json.end_object();
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
  // About 250 bytes an entry: its resource and its facts.
  JsonText json(1024 + 256 * entries.size());
  json.begin_object();
  json.key("_type");
  json.string(kStatementType);
  write_subject(json, model_name, root_digest(entries));
  json.key("predicateType");
  json.string(kPredicateType);
  json.key("predicate");
  json.begin_object();
  write_serialization(json);
  write_resources(json, entries);
  write_onnxzip_facts(json, entries);
  json.end_object();
  json.end_object();
  return std::move(json).finish();
}

DigestStatement decode_digests(ByteSpan json, const IntegrityLimits& limits,
                               std::string_view source_name) {
  const JsonSource source{std::string(source_name), "entry " + detail::quote(kDigestsEntryName),
                          limits.max_digests_size, "IntegrityLimits::max_digests_size"};
  DigestsReader reader;
  integrity_detail::sax_parse(json, reader, source);
  return std::move(reader).finish(source);
}

}  // namespace onnxzip
