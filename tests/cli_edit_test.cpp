// onnxzip edit, run as a user would: what changes in the archive (the model, nothing else: no
// other metadata, no payload byte, no offset), usage errors, and the unzip -> edit with the onnx
// package -> `onnxzip edit --model` workflow of the README.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "onnxzip/archive.h"
#include "onnxzip/internal/zip_reader.h"
#include "onnxzip/onnx_codec.h"
#include "support/cli_run.h"
#include "support/expect_contains.h"
#include "support/external_tool.h"
#include "support/legacy_models.h"
#include "support/model_builder.h"
#include "support/scratch_dir.h"

namespace onnxzip {
namespace {

using test_support::CliRun;
using test_support::operator<<;

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;
using test_support::kPython;
using test_support::read_file_bytes;
using test_support::run_tool;
using test_support::ScratchDir;
using test_support::shell_quote;

const fs::path kCli = ONNXZIP_CLI_PATH;

// run_cli(dir, args) with the scratch folder's path (support/cli_run.h).
CliRun run_cli(const ScratchDir& dir, const std::vector<std::string>& args) {
  return test_support::run_cli(dir.path(), args);
}

std::size_t line_count(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

ModelProto sample_model() {
  ModelProto model;
  model.ir_version = 8;
  model.producer_name = "exporter";
  model.producer_version = "3.1";
  for (const char* key : {"a", "b", "c"}) {
    StringStringEntryProto& entry = model.metadata_props.emplace_back();
    entry.key = key;
    entry.value = std::string("value of ") + key;
  }
  GraphProto& graph = model.graph.emplace();
  graph.name = "g";
  graph.initializer.push_back(test_support::raw_tensor("w0", TensorProto::kFloat, {64, 64}, 1));
  graph.initializer.push_back(test_support::raw_tensor("w1", TensorProto::kInt8, {5000}, 2));
  return model;
}

class CliEdit : public ::testing::Test {
 protected:
  void SetUp() override {
    if (kCli.empty()) GTEST_SKIP() << "built without the CLI";
  }
};

TEST_F(CliEdit, ChangesTheModelAndNothingElse) {
  ScratchDir dir("cli_edit");
  const fs::path path = dir / "m.onnxz";
  save(sample_model(), path);
  const Bytes before = read_file_bytes(path);
  const std::uint64_t model_offset = ZipReader::open(path).at(kModelEntryName).local_header_offset;

  const CliRun run =
      run_cli(dir, {"edit", path.string(), "--set-metadata", "b=new b", "--set-metadata", "d=x=y",
                    "--remove-metadata", "a", "--producer", "mytool:1.2", "--doc", "edited"});
  ASSERT_EQ(run.exit_code, 0) << run;
  EXPECT_EQ(run.out, "");
  EXPECT_EQ(run.err, "");

  const Bytes after = read_file_bytes(path);
  ASSERT_GE(after.size(), model_offset);
  EXPECT_TRUE(std::equal(before.begin(), before.begin() + static_cast<std::ptrdiff_t>(model_offset),
                         after.begin()));
  EXPECT_EQ(ZipReader::open(path).at(kModelEntryName).local_header_offset, model_offset);
  EXPECT_TRUE(verify(path).ok());

  // The model is the old one with exactly these changes.
  ModelProto expected = sample_model();
  expected.metadata_props.erase(expected.metadata_props.begin());  // a
  expected.metadata_props[0].value = "new b";
  StringStringEntryProto& d = expected.metadata_props.emplace_back();
  d.key = "d";
  d.value = "x=y";
  expected.producer_name = "mytool";
  expected.producer_version = "1.2";
  expected.doc_string = "edited";
  const fs::path saved = dir / "expected.onnxz";
  save(expected, saved);
  EXPECT_EQ(read_file_bytes(saved), after);

  // A producer without a version drops the old version.
  ASSERT_EQ(run_cli(dir, {"edit", path.string(), "--producer", "bare"}).exit_code, 0);
  const ModelProto model = load(path);
  EXPECT_EQ(model.producer_name.value_or(""), "bare");
  EXPECT_FALSE(model.producer_version.has_value());
}

TEST_F(CliEdit, UsageErrorsAndFailuresLeaveTheArchiveAlone) {
  ScratchDir dir("cli_edit_errors");
  const fs::path path = dir / "m.onnxz";
  save(sample_model(), path);
  const Bytes before = read_file_bytes(path);
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::string fragment;
  };
  const std::string p = path.string();
  const std::vector<Case> cases = {
      {{"edit", p}, 2, "nothing to change"},
      {{"edit", p, "--set-metadata", "novalue"}, 2, "--set-metadata: 'novalue' is not KEY=VALUE"},
      {{"edit", p, "--set-metadata", "=v"}, 2, "is not KEY=VALUE"},
      {{"edit", p, "--set-metadata", "a=1", "--remove-metadata", "a"},
       2,
       "metadata key 'a' is both set (--set-metadata) and removed (--remove-metadata)"},
      {{"edit", p, "--producer", ""}, 2, "--producer: the name is empty"},
      {{"edit", p, "--remove-metadata", "zzz"}, 1, p + ": the model has no metadata key 'zzz'"},
      {{"edit", (dir / "missing.onnxz").string(), "--doc", "x"}, 1, "missing.onnxz"},
      {{"edit", p, "--doc", "x", "--wait", "-1"},
       2,
       "--wait: -1 is not a number of seconds from 0 to 86400"},
      {{"sign", p, "--digests-only", "--wait", "nan"}, 2, "--wait: "},
  };
  for (const Case& c : cases) {
    const CliRun run = run_cli(dir, c.args);
    EXPECT_EQ(run.exit_code, c.exit_code) << run;
    EXPECT_EQ(run.out, "");
    EXPECT_EQ(line_count(run.err), c.exit_code == 2 ? 2u : 1u) << run;
    EXPECT_TRUE(run.err.starts_with("onnxzip: error: ")) << run;
    EXPECT_CONTAINS(run.err, c.fragment);
    EXPECT_EQ(read_file_bytes(path), before);
  }
}

// Readers hold the archive's lock shared for a moment: edit and sign wait for them (--wait,
// a few seconds by default); another edit holding it is reported after the wait, the archive
// left alone.
TEST_F(CliEdit, WaitsForReadersAndReportsAnotherEditAfterTheWait) {
  ScratchDir dir("cli_edit_wait");
  const fs::path path = dir / "m.onnxz";
  save(sample_model(), path);
  {
    const int reader = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(reader, 0);
    ASSERT_EQ(::flock(reader, LOCK_SH), 0);
    std::thread release([reader] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      ::close(reader);
    });
    const CliRun run = run_cli(dir, {"edit", path.string(), "--producer", "waited"});
    release.join();
    EXPECT_EQ(run.exit_code, 0) << run;
    EXPECT_EQ(load(path).producer_name.value_or(""), "waited");
  }
  const Bytes before = read_file_bytes(path);
  const int editor = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(editor, 0);
  ASSERT_EQ(::flock(editor, LOCK_EX), 0);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"edit", path.string(), "--doc", "x", "--wait", "0.2"},
        std::vector<std::string>{"sign", path.string(), "--digests-only", "--wait", "0"}}) {
    const CliRun run = run_cli(dir, args);
    EXPECT_EQ(run.exit_code, 1) << run;
    EXPECT_CONTAINS(run.err, "onnxzip: error: " + path.string() +
                                 ": cannot edit: locked by another process (another edit of it "
                                 "is in progress) for the ");
  }
  ::close(editor);
  EXPECT_EQ(read_file_bytes(path), before);
}

