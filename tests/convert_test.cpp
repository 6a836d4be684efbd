// convert() and repack(): legacy models from tests/data/make_legacy_models.py (python3-onnx)
// converted both ways and judged by the reference package again; archives rewritten by Python's
// zipfile (tests/data/rezip_archive.py) repacked into conforming ones.
#include "onnxzip/convert.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "onnxzip/error.h"
#include "onnxzip/internal/zip_reader.h"
#include "onnxzip/ir_check.h"
#include "onnxzip/onnx_codec.h"
#include "onnxzip/tensor.h"
#include "support/expect_contains.h"
#include "support/external_tool.h"
#include "support/legacy_models.h"
#include "support/model_builder.h"
#include "support/progress_calls.h"
#include "support/scratch_dir.h"
#include "support/sha256.h"
#include "support/zip_builder.h"
#include "zip_writer.h"

namespace onnxzip {
namespace {

namespace fs = std::filesystem;
using test_support::Digests;
using test_support::digests_of;
using test_support::kLegacyCases;
using test_support::kPython;
using test_support::LegacyModelSet;
using test_support::python_dump;
using test_support::read_file_bytes;
using test_support::run_tool;
using test_support::ScratchDir;
using test_support::sha256_hex;
using test_support::shell_quote;

const fs::path kRezip = fs::path(ONNXZIP_TEST_DATA_DIR) / "rezip_archive.py";

// A model check_ir accepts, with an empty graph.
ModelProto model_with_ir_fields() {
  ModelProto model;
  model.ir_version = 8;
  model.opset_import.emplace_back().version = 17;
  model.graph.ensure().name = "g";
  return model;
}

template <class Body>
std::string error_of(ErrorCode code, Body&& body) {
  try {
    body();
  } catch (const Error& e) {
    EXPECT_EQ(to_string(e.code()), to_string(code)) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error thrown";
  return {};
}

// The model with every typed field moved to raw_data: conversions may do that to the tensors
// they externalize, and nothing else.
ModelProto normalized(ModelProto model) {
  for_each_tensor(model, [](TensorProto& t, const TensorSite&) {
    if (t.data_type.value_or(0) != TensorProto::kString) move_typed_data_to_raw(t);
  });
  return model;
}

std::string file_digest(const fs::path& path) {
  const std::vector<std::uint8_t> bytes = read_file_bytes(path);
  return sha256_hex(bytes);
}

// Every file of a folder with its digest: to prove an input untouched and nothing else written.
std::map<std::string, std::string> snapshot(const fs::path& folder) {
  std::map<std::string, std::string> out;
  for (const auto& item : fs::directory_iterator(folder)) {
    out[item.path().filename().string()] = file_digest(item.path());
  }
  return out;
}

class ConvertModels : public ::testing::Test {
 protected:
  void SetUp() override {
    models_ = LegacyModelSet::get();
    if (models_ == nullptr) GTEST_SKIP() << "needs " << kPython << " with the onnx package";
  }
  const LegacyModelSet* models_ = nullptr;
};

TEST_F(ConvertModels, EveryLegacyFormToArchiveAndBack) {
  ScratchDir out("convert_both_ways");
  std::vector<fs::path> legacy_outputs;
  for (const std::string name : kLegacyCases) {
    SCOPED_TRACE(name);
    const fs::path in = models_->model(name);
    const auto before = snapshot(in.parent_path());
    const ModelProto original = read_legacy_model(in);

    const fs::path archive = out / (name + ".onnxz");
    EXPECT_EQ(convert(in, archive).from, ModelFormat::kLegacy);
    const VerifyReport report = verify(archive);
    EXPECT_TRUE(report.ok()) << (report.findings.empty() ? "" : report.findings[0].message);
    const ModelProto loaded = load(archive);
    EXPECT_EQ(digests_of(loaded), models_->expected(name));
    EXPECT_EQ(normalized(loaded), normalized(original));

    const fs::path back = out / (name + ".onnx");
    EXPECT_EQ(convert(archive, back).from, ModelFormat::kOnnxz);
    const ModelProto reread = read_legacy_model(back);
    EXPECT_EQ(normalized(reread), normalized(original));
    legacy_outputs.push_back(back);

    EXPECT_EQ(snapshot(in.parent_path()), before);  // The input, data files included, untouched.
  }
  // Small models: written inline, so no data file next to them.
  std::vector<std::string> names = out.file_names();
  EXPECT_EQ(names.size(), 2 * std::size(kLegacyCases));
  EXPECT_TRUE(std::none_of(names.begin(), names.end(),
                           [](const std::string& n) { return n.ends_with(".data"); }));
  const auto views = python_dump(legacy_outputs);
  for (const fs::path& path : legacy_outputs) {
    SCOPED_TRACE(path.string());
    EXPECT_EQ(views.at(path.string()).checker, "ok");
    EXPECT_EQ(views.at(path.string()).digests, models_->expected("inline_raw"));
  }
}

// The external references of a legacy model file, by tensor place: location, offset, length.
struct Ref {
  std::string location;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};
std::map<std::string, Ref> references_in(const fs::path& path) {
  std::map<std::string, Ref> out;
  for_each_tensor(parse_model_file(path), [&](const TensorProto& t, const TensorSite& site) {
    if (t.data_location != TensorProto::kExternal) return;
    Ref ref;
    for (const StringStringEntryProto& e : t.external_data) {
      if (*e.key == "location") ref.location = *e.value;
      if (*e.key == "offset") ref.offset = std::stoull(*e.value);
      if (*e.key == "length") ref.length = std::stoull(*e.value);
    }
    out[std::string(site.path)] = ref;
  });
  return out;
}

TEST_F(ConvertModels, ExternalDataOnRequestOneFileOrSplit) {
  ScratchDir out("convert_external");
  const fs::path archive = out / "m.onnxz";
  convert(models_->model("inline_typed"), archive);

  struct Case {
    const char* name;
    std::string data_file;
    std::uint64_t max_file_size;
    std::uint64_t alignment;
    std::uint64_t threshold;
  };
  const Case cases[] = {
      {"default_name", "", 0, 4096, 1024},
      {"named", "weights.bin", 0, 64, 0},
      {"split", "weights.bin", 256, 128, 0},
  };
  std::vector<fs::path> written;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const fs::path folder = out / c.name;
    fs::create_directory(folder);
    ConvertOptions options;
    options.legacy.mode = LegacyWriteOptions::Mode::kExternal;
    options.legacy.data_file_name = c.data_file;
    options.legacy.max_file_size = c.max_file_size;
    options.legacy.alignment = c.alignment;
    options.legacy.threshold = c.threshold;
    EXPECT_EQ(convert(archive, folder / "model.onnx", options).from, ModelFormat::kOnnxz);
    written.push_back(folder / "model.onnx");

    const auto refs = references_in(folder / "model.onnx");
    const std::string base = c.data_file.empty() ? "model.onnx.data" : c.data_file;
    std::map<std::string, std::uint64_t> file_end;
    for (const auto& [place, ref] : refs) {
      SCOPED_TRACE(place);
      EXPECT_EQ(ref.offset % c.alignment, 0u);
      EXPECT_TRUE(ref.location == base || ref.location.starts_with(base + "."));
      file_end[ref.location] = std::max(file_end[ref.location], ref.offset + ref.length);
    }
    EXPECT_EQ(refs.size(), c.threshold == 0 ? 15u : 2u);  // w_big and w_i32_big at 1 KiB.
    for (const auto& [file, end] : file_end) {
      EXPECT_EQ(fs::file_size(folder / file), end);  // Nothing after the last payload.
    }
    if (c.max_file_size != 0) {
      EXPECT_GE(file_end.size(), 3u);
      EXPECT_EQ(file_end.count(base + ".1"), 1u);
    } else {
      EXPECT_EQ(file_end.size(), 1u);
    }
    EXPECT_EQ(digests_of(read_legacy_model(folder / "model.onnx")),
              models_->expected("inline_typed"));
  }
  const auto views = python_dump(written);
  for (const fs::path& path : written) {
    SCOPED_TRACE(path.string());
    EXPECT_EQ(views.at(path.string()).checker, "ok");
    EXPECT_EQ(views.at(path.string()).digests, models_->expected("inline_raw"));
  }
}

TEST_F(ConvertModels, NeverWritesOverItsInput) {
  ScratchDir dir("convert_same_file");
  for (const auto& item :
       fs::directory_iterator(models_->model("external_one_file").parent_path())) {
    fs::copy_file(item.path(), dir / item.path().filename().string());
  }
  const fs::path model = dir / "model.onnx";
  const fs::path archive = dir / "model.onnxz";
  convert(model, archive);
  fs::create_hard_link(archive, dir / "alias.onnxz");
  fs::create_symlink("model.onnx", dir / "link.onnx");
  const auto before = snapshot(dir.path());

  // The model itself, under its name, a symbolic link, and its data file as output.
  EXPECT_CONTAINS(error_of(ErrorCode::kInvalidArgument, [&] { convert(model, model); }),
                  "the input is never written to");
  EXPECT_CONTAINS(error_of(ErrorCode::kInvalidArgument, [&] { convert(model, dir / "link.onnx"); }),
                  "link.onnx");
  EXPECT_CONTAINS(
      error_of(ErrorCode::kInvalidArgument, [&] { convert(model, dir / "weights.bin"); }),
      "external data file 'weights.bin'");
  // The archive, by name, by a hard link, and as a data file of the legacy output.
  error_of(ErrorCode::kInvalidArgument, [&] { convert(archive, archive); });
  error_of(ErrorCode::kInvalidArgument, [&] { convert(archive, dir / "alias.onnxz"); });
  ConvertOptions options;
  options.legacy.mode = LegacyWriteOptions::Mode::kExternal;
  options.legacy.data_file_name = "model.onnxz";
  EXPECT_CONTAINS(
      error_of(ErrorCode::kInvalidArgument, [&] { convert(archive, dir / "other.onnx", options); }),
      "as a data file of the output");
  options.legacy.data_file_name = "alias";
  options.legacy.max_file_size = 1;
  fs::rename(dir / "alias.onnxz", dir / "alias.3");
  error_of(ErrorCode::kInvalidArgument, [&] { convert(archive, dir / "other.onnx", options); });
  fs::rename(dir / "alias.3", dir / "alias.onnxz");
  error_of(ErrorCode::kInvalidArgument, [&] { repack(archive, dir / "alias.onnxz"); });

  EXPECT_EQ(snapshot(dir.path()), before);
}

TEST_F(ConvertModels, ModelsBreakingIrRulesConvertUnchanged) {
  ScratchDir dir("convert_ir");
  ModelProto model = read_legacy_model(models_->model("inline_raw"));
  // Nodes out of topological order and two nodes with one name: exporters do this.
  GraphProto& graph = *model.graph;
  std::swap(graph.node[0], graph.node[2]);
  graph.node[0].name = "twin";
  graph.node[1].name = "twin";
  serialize_model_to_file(model, dir / "bad.onnx");
  ASSERT_FALSE(check_ir(model).empty());

  convert(dir / "bad.onnx", dir / "bad.onnxz");
  EXPECT_TRUE(verify(dir / "bad.onnxz").ok());
  EXPECT_EQ(normalized(load(dir / "bad.onnxz")), normalized(model));
  EXPECT_EQ(check_ir(load(dir / "bad.onnxz")).size(), check_ir(model).size());
  convert(dir / "bad.onnxz", dir / "back.onnx");
  EXPECT_EQ(read_legacy_model(dir / "back.onnx"), model);
}

// A model with an inline FLOAT[4, 300] initializer 'w' holding only 100 bytes.
ModelProto model_with_short_tensor() {
  ModelProto model = model_with_ir_fields();
  TensorProto& w = model.graph->initializer.emplace_back();
  w.name = "w";
  w.data_type = TensorProto::kFloat;
  w.dims = {4, 300};
  w.raw_data = TensorBytes::owned(OwnedBytes(100));
  return model;
}

TEST(ConvertInputs, WhatIsNoModelOrCannotBeCarriedOverIsRefusedNamingTheInput) {
  ScratchDir dir("convert_refused");
  test_support::write_file_bytes(dir / "empty.onnx", "");
  ModelProto metadata_only;
  metadata_only.producer_name = "not a model";
  serialize_model_to_file(metadata_only, dir / "metadata_only.onnx");
  serialize_model_to_file(model_with_short_tensor(), dir / "short.onnx");
  // Archives made by hand: save() would refuse the short tensor itself.
  const auto hand_made = [&](const std::string& name, const ModelProto& model) {
    ZipWriter zip(dir / name);
    zip.add(kModelEntryName, serialize_model(model));
    zip.finish();
  };
  hand_made("empty_model.onnxz", ModelProto());
  hand_made("short.onnxz", model_with_short_tensor());
  const std::string short_tensor =
      ": tensor 'w' at graph/initializer[0]: raw_data holds 100 bytes, but dims [4, 300] of "
      "FLOAT make 4800 bytes";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"empty.onnx", ": the file is empty, so it is not an ONNX model"},
      {"metadata_only.onnx",
       ": the model has neither an ir_version nor a graph, so it is not an ONNX model"},
      {"short.onnx", short_tensor},
      {"empty_model.onnxz",
       ": the model has neither an ir_version nor a graph, so it is not an ONNX model"},
      {"short.onnxz", short_tensor},
  };
  const auto before = snapshot(dir.path());
  for (const auto& entry : cases) {
    // Named copies: clang 14 lambdas cannot capture structured bindings.
    const std::string& input = entry.first;
    const std::string& problem = entry.second;
    SCOPED_TRACE(input);
    const fs::path out = dir / (input.ends_with(".onnxz") ? "out.onnx" : "out.onnxz");
    const std::string message = error_of(ErrorCode::kCorrupt, [&] { convert(dir / input, out); });
    EXPECT_TRUE(message.ends_with((dir / input).string() + problem)) << message;
    EXPECT_EQ(snapshot(dir.path()), before);  // Nothing written, not even a temporary.
  }
}

