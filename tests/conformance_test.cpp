// The conformance vectors of spec/conformance/ (written by spec/conformance/generate.py): every
// vector through Archive::open, load and verify, each verdict equal to the manifest's. The
// JavaScript reader (js/test/unit/conformance.test.mjs) runs the same vectors against the same
// manifest, so the two implementations agree on every one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "onnxzip/archive.h"
#include "onnxzip/error.h"
#include "onnxzip/integrity.h"

namespace onnxzip {
namespace {

namespace fs = std::filesystem;

const fs::path kConformanceDir = ONNXZIP_CONFORMANCE_DIR;

// A JSON value, as much of JSON as the manifest uses: objects, arrays, strings (ASCII with
// escapes; the generator writes ensure_ascii), numbers, true, false, null.
struct Json {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  std::string text;  // String value, or the number's digits.
  bool flag = false;
  std::vector<Json> items;
  std::map<std::string, Json> members;

  const Json& at(const std::string& key) const {
    const auto it = members.find(key);
    if (it == members.end()) throw std::runtime_error("manifest: no member '" + key + "'");
    return it->second;
  }
  std::string string_or(const std::string& key, std::string fallback) const {
    const auto it = members.find(key);
    return it == members.end() ? fallback : it->second.text;
  }
};

class JsonParser {
 public:
  explicit JsonParser(std::string_view text) : text_(text) {}