// A model from elsewhere that drops an entry: refused, then compacted with a note.
TEST_F(CliEdit, ModelFileAndCompact) {
  ScratchDir dir("cli_edit_model");
  const fs::path path = dir / "m.onnxz";
  save(sample_model(), path);
  const Bytes before = read_file_bytes(path);
  ModelProto model = parse_model(Archive::open(path).model_bytes());
  model.graph->initializer.pop_back();  // w1
  const fs::path model_file = dir / "__MODEL_PROTO";
  const std::vector<std::uint8_t> bytes = serialize_model(model);
  test_support::write_file_bytes(model_file, std::string(bytes.begin(), bytes.end()));

  CliRun run = run_cli(dir, {"edit", path.string(), "--model", model_file.string()});
  EXPECT_EQ(run.exit_code, 1) << run;
  EXPECT_CONTAINS(run.err, path.string() + ": no tensor of the new model refers to entry 'w1'");
  EXPECT_EQ(read_file_bytes(path), before);

  run = run_cli(dir, {"edit", path.string(), "--model", model_file.string(), "--compact"});
  EXPECT_EQ(run.exit_code, 0) << run;
  EXPECT_EQ(run.err,
            "onnxzip: note: " + path.string() + ": entry 'w1' left out: no tensor refers to it\n");
  EXPECT_TRUE(verify(path).ok());
  EXPECT_EQ(ZipReader::open(path).entries().size(), 2u);
}