TEST(ConvertInputs, AnOutputNamedForTheOtherFormatIsRefused) {
  EXPECT_EQ(format_named_by("a/m.onnxz"), ModelFormat::kOnnxz);
  EXPECT_EQ(format_named_by("M.ONNX"), ModelFormat::kLegacy);
  EXPECT_EQ(format_named_by("m.onnx.data"), std::nullopt);
  EXPECT_EQ(format_named_by("m.zip"), std::nullopt);
  EXPECT_NO_THROW(check_output_name("m.bin", ModelFormat::kOnnxz));
  EXPECT_NO_THROW(check_output_name("m.onnx", ModelFormat::kLegacy));

  ScratchDir dir("convert_direction");
  serialize_model_to_file(model_with_short_tensor(), dir / "m.onnx");
  ZipWriter zip(dir / "m.onnxz");
  zip.add(kModelEntryName, serialize_model(ModelProto()));
  zip.finish();
  const auto before = snapshot(dir.path());
  EXPECT_EQ(
      error_of(ErrorCode::kInvalidArgument, [&] { convert(dir / "m.onnxz", dir / "b.onnxz"); }),
      "invalid_argument: " + (dir / "b.onnxz").string() +
          ": the output would be a legacy .onnx model, but its name says .onnxz archive "
          "(.onnxz names an archive, .onnx a legacy model): name it '" +
          (dir / "b.onnx").string() + "' or use another extension");
  EXPECT_CONTAINS(
      error_of(ErrorCode::kInvalidArgument, [&] { convert(dir / "m.onnx", dir / "out.onnx"); }),
      "out.onnx: the output would be an .onnxz archive, but its name says legacy .onnx");
  EXPECT_CONTAINS(
      error_of(ErrorCode::kInvalidArgument, [&] { repack(dir / "m.onnxz", dir / "r.onnx"); }),
      "r.onnx: the output would be an .onnxz archive");
  EXPECT_EQ(snapshot(dir.path()), before);
}

