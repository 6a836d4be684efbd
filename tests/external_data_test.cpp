#include "external_data.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "onnxzip/archive.h"
#include "onnxzip/convert.h"
#include "onnxzip/error.h"
#include "onnxzip/legacy.h"
#include "onnxzip/onnx_codec.h"
#include "support/model_builder.h"
#include "support/scratch_dir.h"
#include "zip_writer.h"

namespace onnxzip {
namespace {

namespace fs = std::filesystem;
using test_support::ScratchDir;
using Keys = std::vector<std::pair<std::string, std::string>>;

TensorProto tensor_with(const Keys& keys) {
  TensorProto t;
  t.name = "w";
  t.data_type = TensorProto::kFloat;
  t.dims = {4};
  for (const auto& [key, value] : keys) {
    StringStringEntryProto& kv = t.external_data.emplace_back();
    kv.key = key;
    kv.value = value;
  }
  t.data_location = TensorProto::kExternal;
  return t;
}

// --- The reader itself: what the tensor says, no judgement ---

TEST(ExternalData, ReportsKeysInOrderFirstValuesAndRepeats) {
  const TensorProto t = tensor_with({{"length", "016"},
                                     {"checksum", "ab"},
                                     {"location", "w"},
                                     {"length", "9"},
                                     {"basepath", "."},
                                     {"location", "x"},
                                     {"location", "y"}});
  const detail::ExternalData data = detail::read_external_data(t);
  ASSERT_EQ(data.keys.size(), 7u);
  EXPECT_EQ(data.keys[0].key, "length");
  EXPECT_EQ(data.keys[6].value, "y");
  EXPECT_EQ(data.location, "w");
  ASSERT_TRUE(data.length && data.length->value);
  EXPECT_EQ(*data.length->value, 16u);  // The first one, leading zero and all.
  EXPECT_FALSE(data.length->canonical);
  EXPECT_FALSE(data.offset);
  ASSERT_EQ(data.repeated.size(), 2u);  // In the order of each key's first entry.
  EXPECT_EQ(data.repeated[0].key, "length");
  EXPECT_EQ(data.repeated[0].count, 2u);
  EXPECT_EQ(data.repeated[1].key, "location");
  EXPECT_EQ(data.repeated[1].count, 3u);
  EXPECT_EQ(data.other_keys, (std::vector<std::string_view>{"checksum", "basepath"}));
  EXPECT_EQ(detail::reference_fault(data), "external_data has 2 'length' keys");
}

TEST(ExternalData, NumbersAreDigitsBelowTwoToThe64) {
  struct Case {
    std::string text;
    bool number;
    bool canonical;
  };
  const Case cases[] = {
      {"0", true, true},
      {"16", true, true},
      {"00", true, false},
      {"016", true, false},
      {"", false, false},
      {"+16", false, false},
      {"-0", false, false},
      {" 16", false, false},
      {"16 ", false, false},
      {"1e3", false, false},
      {"0x10", false, false},
      {"18446744073709551615", true, true},  // 2^64 - 1
      {"18446744073709551616", false, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("'" + c.text + "'");
    const TensorProto tensor = tensor_with({{"location", "w"}, {"offset", c.text}});
    const detail::ExternalData data = detail::read_external_data(tensor);
    ASSERT_TRUE(data.offset);
    EXPECT_EQ(data.offset->value.has_value(), c.number);
    EXPECT_EQ(data.offset->canonical, c.canonical);
    EXPECT_EQ(detail::reference_fault(data).empty(), c.number);
  }
  // A key or value the entry lacks reads as empty.
  TensorProto t = tensor_with({{"location", "w"}});
  t.external_data.emplace_back();
  const detail::ExternalData data = detail::read_external_data(t);
  EXPECT_EQ(data.other_keys, (std::vector<std::string_view>{""}));
}

// --- The same hostile key sets through the four readers ---
//
// Each row: a tensor 'w' (FLOAT[4], 16 bytes) at graph/initializer[0] whose external_data holds
// `keys`, read by
//   load    Archive::open of an archive whose entry 'w' holds the 16 bytes (and verify(), which
//           shares its rule: its error, or the warning an "ok, warns" row names);
//   writer  ArchiveWriter::finish after add_tensor wrote entry 'w';
//   repack  repack() of the same archive as load's;
//   legacy  read_legacy_model of model.onnx next to a 16-byte file 'w'.
// An outcome is "ok", "warns" (loads, with a verify warning of these words) or the error code
// with words its message must contain. Spec §7.2 and §9.4 say what an archive path does,
// legacy.h what the legacy reader does; a fault they all refuse reads the same everywhere.
struct Outcome {
  std::string_view result;
  std::string_view words;
};
struct Row {
  const char* what;
  Keys keys;
  Outcome load, writer, repack, legacy;
};

constexpr std::string_view kTwiceLocation = "external_data has 2 'location' keys";
constexpr std::string_view kTwiceOffset = "external_data has 2 'offset' keys";
constexpr std::string_view kTwiceLength = "external_data has 2 'length' keys";
constexpr std::string_view kNoLocation =
    "data_location is EXTERNAL but external_data has no 'location'";
constexpr std::string_view kNotANumber = "is not a non-negative decimal number below 2^64";
constexpr Outcome kOk{"ok", ""};

// clang-format off
const std::vector<Row>& rows() {
  static const std::vector<Row> table = {
      // what               keys
      //   load / verify                                writer (finish)
      //   repack                                       legacy reader
      {"canonical", {{"location", "w"}, {"length", "16"}},
       kOk, kOk,
       kOk, kOk},
      {"no length", {{"location", "w"}},
       {"warns", "external_data has no 'length'"}, kOk,
       kOk, kOk},
      {"location twice", {{"location", "w"}, {"location", "w"}, {"length", "16"}},
       {"corrupt", kTwiceLocation}, {"invalid_argument", kTwiceLocation},
       {"corrupt", kTwiceLocation}, {"corrupt", kTwiceLocation}},
      {"offset twice", {{"location", "w"}, {"offset", "0"}, {"offset", "0"}, {"length", "16"}},
       {"corrupt", kTwiceOffset}, {"invalid_argument", kTwiceOffset},
       {"corrupt", kTwiceOffset}, {"corrupt", kTwiceOffset}},
      {"length twice", {{"location", "w"}, {"length", "16"}, {"length", "16"}},
       {"corrupt", kTwiceLength}, {"invalid_argument", kTwiceLength},
       {"corrupt", kTwiceLength}, {"corrupt", kTwiceLength}},
      {"missing location", {{"length", "16"}},
       {"corrupt", kNoLocation}, {"invalid_argument", kNoLocation},
       {"corrupt", kNoLocation}, {"corrupt", kNoLocation}},
      {"empty location", {{"location", ""}, {"length", "16"}},
       {"corrupt", "the location is empty"}, {"invalid_argument", "the location is empty"},
       {"corrupt", "the location is empty"}, {"corrupt", "the location is empty"}},
      {"empty length", {{"location", "w"}, {"length", ""}},
       {"corrupt", kNotANumber}, {"invalid_argument", kNotANumber},
       {"corrupt", kNotANumber}, {"corrupt", kNotANumber}},
      {"leading zeros", {{"location", "w"}, {"length", "016"}},
       {"warns", "length '016' is not in canonical decimal form"}, kOk,
       kOk, kOk},
      {"a sign", {{"location", "w"}, {"length", "+16"}},
       {"corrupt", "'length' '+16' is not"}, {"invalid_argument", "'length' '+16' is not"},
       {"corrupt", "'length' '+16' is not"}, {"corrupt", "'length' '+16' is not"}},
      {"negative offset", {{"location", "w"}, {"offset", "-1"}, {"length", "16"}},
       {"corrupt", "'offset' '-1' is not"}, {"invalid_argument", "'offset' '-1' is not"},
       {"corrupt", "'offset' '-1' is not"}, {"corrupt", "'offset' '-1' is not"}},
      {"2^64", {{"location", "w"}, {"length", "18446744073709551616"}},
       {"corrupt", kNotANumber}, {"invalid_argument", kNotANumber},
       {"corrupt", kNotANumber}, {"corrupt", kNotANumber}},
      {"unknown key", {{"location", "w"}, {"length", "16"}, {"colour", "red"}},
       {"warns", "external_data key 'colour' is not part of an .onnxz reference"},
       {"invalid_argument", "external_data key 'colour' is not part of an .onnxz reference"},
       kOk, kOk},
      {"basepath", {{"location", "w"}, {"length", "16"}, {"basepath", "."}},
       {"warns", "external_data key 'basepath' is not part of an .onnxz reference"},
       {"invalid_argument", "external_data key 'basepath' is not part of an .onnxz reference"},
       kOk, kOk},
      {"checksum", {{"location", "w"}, {"length", "16"}, {"checksum", "0123abcd"}},
       {"warns", "external_data key 'checksum' is not part of an .onnxz reference"},
       {"invalid_argument", "external_data key 'checksum' is not part of an .onnxz reference"},
       kOk, kOk},
      {"keys out of order", {{"length", "16"}, {"location", "w"}},
       {"warns", "not in the order location, length"}, kOk,
       kOk, kOk},
      {"offset 0", {{"location", "w"}, {"offset", "0"}, {"length", "16"}},
       {"warns", "an 'offset' key (of 0) is not part of a canonical reference"}, kOk,
       kOk, kOk},
      {"offset 8", {{"location", "w"}, {"offset", "8"}, {"length", "16"}},
       {"corrupt", "offset '8': a payload starts at its entry's first byte"},
       {"invalid_argument", "offset '8': a payload starts at its entry's first byte"},
       {"corrupt", "offset 8 + length 16 is past the end of the entry (16 bytes)"},
       {"corrupt", "offset 8 + length 16 is past the end of the file (16 bytes)"}},
      {"length differs", {{"location", "w"}, {"length", "12"}},
       {"corrupt", "length '12' differs from the entry's 16 bytes"},
       {"invalid_argument", "length '12' differs from the entry's 16 bytes"},
       {"corrupt", "its 12 bytes differ from dims x element size (16 bytes)"},
       {"corrupt", "length 12 differs from dims x element size (16 bytes)"}},
  };
  return table;
}
// clang-format on

ModelProto model_with(const Keys& keys) {
  ModelProto m;
  m.ir_version = 8;
  m.graph.ensure().initializer.push_back(tensor_with(keys));
  return m;
}

const std::vector<std::uint8_t>& payload() {
  static const std::vector<std::uint8_t> bytes = test_support::pattern_bytes(16, 3);
  return bytes;
}

// What a path did, for comparison with an Outcome: the Error, or nothing (and verify's findings).
struct Result {
  bool failed = false;
  ErrorCode code = ErrorCode::kCorrupt;
  std::string message;
};

template <typename Body>
Result run(Body&& body) {
  try {
    body();
    return {};
  } catch (const Error& e) {
    return {true, e.code(), e.message()};
  }
}

std::size_t count_of(std::string_view text, std::string_view part) {
  std::size_t count = 0;
  for (std::size_t at = text.find(part); at != std::string_view::npos;
       at = text.find(part, at + part.size())) {
    ++count;
  }
  return count;
}

void expect_outcome(const Outcome& expected, const Result& got, const fs::path& file) {
  if (expected.result == "ok" || expected.result == "warns") {
    EXPECT_FALSE(got.failed) << got.message;
    return;
  }
  ASSERT_TRUE(got.failed) << "accepted, expected " << expected.result << ": " << expected.words;
  EXPECT_EQ(to_string(got.code), expected.result) << got.message;
  EXPECT_NE(got.message.find(expected.words), std::string::npos) << got.message;
  // Each place once, the file first, and no code word inside the message.
  EXPECT_TRUE(got.message.starts_with(file.string() + ": ")) << got.message;
  EXPECT_EQ(count_of(got.message, file.string()), 1u) << got.message;
  EXPECT_EQ(count_of(got.message, "tensor 'w' at graph/initializer[0]"), 1u) << got.message;
  EXPECT_EQ(count_of(got.message, "tensor 'w'"), 1u) << got.message;
  EXPECT_EQ(count_of(got.message, std::string(to_string(got.code)) + ":"), 0u) << got.message;
}

// verify() applies load's rule and keeps going: its error, or the warning a "warns" row names.
void expect_verify(const Outcome& expected, const VerifyReport& report) {
  if (expected.result == "ok") {
    EXPECT_TRUE(report.ok());
    return;
  }
  const VerifyFinding::Severity severity = expected.result == "warns"
                                               ? VerifyFinding::Severity::kWarning
                                               : VerifyFinding::Severity::kError;
  bool found = false;
  for (const VerifyFinding& finding : report.findings) {
    found = found || (finding.severity == severity &&
                      finding.message.find(expected.words) != std::string::npos);
  }
  EXPECT_TRUE(found) << "no " << to_string(severity) << " with: " << expected.words;
  EXPECT_EQ(report.loadable(), expected.result == "warns");
}

void write_archive(const fs::path& path, const ModelProto& model) {
  ZipWriter zip(path);
  zip.add("w", payload());
  zip.add(kModelEntryName, serialize_model(model));
  zip.finish();
}

TEST(ExternalDataTable, SameKeysThroughAllFourReaders) {
  ScratchDir dir("external_data_table");
  for (const Row& row : rows()) {
    SCOPED_TRACE(row.what);
    const ModelProto model = model_with(row.keys);

    const fs::path archive = dir / "in.onnxz";
    write_archive(archive, model);
    {
      SCOPED_TRACE("load");
      expect_outcome(row.load, run([&] { Archive::open(archive); }), archive);
      expect_verify(row.load, verify(archive));
    }
    {
      SCOPED_TRACE("writer");
      const fs::path out = dir / "written.onnxz";
      const Result got = run([&] {
        ArchiveWriter writer(out);
        const std::int64_t dims[] = {4};
        EXPECT_EQ(writer.add_tensor("w", TensorProto::kFloat, dims, payload()).location, "w");
        writer.finish(model);
      });
      expect_outcome(row.writer, got, out);
      if (!got.failed) {
        EXPECT_TRUE(verify(out).ok());  // Written in the canonical form.
      }
    }
    {
      SCOPED_TRACE("repack");
      const fs::path out = dir / "repacked.onnxz";
      const Result got = run([&] { repack(archive, out); });
      expect_outcome(row.repack, got, archive);
      if (!got.failed) {
        EXPECT_TRUE(verify(out).ok());
      }
    }
    {
      SCOPED_TRACE("legacy");
      const fs::path onnx = dir / "model.onnx";
      test_support::write_file_bytes(dir / "w", std::string(payload().begin(), payload().end()));
      serialize_model_to_file(model, onnx);
      ModelProto read;
      const Result got = run([&] { read = read_legacy_model(onnx); });
      expect_outcome(row.legacy, got, onnx);
      if (!got.failed) {
        const TensorProto& w = read.graph->initializer[0];
        ASSERT_TRUE(w.raw_data);
        EXPECT_EQ(std::vector<std::uint8_t>(w.raw_data->view().begin(), w.raw_data->view().end()),
                  payload());
      }
    }
  }
}

}  // namespace
}  // namespace onnxzip