// The README's workflow: unzip the model, edit it with the onnx package, put it back.
TEST_F(CliEdit, UnzipEditWithOnnxAndPutBack) {
  if (!test_support::python_onnx_available()) GTEST_SKIP() << "needs " << kPython << " with onnx";
  if (!test_support::find_tool("unzip")) GTEST_SKIP() << "needs unzip";
  ScratchDir dir("cli_edit_onnx");
  const fs::path path = dir / "m.onnxz";
  save(test_support::checker_model_mlp_with_if(), path);
  const Bytes before = read_file_bytes(path);
  const std::uint64_t model_offset = ZipReader::open(path).at(kModelEntryName).local_header_offset;
  const fs::path out = dir / "m";
  const auto unzipped = run_tool("unzip -q " + shell_quote(path.string()) + " __MODEL_PROTO -d " +
                                 shell_quote(out.string()));
  ASSERT_EQ(unzipped.exit_code, 0) << unzipped.output;
  const std::string script =
      "import onnx, sys\n"
      "m = onnx.load(sys.argv[1], load_external_data=False)\n"
      "onnx.helper.set_model_props(m, {'license': 'MIT'})\n"
      "m.graph.doc_string = 'edited with onnx'\n"
      "onnx.save(m, sys.argv[1])\n";
  const fs::path model_file = out / "__MODEL_PROTO";
  const auto edited = run_tool(std::string(kPython) + " -c " + shell_quote(script) + " " +
                               shell_quote(model_file.string()));
  ASSERT_EQ(edited.exit_code, 0) << edited.output;
  const CliRun run = run_cli(dir, {"edit", path.string(), "--model", model_file.string()});
  ASSERT_EQ(run.exit_code, 0) << run;
  EXPECT_TRUE(verify(path).ok());
  const Bytes after = read_file_bytes(path);
  EXPECT_TRUE(std::equal(before.begin(), before.begin() + static_cast<std::ptrdiff_t>(model_offset),
                         after.begin()));
  // The reference package reads the edit from a fresh extraction, weights and all.
  const fs::path check = dir / "check";
  ASSERT_EQ(
      run_tool("unzip -q " + shell_quote(path.string()) + " -d " + shell_quote(check.string()))
          .exit_code,
      0);
  const auto checked = run_tool(
      std::string(kPython) + " -c " +
      shell_quote(
          "import onnx, sys\n"
          "m = onnx.load(sys.argv[1])\n"
          "onnx.checker.check_model(m)\n"
          "print(m.metadata_props[0].key, m.metadata_props[0].value, m.graph.doc_string)\n") +
      " " + shell_quote((check / "__MODEL_PROTO").string()));
  EXPECT_EQ(checked.exit_code, 0) << checked.output;
  EXPECT_EQ(checked.output, "license MIT edited with onnx\n");
}

}  // namespace
}  // namespace onnxzip