TEST(ConvertInputs, ModelsWithOnlyIrProblemsConvert) {
  // An ir_version and nothing else: no graph, no opset_import. verify reports both; it is a
  // model all the same, and converts unchanged.
  ScratchDir dir("convert_ir_only");
  ModelProto model;
  model.ir_version = 8;
  serialize_model_to_file(model, dir / "m.onnx");
  ASSERT_EQ(check_ir(model).size(), 2u);
  EXPECT_EQ(convert(dir / "m.onnx", dir / "m.onnxz").from, ModelFormat::kLegacy);
  EXPECT_EQ(load(dir / "m.onnxz"), model);
  EXPECT_EQ(convert(dir / "m.onnxz", dir / "back.onnx").from, ModelFormat::kOnnxz);
  EXPECT_EQ(read_legacy_model(dir / "back.onnx"), model);
}

// --- Progress ---

using test_support::expect_progress_well_formed;
using test_support::ProgressCall;

ModelProto model_with_big_tensor(std::int64_t floats) {
  ModelProto model;
  model.ir_version = 8;
  GraphProto& graph = model.graph.ensure();
  graph.initializer.push_back(test_support::raw_tensor("big", TensorProto::kFloat, {floats}, 1));
  graph.initializer.push_back(test_support::raw_tensor("small", TensorProto::kFloat, {600}, 2));
  graph.initializer.push_back(test_support::raw_tensor("tiny", TensorProto::kFloat, {3}, 3));
  return model;
}