  Json parse() {
    Json value = parse_value();
    skip_space();
    if (pos_ != text_.size()) fail("text after the value");
    return value;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("manifest.json: " + what + " at byte " + std::to_string(pos_));
  }
  void skip_space() {
    while (pos_ < text_.size() &&
           std::string_view(" \t\r\n").find(text_[pos_]) != std::string_view::npos)
      ++pos_;
  }
  char peek() {
    skip_space();
    if (pos_ >= text_.size()) fail("unexpected end");
    return text_[pos_];
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  bool take_word(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }
  Json parse_value() {
    Json v;
    const char c = peek();
    if (c == '{') {
      v.kind = Json::Kind::kObject;
      ++pos_;
      if (peek() == '}') {
        ++pos_;
        return v;
      }
      for (;;) {
        const std::string key = parse_string();
        expect(':');
        v.members[key] = parse_value();
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        expect('}');
        return v;
      }
    }
    if (c == '[') {
      v.kind = Json::Kind::kArray;
      ++pos_;
      if (peek() == ']') {
        ++pos_;
        return v;
      }
      for (;;) {
        v.items.push_back(parse_value());
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        expect(']');
        return v;
      }
    }
    if (c == '"') {
      v.kind = Json::Kind::kString;
      v.text = parse_string();
      return v;
    }
    if (take_word("true")) {
      v.kind = Json::Kind::kBool;
      v.flag = true;
      return v;
    }
    if (take_word("false")) {
      v.kind = Json::Kind::kBool;
      return v;
    }
    if (take_word("null")) return v;
    v.kind = Json::Kind::kNumber;
    const std::size_t start = pos_;
    while (pos_ < text_.size() &&
           std::string_view("+-0123456789.eE").find(text_[pos_]) != std::string_view::npos) {
      ++pos_;
    }
    if (pos_ == start) fail("unexpected character");
    v.text = std::string(text_.substr(start, pos_ - start));
    return v;
  }
  std::string parse_string() {
    expect('"');
    std::string out;
    while (pos_ < text_.size() && text_[pos_] != '"') {
      char c = text_[pos_++];
      if (c == '\\') {
        if (pos_ >= text_.size()) fail("unterminated escape");
        const char e = text_[pos_++];
        switch (e) {
          case 'n':
            c = '\n';
            break;
          case 't':
            c = '\t';
            break;
          case 'r':
            c = '\r';
            break;
          case 'b':
            c = '\b';
            break;
          case 'f':
            c = '\f';
            break;
          case 'u': {
            if (pos_ + 4 > text_.size()) fail("short \\u escape");
            const unsigned code =
                static_cast<unsigned>(std::stoul(std::string(text_.substr(pos_, 4)), nullptr, 16));
            pos_ += 4;
            if (code < 0x80) {
              c = static_cast<char>(code);
            } else if (code < 0x800) {
              out += static_cast<char>(0xC0 | (code >> 6));
              c = static_cast<char>(0x80 | (code & 0x3F));
            } else {
              out += static_cast<char>(0xE0 | (code >> 12));
              out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
              c = static_cast<char>(0x80 | (code & 0x3F));
            }
            break;
          }
          default:
            c = e;  // '"', '\\', '/'
        }
      }
      out += c;
    }
    expect('"');
    return out;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

struct Vector {
  std::string file;
  std::string rule;
  std::string description;
  std::string open;    // "ok" or an error code name.
  std::string verify;  // "ok", "warning" or "error".
  // Words the error, or one finding, must all contain: the entry or tensor at fault, and for some
  // vectors the spec rule the message cites.
  std::vector<std::string> names;
  // "" or a public key (PEM) to verify with too (spec §12.5 item 4), and what that gives.
  std::string key;
  std::string verify_key;
  // The sites of the tensors that hold data, in walk order (spec/names.md); checked when given.
  std::optional<std::vector<std::string>> sites;
  // Every tensor that holds data as one line of its record and its payload's SHA-256
  // (tensor_line); checked when given. JS and Python check the same records.
  std::optional<std::vector<std::string>> tensors;
};

// A tensor record as one comparable line: name, site, entry, data_type, dims, size, inline and
// the SHA-256 of its payload, as the manifest gives them.
std::string tensor_line(const std::string& name, const std::string& site, const std::string& entry,
                        const std::string& data_type, const std::vector<std::string>& dims,
                        const std::string& size, bool is_inline, const std::string& sha256) {
  std::string line = name + " | " + site + " | " + entry + " | " + data_type + " | [";
  for (const std::string& dim : dims) line += dim + ",";
  return line + "] | " + size + " | " + (is_inline ? "inline" : "external") + " | " + sha256;
}

// gtest prints parameters in test listings and failures: the file names the vector.
void PrintTo(const Vector& v, std::ostream* os) { *os << v.file; }

std::vector<Vector> load_manifest() {
  std::ifstream in(kConformanceDir / "manifest.json");
  if (!in) return {};
  std::stringstream text;
  text << in.rdbuf();
  const Json manifest = JsonParser(text.str()).parse();
  std::vector<Vector> out;
  for (const Json& v : manifest.at("vectors").items) {
    std::vector<std::string> names;
    if (const auto it = v.members.find("names"); it != v.members.end()) {
      if (it->second.kind == Json::Kind::kArray) {
        for (const Json& word : it->second.items) names.push_back(word.text);
      } else {
        names.push_back(it->second.text);
      }
    }
    std::optional<std::vector<std::string>> sites;
    if (const auto it = v.members.find("sites"); it != v.members.end()) {
      sites.emplace();
      for (const Json& site : it->second.items) sites->push_back(site.text);
    }
    std::optional<std::vector<std::string>> tensors;
    if (const auto it = v.members.find("tensors"); it != v.members.end()) {
      tensors.emplace();
      for (const Json& t : it->second.items) {
        std::vector<std::string> dims;
        for (const Json& dim : t.at("dims").items) dims.push_back(dim.text);
        tensors->push_back(tensor_line(t.at("name").text, t.at("site").text, t.at("entry").text,
                                       t.at("data_type").text, dims, t.at("size").text,
                                       t.at("inline").flag, t.at("sha256").text));
      }
    }
    out.push_back({v.at("file").text, v.at("rule").text, v.at("description").text,
                   v.at("open").text, v.at("verify").text, std::move(names), v.string_or("key", ""),
                   v.string_or("verify_key", ""), std::move(sites), std::move(tensors)});
  }
  return out;
}

// The error code name of what `f` throws, or "ok"; `message` gets the error's message.
template <typename F>
std::string verdict_of(F&& f, std::string& message) {
  try {
    std::forward<F>(f)();
    return "ok";
  } catch (const Error& error) {
    message = error.message();
    return std::string(to_string(error.code()));
  }
}

std::string verify_verdict(const VerifyReport& report) {
  if (report.ok()) return "ok";
  const bool error = std::any_of(
      report.findings.begin(), report.findings.end(),
      [](const VerifyFinding& f) { return f.severity == VerifyFinding::Severity::kError; });
  return error ? "error" : "warning";
}

// tensor_line of each of archive.tensors(), its payload read by the record.
std::vector<std::string> tensor_lines(const Archive& archive) {
  std::vector<std::string> lines;
  for (const Archive::TensorInfo& info : archive.tensors()) {
    std::vector<std::string> dims;
    for (const std::int64_t dim : info.dims) dims.push_back(std::to_string(dim));
    const TensorBytes payload = archive.payload(info);
    lines.push_back(tensor_line(info.name, info.site, info.entry, std::to_string(info.data_type),
                                dims, std::to_string(info.size), info.is_inline,
                                to_hex(Sha256::of(payload.view()))));
  }
  return lines;
}

class ConformanceTest : public testing::TestWithParam<Vector> {};

TEST(ConformanceManifest, HoldsVectorsOfEveryVerdict) {
  const std::vector<Vector> vectors = load_manifest();
  ASSERT_GE(vectors.size(), 50u) << "spec/conformance/manifest.json is missing or nearly empty";
  for (const char* verdict : {"ok", "warning", "error"}) {
    EXPECT_TRUE(std::any_of(vectors.begin(), vectors.end(),
                            [&](const Vector& v) { return v.verify == verdict; }))
        << "no vector whose verify verdict is " << verdict;
  }
}

TEST_P(ConformanceTest, VerdictsMatchTheManifest) {
  const Vector& v = GetParam();
  const fs::path path = kConformanceDir / v.file;
  SCOPED_TRACE(v.file + " (" + v.rule + "): " + v.description);
  ASSERT_TRUE(fs::exists(path));

  std::string open_message;
  const std::string open = verdict_of(
      [&] {
        const Archive archive = Archive::open(path);
        if (v.sites) {
          std::vector<std::string> sites;
          for (const Archive::TensorInfo& info : archive.tensors()) sites.push_back(info.site);
          EXPECT_EQ(sites, *v.sites);
        }
        if (v.tensors) {
          // Every tensor listed, inline ones too, and each read by its record (spec/names.md);
          // the same without the parsed model (LoadOptions::keep_model, as Python opens).
          EXPECT_EQ(tensor_lines(archive), *v.tensors);
          const Archive lean = Archive::open(path, {.keep_model = false});
          EXPECT_EQ(tensor_lines(lean), *v.tensors);
          EXPECT_FALSE(lean.model().graph);  // Let go once the tensors were listed.
        }
      },
      open_message);
  EXPECT_EQ(open, v.open) << open_message;
  std::string load_message;
  const std::string loaded = verdict_of([&] { (void)load(path); }, load_message);
  EXPECT_EQ(loaded, v.open) << "load() and Archive::open disagree: " << load_message;

  VerifyReport report = verify(path);
  std::string findings;
  const auto describe = [&findings](const VerifyReport& r) {
    for (const VerifyFinding& f : r.findings) {
      findings += std::string(to_string(f.severity)) + " [" + f.entry + "] " + f.tensor + ": " +
                  f.message + "\n";
    }
  };
  describe(report);
  EXPECT_EQ(verify_verdict(report), v.verify) << findings;
  if (!v.key.empty()) {
    const VerifyReport keyed =
        verify(path, VerifyOptions{.public_key = PublicKey::load(kConformanceDir / v.key)});
    findings += "with the key:\n";
    describe(keyed);
    EXPECT_EQ(verify_verdict(keyed), v.verify_key) << findings;
    // The names below may be in what only the key's check finds.
    report.findings.insert(report.findings.end(), keyed.findings.begin(), keyed.findings.end());
  }

  const auto names_all = [&v](const std::string& text) {
    return std::all_of(v.names.begin(), v.names.end(), [&text](const std::string& word) {
      return text.find(word) != std::string::npos;
    });
  };
  if (!v.names.empty()) {
    if (open != "ok") {
      EXPECT_TRUE(names_all(open_message)) << open_message;
    } else {
      const bool named =
          std::any_of(report.findings.begin(), report.findings.end(), [&](const VerifyFinding& f) {
            return names_all(f.entry + " " + f.tensor + " " + f.message);
          });
      EXPECT_TRUE(named) << "no finding has every word of the vector's names:\n" << findings;
    }
  }
}

std::string test_name(const testing::TestParamInfo<Vector>& info) {
  std::string name = fs::path(info.param.file).stem().string();
  std::replace_if(
      name.begin(), name.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); },
      '_');
  return name;
}

INSTANTIATE_TEST_SUITE_P(Vectors, ConformanceTest, testing::ValuesIn(load_manifest()), test_name);

}  // namespace
}  // namespace onnxzip