TEST(ConvertProgress, ReportsEveryDirectionMonotonicallyToTheTotal) {
  ScratchDir dir("convert_progress");
  constexpr std::int64_t kFloats = 10 << 20;  // 40 MiB: several steps of 16 MiB.
  constexpr std::uint64_t kPayload = kFloats * 4 + 2400;
  serialize_model_to_file(model_with_big_tensor(kFloats), dir / "m.onnx");

  std::vector<ProgressCall> calls;
  ConvertOptions options;
  options.archive.progress = [&](std::uint64_t done, std::uint64_t total) {
    calls.push_back({done, total});
  };
  options.legacy.progress = options.archive.progress;
  convert(dir / "m.onnx", dir / "m.onnxz", options);
  expect_progress_well_formed(calls, kPayload);  // The externalized payloads: big and small.
  EXPECT_GE(calls.size(), 4u);                   // Within the 40 MiB tensor too.

  for (const auto mode : {LegacyWriteOptions::Mode::kInline, LegacyWriteOptions::Mode::kExternal}) {
    SCOPED_TRACE(static_cast<int>(mode));
    calls.clear();
    options.legacy.mode = mode;
    convert(dir / "m.onnxz", dir / "back.onnx", options);
    // Inline: the whole file; external: the payloads that go to the data file.
    expect_progress_well_formed(calls, mode == LegacyWriteOptions::Mode::kInline
                                           ? fs::file_size(dir / "back.onnx")
                                           : kPayload);
    EXPECT_GE(calls.size(), 4u);
  }

  calls.clear();
  SaveOptions save_options;
  save_options.progress = options.archive.progress;
  repack(dir / "m.onnxz", dir / "repacked.onnxz", {.save = save_options});
  expect_progress_well_formed(calls, kPayload);

  // The kept entries, then the inline tensor that finish() externalizes at threshold 0 (the
  // 12-byte "tiny"): one meter across both parts of the write.
  calls.clear();
  save_options.threshold = 0;
  repack(dir / "m.onnxz", dir / "repacked.onnxz", {.save = save_options});
  expect_progress_well_formed(calls, kPayload + 12);
  EXPECT_GE(calls.size(), 4u);
}

TEST(ConvertProgress, ACallbackThatThrowsCancelsAndLeavesNothing) {
  ScratchDir dir("convert_cancel");
  serialize_model_to_file(model_with_big_tensor(1 << 20), dir / "m.onnx");
  ConvertOptions options;
  for (const bool at_end : {false, true}) {
    SCOPED_TRACE(at_end);
    options.archive.progress = [&](std::uint64_t done, std::uint64_t total) {
      if (done == total || (!at_end && done == 0)) throw Error(ErrorCode::kBadState, "cancelled");
    };
    EXPECT_CONTAINS(
        error_of(ErrorCode::kBadState, [&] { convert(dir / "m.onnx", dir / "m.onnxz", options); }),
        "cancelled");
    EXPECT_EQ(dir.file_names(), std::vector<std::string>{"m.onnx"});
  }
  options.archive.progress = nullptr;
  convert(dir / "m.onnx", dir / "m.onnxz", options);
  options.legacy.progress = [&](std::uint64_t done, std::uint64_t total) {
    if (done == total) throw Error(ErrorCode::kBadState, "cancelled");
  };
  options.legacy.mode = LegacyWriteOptions::Mode::kExternal;
  options.legacy.threshold = 0;
  error_of(ErrorCode::kBadState, [&] { convert(dir / "m.onnxz", dir / "back.onnx", options); });
  EXPECT_EQ(dir.file_names(), (std::vector<std::string>{"m.onnx", "m.onnxz"}));
}

// With load.verify_crc (the CLI's), the CRC-32s of the archive's stored payloads are checked
// beside the write: a wrong one is the same error as load()'s, and nothing is left at the
// destination; the caller's progress never reaches its total. Written inline and external, the
// archive mapped and read into memory, the damage in the small and in the big tensor.
TEST(ConvertCrc, AnArchiveWithAWrongPayloadCrcConvertsToNothing) {
  ScratchDir dir("convert_crc");
  save(model_with_big_tensor(1 << 20), dir / "good.onnxz");
  const std::vector<std::uint8_t> good = read_file_bytes(dir / "good.onnxz");
  for (const char* damaged : {"small", "big"}) {
    const ZipEntry entry = *ZipReader::open(dir / "good.onnxz").find(damaged);
    std::vector<std::uint8_t> bytes = good;
    bytes[entry.local->data_offset + entry.size / 2] ^= 0x10;
    test_support::write_file_bytes(dir / "bad.onnxz", std::string(bytes.begin(), bytes.end()));
    const std::string expected = (dir / "bad.onnxz").string() + ": entry '" + damaged +
                                 "' at offset " + std::to_string(entry.local_header_offset) +
                                 ": CRC-32 mismatch";
    for (const FileAccess access : {FileAccess::kMap, FileAccess::kRead}) {
      for (const auto mode :
           {LegacyWriteOptions::Mode::kInline, LegacyWriteOptions::Mode::kExternal}) {
        SCOPED_TRACE(std::string(damaged) + (access == FileAccess::kMap ? " mapped " : " read ") +
                     (mode == LegacyWriteOptions::Mode::kInline ? "inline" : "external"));
        test_support::ProgressRecorder progress;
        ConvertOptions options;
        options.load.verify_crc = true;
        options.load.access = access;
        options.legacy.mode = mode;
        options.legacy.progress = progress.callback();
        EXPECT_CONTAINS(error_of(ErrorCode::kCorrupt,
                                 [&] { convert(dir / "bad.onnxz", dir / "m.onnx", options); }),
                        expected);
        EXPECT_EQ(dir.file_names(), (std::vector<std::string>{"bad.onnxz", "good.onnxz"}));
        for (const test_support::ProgressCall& call : progress.calls) {
          EXPECT_LT(call.done, call.total);  // The write never completed.
        }
      }
    }
  }
  // Unchecked, the damaged archive converts (the check is the caller's choice); checked, a
  // sound one converts to what the unchecked conversion writes.
  convert(dir / "bad.onnxz", dir / "unchecked.onnx");
  ConvertOptions checked;
  checked.load.verify_crc = true;
  convert(dir / "good.onnxz", dir / "checked.onnx", checked);
  convert(dir / "good.onnxz", dir / "plain.onnx");
  EXPECT_EQ(read_file_bytes(dir / "checked.onnx"), read_file_bytes(dir / "plain.onnx"));
}

// --- repack ---

class Repack : public ConvertModels {
 protected:
  // rezip_archive.py SRC DST MODE ARGS...
  static void rezip(const fs::path& src, const fs::path& dst, const std::string& mode,
                    const std::string& args = "") {
    const auto result = run_tool(std::string(kPython) + " " + shell_quote(kRezip.string()) + " " +
                                 shell_quote(src.string()) + " " + shell_quote(dst.string()) + " " +
                                 mode + " " + args);
    ASSERT_EQ(result.exit_code, 0) << result.output;
  }
};

TEST_F(Repack, ArchivesOtherToolsRewrote) {
  ScratchDir dir("repack_rezipped");
  const fs::path original = dir / "original.onnxz";
  SaveOptions dedupe;
  dedupe.threshold = 0;
  dedupe.dedupe = true;  // Tied weights: several tensors share an entry.
  save(test_support::checker_model_typed_fields(), original, dedupe);
  const ModelProto expected = load(original);
  const auto entries_of = [](const fs::path& path) {
    std::vector<std::string> names;
    const ZipReader zip = ZipReader::open(path);
    for (const ZipEntry& e : zip.entries()) names.push_back(e.name);
    return names;
  };

  struct Case {
    const char* name;
    const char* mode;
    const char* args;
    std::vector<std::string> dropped;
  };
  const Case cases[] = {
      {"deflated", "deflated", "", {}},
      {"streamed", "streamed", "", {}},
      {"folder_and_extra", "deflated", "--folder model --extra", {"model/", "model/README.txt"}},
      // `zip -r out.zip exports/resnet` records the path as typed: any depth will do.
      {"nested_folders",
       "streamed",
       "--folder exports/resnet --extra",
       {"exports/resnet/", "exports/resnet/README.txt"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const fs::path rezipped = dir / (std::string(c.name) + ".zip");
    rezip(original, rezipped, c.mode, c.args);
    // The archive layer refuses these: __MODEL_PROTO is not last (or not even at the top).
    EXPECT_FALSE(verify(rezipped).loadable());
    const std::string before = file_digest(rezipped);

    const fs::path repacked = dir / (std::string(c.name) + ".onnxz");
    const RepackResult result = repack(rezipped, repacked);
    const VerifyReport report = verify(repacked);
    EXPECT_TRUE(report.ok()) << (report.findings.empty() ? "" : report.findings[0].message);
    EXPECT_EQ(load(repacked), expected);
    // Entry names kept (in name order now, as the tool wrote them), nothing unpacked.
    std::vector<std::string> names = entries_of(original);
    names.pop_back();  // __MODEL_PROTO
    std::sort(names.begin(), names.end());
    EXPECT_EQ(result.kept_entries, names);
    names.push_back(std::string(kModelEntryName));
    EXPECT_EQ(entries_of(repacked), names);
    EXPECT_TRUE(result.unpacked_entries.empty());
    EXPECT_EQ(result.dropped_entries, c.dropped);
    EXPECT_EQ(file_digest(rezipped), before);
  }

  // A conforming archive repacks to the same bytes.
  repack(original, dir / "again.onnxz", {.save = dedupe});
  EXPECT_EQ(file_digest(dir / "again.onnxz"), file_digest(original));
}

TEST_F(Repack, LegacyReferencesIntoOneFileAreUnpackedPerTensor) {
  ScratchDir dir("repack_legacy");
  // A legacy folder zipped with the model renamed: references with offsets into weights.bin.
  const fs::path folder = models_->model("external_one_file").parent_path();
  const fs::path zip = dir / "legacy.zip";
  const std::string script =
      "import sys, zipfile\n"
      "folder, out = sys.argv[1:3]\n"
      "with zipfile.ZipFile(out, 'w', zipfile.ZIP_DEFLATED) as z:\n"
      "    z.write(folder + '/weights.bin', 'weights.bin')\n"
      "    z.write(folder + '/model.onnx', '__MODEL_PROTO')\n";
  const auto made = run_tool(std::string(kPython) + " -c " + shell_quote(script) + " " +
                             shell_quote(folder.string()) + " " + shell_quote(zip.string()));
  ASSERT_EQ(made.exit_code, 0) << made.output;

  SaveOptions options;
  options.threshold = 0;
  const RepackResult result = repack(zip, dir / "out.onnxz", {.save = options});
  EXPECT_TRUE(result.kept_entries.empty());
  EXPECT_EQ(result.unpacked_entries, std::vector<std::string>{"weights.bin"});
  EXPECT_TRUE(verify(dir / "out.onnxz").ok());
  EXPECT_EQ(digests_of(load(dir / "out.onnxz")), models_->expected("external_one_file"));
}

TEST(RepackErrors, NamesTheArchiveTheTensorAndTheLocation) {
  ScratchDir dir("repack_errors");
  // ZIPs built with our own writer, entries stored and aligned; the model entry is what differs.
  const auto write_zip = [&](const std::string& name, const ModelProto* model,
                             const std::string& payload_name, std::size_t payload_size) {
    ZipWriter zip(dir / name);
    const std::vector<std::uint8_t> payload(payload_size, 7);
    zip.add(payload_name, payload);
    if (model != nullptr) {
      zip.add(kModelEntryName, serialize_model(*model));
    }
    zip.finish();
  };
  ModelProto model;
  TensorProto& w = model.graph.ensure().initializer.emplace_back();
  w.name = "w";
  w.data_type = TensorProto::kFloat;
  w.dims = {4};
  TensorRef{"data", 16}.apply_to(w);

  write_zip("no_model.zip", nullptr, "data", 16);
  EXPECT_CONTAINS(error_of(ErrorCode::kCorrupt, [&] { repack(dir / "no_model.zip", dir / "o"); }),
                  "no_model.zip: no entry named __MODEL_PROTO");
  write_zip("short.zip", &model, "data", 12);
  EXPECT_CONTAINS(error_of(ErrorCode::kCorrupt, [&] { repack(dir / "short.zip", dir / "o"); }),
                  "tensor 'w' at graph/initializer[0]: entry 'data': offset 0 + length 16 is past "
                  "the end of the entry (12 bytes)");
  write_zip("elsewhere.zip", &model, "other", 16);
  EXPECT_CONTAINS(error_of(ErrorCode::kCorrupt, [&] { repack(dir / "elsewhere.zip", dir / "o"); }),
                  "tensor 'w' at graph/initializer[0]: refers to 'data', which is no file of the "
                  "archive");
  w.external_data[0].value = "../data";
  write_zip("escape.zip", &model, "data", 16);
  EXPECT_CONTAINS(error_of(ErrorCode::kCorrupt, [&] { repack(dir / "escape.zip", dir / "o"); }),
                  "refers to '../data'");
  {
    std::vector<testing::TestEntry> entries(2);
    entries[0].name = "a/__MODEL_PROTO";
    entries[1].name = "a/b/__MODEL_PROTO";
    for (testing::TestEntry& e : entries) e.data = serialize_model(model);
    const std::vector<std::uint8_t> bytes = testing::build_zip(entries).bytes;
    test_support::write_file_bytes(dir / "two_depths.zip", std::string(bytes.begin(), bytes.end()));
  }
  EXPECT_CONTAINS(error_of(ErrorCode::kCorrupt, [&] { repack(dir / "two_depths.zip", dir / "o"); }),
                  "two_depths.zip: holds several models: entries 'a/__MODEL_PROTO' and "
                  "'a/b/__MODEL_PROTO'");
  EXPECT_FALSE(fs::exists(dir / "o"));
}

// A kept entry is copied, not read first: the CRC-32 the writer computes beside the copy checks
// it, and a mismatch leaves no output. Small and large entries take different writer paths.
TEST(RepackErrors, AStoredEntryWhoseBytesDoNotMatchItsCrcLeavesNoOutput) {
  ScratchDir dir("repack_crc");
  for (const std::int64_t size : {std::int64_t{16}, std::int64_t{1} << 20}) {
    SCOPED_TRACE(size);
    ModelProto model;
    model.ir_version = 8;
    TensorProto& w = model.graph.ensure().initializer.emplace_back();
    w.name = "w";
    w.data_type = TensorProto::kUint8;
    w.dims = {size};
    TensorRef{"w", static_cast<std::uint64_t>(size)}.apply_to(w);
    testing::TestEntry payload;
    payload.name = "w";
    payload.data.assign(static_cast<std::size_t>(size), 3);
    testing::TestEntry model_entry;
    model_entry.name = std::string(kModelEntryName);
    model_entry.data = serialize_model(model);
    testing::BuiltZip zip = testing::build_zip({payload, model_entry});
    zip.bytes[zip.entries[0].data_offset + static_cast<std::size_t>(size) / 2] = 4;
    test_support::write_file_bytes(dir / "bad.zip",
                                   std::string(zip.bytes.begin(), zip.bytes.end()));
    EXPECT_CONTAINS(
        error_of(ErrorCode::kCorrupt, [&] { repack(dir / "bad.zip", dir / "o.onnxz"); }),
        "bad.zip: entry 'w' at offset 0: CRC-32 mismatch: the data has ");
    EXPECT_FALSE(fs::exists(dir / "o.onnxz"));
  }
}

// A ZIP whose one tensor is 2 MiB of zeros deflated to about 2 KB: refused by the compression
// ratio limit unless the caller trusts it; then the kept entry streams from the inflater into
// the output.
TEST(RepackErrors, RefusesZipBombsUnlessTrusted) {
  ScratchDir dir("repack_bomb");
  ModelProto model;
  model.ir_version = 8;
  TensorProto& w = model.graph.ensure().initializer.emplace_back();
  w.name = "w";
  w.data_type = TensorProto::kUint8;
  w.dims = {2 << 20};
  TensorRef{"w", 2 << 20}.apply_to(w);
  testing::TestEntry payload;
  payload.name = "w";
  payload.data.assign(2 << 20, 0);
  payload.method = zip::kMethodDeflated;
  testing::TestEntry model_entry;
  model_entry.name = std::string(kModelEntryName);
  model_entry.data = serialize_model(model);
  const std::vector<std::uint8_t> zip_bytes = testing::build_zip({payload, model_entry}).bytes;
  test_support::write_file_bytes(dir / "bomb.zip", std::string(zip_bytes.begin(), zip_bytes.end()));
  const std::string message =
      error_of(ErrorCode::kLimitExceeded, [&] { repack(dir / "bomb.zip", dir / "o.onnxz"); });
  EXPECT_CONTAINS(message, "bomb.zip: entry 'w' at offset 0: deflated from ");
  EXPECT_CONTAINS(message, "above the limit of 100:1");
  EXPECT_FALSE(fs::exists(dir / "o.onnxz"));

  RepackOptions trusting;
  trusting.limits.max_compression_ratio = 0;
  const RepackResult result = repack(dir / "bomb.zip", dir / "o.onnxz", trusting);
  EXPECT_EQ(result.kept_entries, std::vector<std::string>{"w"});
  EXPECT_TRUE(verify(dir / "o.onnxz").ok());
  const ModelProto loaded = load(dir / "o.onnxz");
  const ByteSpan bytes = loaded.graph->initializer[0].raw_data->view();
  EXPECT_EQ(bytes.size(), std::size_t{2} << 20);
  EXPECT_TRUE(std::all_of(bytes.begin(), bytes.end(), [](std::uint8_t b) { return b == 0; }));
}

}  // namespace
}  // namespace onnxzip

namespace onnxzip {
namespace {

// FileAccess::kRead in both directions writes what mapping writes.
TEST(ConvertAccess, ReadingInputsIntoMemoryConvertsTheSame) {
  test_support::ScratchDir dir("convert_read_access");
  serialize_model_to_file(test_support::model_with_tensors_everywhere(), dir / "m.onnx");
  ConvertOptions read;
  read.read.access = FileAccess::kRead;
  read.load.access = FileAccess::kRead;
  EXPECT_EQ(convert(dir / "m.onnx", dir / "mapped.onnxz").from, ModelFormat::kLegacy);
  EXPECT_EQ(convert(dir / "m.onnx", dir / "read.onnxz", read).from, ModelFormat::kLegacy);
  EXPECT_EQ(test_support::read_file_bytes(dir / "mapped.onnxz"),
            test_support::read_file_bytes(dir / "read.onnxz"));
  EXPECT_EQ(convert(dir / "read.onnxz", dir / "mapped.onnx").from, ModelFormat::kOnnxz);
  EXPECT_EQ(convert(dir / "read.onnxz", dir / "read.onnx", read).from, ModelFormat::kOnnxz);
  EXPECT_EQ(test_support::read_file_bytes(dir / "mapped.onnx"),
            test_support::read_file_bytes(dir / "read.onnx"));
  repack(dir / "read.onnxz", dir / "mapped_repack.onnxz");
  RepackOptions reading;
  reading.access = FileAccess::kRead;
  repack(dir / "read.onnxz", dir / "read_repack.onnxz", reading);
  EXPECT_EQ(test_support::read_file_bytes(dir / "mapped_repack.onnxz"),
            test_support::read_file_bytes(dir / "read_repack.onnxz"));
}

TEST(VerifyModelBytes, AnArchiveInMemoryGetsTheFindingsOfItsFile) {
  ScratchDir dir("verify_model_bytes");
  const fs::path path = dir / "m.onnxz";
  save(test_support::model_with_tensors_everywhere(), path);
  std::vector<std::uint8_t> bytes = read_file_bytes(path);
  const auto lines = [](const VerifyReport& report) {
    std::vector<std::string> out;
    for (const VerifyFinding& finding : report.findings) out.push_back(to_string(finding));
    return out;
  };
  EXPECT_EQ(lines(verify_model_bytes(bytes, {}, path.string())), lines(verify_model_file(path)));
  bytes[bytes.size() / 3] ^= 0xFF;  // Somewhere in a payload or a record: a finding either way.
  const VerifyReport damaged = verify_model_bytes(bytes);
  ASSERT_FALSE(damaged.findings.empty());
  for (const std::string& line : lines(damaged)) EXPECT_EQ(line.rfind("<memory>: ", 0), 0u) << line;
}

TEST(VerifyModelBytes, ALegacyModelInMemoryIsParsedAndChecked) {
  const std::vector<std::uint8_t> bytes = serialize_model(model_with_ir_fields());
  EXPECT_TRUE(verify_model_bytes(bytes, {}, "m.onnx").ok());
  const std::vector<std::uint8_t> garbage{0xFF, 0xFF, 0xFF};
  const VerifyReport report = verify_model_bytes(garbage, {}, "m.onnx");
  ASSERT_EQ(report.findings.size(), 1u);
  EXPECT_EQ(report.findings[0].severity, VerifyFinding::Severity::kError);
  EXPECT_EQ(to_string(report.findings[0]).rfind("m.onnx: ", 0), 0u)
      << to_string(report.findings[0]);
}

}  // namespace
}  // namespace onnxzip
