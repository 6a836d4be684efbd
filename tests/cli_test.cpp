// The onnxzip tool (ONNXZIP_CLI_PATH), run as a user would: exit codes, what it prints on
// standard output and standard error (captured separately, so never a terminal: no progress
// bar), the files it writes and the inputs it must leave alone. Models come from
// tests/data/make_legacy_models.py; JSON output is judged by Python's json module.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "onnxzip/archive.h"
#include "onnxzip/internal/zip_reader.h"
#include "onnxzip/legacy.h"
#include "onnxzip/onnx_codec.h"
#include "onnxzip/tensor.h"
#include "support/expect_contains.h"
#include "support/external_tool.h"
#include "support/legacy_models.h"
#include "support/model_builder.h"
#include "support/scratch_dir.h"
#include "support/sha256.h"
#include "support/special_files.h"
#include "zip_writer.h"

extern char** environ;

namespace onnxzip {
namespace {

namespace fs = std::filesystem;
using test_support::kPython;
using test_support::LegacyModelSet;
using test_support::make_socket;
using test_support::python_dump;
using test_support::read_file_bytes;
using test_support::run_tool;
using test_support::ScratchDir;
using test_support::sha256_hex;
using test_support::shell_quote;

const fs::path kCli = ONNXZIP_CLI_PATH;
const fs::path kRezip = fs::path(ONNXZIP_TEST_DATA_DIR) / "rezip_archive.py";

struct CliRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::ostream& operator<<(std::ostream& os, const CliRun& run) {
  return os << "exit " << run.exit_code << "\n--- stdout\n" << run.out << "--- stderr\n" << run.err;
}

std::string read_text(const fs::path& path) {
  const std::vector<std::uint8_t> bytes = read_file_bytes(path);
  return std::string(bytes.begin(), bytes.end());
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

// Runs the tool with `args`, standard output and error into files of a scratch folder.
CliRun run_cli(const std::vector<std::string>& args) {
  static int counter = 0;
  const fs::path capture =
      fs::temp_directory_path() /
      ("onnxzip_cli_capture_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  fs::create_directories(capture);
  const std::string out_path = (capture / "out").string();
  const std::string err_path = (capture / "err").string();
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  std::vector<std::string> argv_strings = {kCli.string()};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  CliRun run;
  if (posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ) == 0) {
    int status = 0;
    if (::waitpid(pid, &status, 0) == pid && WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
  }
  posix_spawn_file_actions_destroy(&actions);
  run.out = read_text(out_path);
  run.err = read_text(err_path);
  fs::remove_all(capture);
  return run;
}

// Every file under `folder` (recursively) with its digest.
std::map<std::string, std::string> snapshot(const fs::path& folder) {
  std::map<std::string, std::string> out;
  for (const auto& item : fs::recursive_directory_iterator(folder)) {
    const std::string name = fs::relative(item.path(), folder).string();
    out[name] = item.is_regular_file() ? sha256_hex(read_file_bytes(item.path())) : "(folder)";
  }
  return out;
}

// A usage error: exit 2, nothing on standard output, two lines on standard error.
void expect_usage_error(const CliRun& run, const std::string& fragment) {
  EXPECT_EQ(run.exit_code, 2) << run;
  EXPECT_EQ(run.out, "") << run;
  const std::vector<std::string> lines = lines_of(run.err);
  ASSERT_EQ(lines.size(), 2u) << run;
  EXPECT_TRUE(lines[0].starts_with("onnxzip: error: ")) << run;
  EXPECT_CONTAINS(lines[0], fragment);
  EXPECT_EQ(lines[1], "Run with --help for more information.");
}

// A runtime failure: exit 1, nothing on standard output, one line on standard error.
void expect_failure(const CliRun& run, const std::vector<std::string>& fragments) {
  EXPECT_EQ(run.exit_code, 1) << run;
  EXPECT_EQ(run.out, "") << run;
  const std::vector<std::string> lines = lines_of(run.err);
  ASSERT_EQ(lines.size(), 1u) << run;
  EXPECT_TRUE(lines[0].starts_with("onnxzip: error: ")) << run;
  for (const std::string& fragment : fragments) EXPECT_CONTAINS(lines[0], fragment);
}

// Runs Python over a JSON document; `script` reads it as `d` and prints what it checks.
std::string python_on_json(const std::string& json, const std::string& script) {
  ScratchDir dir("cli_json");
  test_support::write_file_bytes(dir / "doc.json", json);
  const auto result =
      run_tool(std::string(kPython) + " -c " +
               shell_quote("import json, sys\nd = json.load(open(sys.argv[1]))\n" + script) + " " +
               shell_quote((dir / "doc.json").string()));
  EXPECT_EQ(result.exit_code, 0) << result.output << "\n" << json;
  return result.output;
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string(ONNXZIP_CLI_PATH).empty()) GTEST_SKIP() << "built without the CLI";
    models_ = LegacyModelSet::get();
    if (models_ == nullptr) GTEST_SKIP() << "needs " << kPython << " with the onnx package";
  }

  // A copy of one generated model folder in `dir`.
  fs::path copy_case(const ScratchDir& dir, const std::string& name) const {
    const fs::path folder = dir / name;
    fs::create_directories(folder);
    for (const auto& item : fs::directory_iterator(models_->model(name).parent_path())) {
      fs::copy_file(item.path(), folder / item.path().filename());
    }
    return folder / "model.onnx";
  }

  const LegacyModelSet* models_ = nullptr;
};

// --- Help and usage ---

TEST_F(Cli, EveryCommandHasHelpWithAnExample) {
  for (const std::string command :
       {"convert", "info", "verify", "extract", "view", "repack", "edit"}) {
    SCOPED_TRACE(command);
    const CliRun run = run_cli({command, "--help"});
    EXPECT_EQ(run.exit_code, 0) << run;
    EXPECT_CONTAINS(run.out, "Example");
    EXPECT_CONTAINS(run.out, "onnxzip " + command);
    EXPECT_EQ(run.err, "");
  }
  const CliRun main_help = run_cli({"--help"});
  EXPECT_EQ(main_help.exit_code, 0);
  EXPECT_CONTAINS(main_help.out, "Example");
  const CliRun version = run_cli({"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_TRUE(version.out.starts_with("onnxzip ")) << version;
}

TEST_F(Cli, UsageErrorsExitWithTwoAndWriteNothing) {
  ScratchDir dir("cli_usage");
  const fs::path legacy = copy_case(dir, "inline_raw");
  const fs::path archive = dir / "m.onnxz";
  ASSERT_EQ(run_cli({"convert", legacy, archive}).exit_code, 0);
  const auto before = snapshot(dir.path());
  const std::string out = (dir / "out.onnx").string();
  const std::string a = archive.string();
  const std::string l = legacy.string();

  expect_usage_error(run_cli({}), "subcommand is required");
  expect_usage_error(run_cli({"frobnicate"}), "unknown command 'frobnicate'");
  expect_usage_error(run_cli({"convert", l, out, "--bogus"}), "--bogus");
  expect_usage_error(run_cli({"convert", l}), "OUT is required");
  expect_usage_error(run_cli({"convert", l, out, "--alignment", "100"}),
                     "--alignment: 100 is not a power of two from 64 to 65536");
  expect_usage_error(run_cli({"convert", a, out, "--alignment", "100"}),
                     "--alignment: 100 is not a power of two");
  expect_usage_error(run_cli({"convert", a, out, "--max-file-size", "banana"}),
                     "--max-file-size: 'banana' is not a size");
  expect_usage_error(run_cli({"convert", a, out, "--max-file-size", "0"}), "--max-file-size");
  expect_usage_error(run_cli({"convert", l, out, "--external-data"}),
                     "--external-data applies to conversions to a legacy .onnx");
  expect_usage_error(run_cli({"convert", l, out, "--max-file-size", "1M"}),
                     "--max-file-size applies to conversions to a legacy .onnx");
  expect_usage_error(run_cli({"convert", a, out, "--dedupe"}),
                     "--dedupe applies to conversions to .onnxz");
  expect_usage_error(run_cli({"convert", a, out, "--external-data", "../x"}),
                     "'../x' is not a plain file name");
  expect_usage_error(run_cli({"convert", a, out, "--external-data=sub/x"}),
                     "'sub/x' is not a plain file name");
  expect_usage_error(run_cli({"repack", a, out, "--alignment", "32"}), "--alignment: 32");
  expect_usage_error(run_cli({"info"}), "FILE is required");
  expect_usage_error(run_cli({"extract", a}), "DIR is required");

  EXPECT_EQ(snapshot(dir.path()), before);
}

TEST_F(Cli, SizesTakeBinaryAndDecimalUnits) {
  ScratchDir dir("cli_sizes");
  const fs::path legacy = copy_case(dir, "inline_raw");
  // w_big has 16384 bytes, w_i32_big 1200: the threshold decides which become entries.
  struct Case {
    const char* threshold;
    std::size_t payload_entries;
  };
  const Case cases[] = {{"16384", 1}, {"16K", 1},  {"16kib", 1}, {"16385", 0}, {"16KB", 1},
                        {"17KB", 0},  {"1KB", 2},  {"1K", 2},    {"1201", 1},  {"2K", 1},
                        {"0", 18},    {"1MiB", 0}, {"1mb", 0}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.threshold);
    const fs::path archive = dir / "t.onnxz";
    const CliRun run = run_cli({"convert", legacy, archive, "--threshold", c.threshold});
    ASSERT_EQ(run.exit_code, 0) << run;
    EXPECT_EQ(ZipReader::open(archive).entries().size(), c.payload_entries + 1);
  }
  for (const std::string bad :
       {"1.5K", "-1", "K", "16 K", "16Q", "99999999999999999999", "17179869184G", ""}) {
    SCOPED_TRACE(bad);
    const CliRun run = run_cli({"convert", legacy, dir / "bad.onnxz", "--threshold", bad});
    EXPECT_EQ(run.exit_code, 2) << run;
    EXPECT_CONTAINS(run.err, "--threshold");
  }
  EXPECT_FALSE(fs::exists(dir / "bad.onnxz"));
}

// --- The commands ---

TEST_F(Cli, ConvertVerifyInfoBothWays) {
  ScratchDir dir("cli_convert");
  const fs::path legacy = copy_case(dir, "external_one_file");
  const fs::path archive = dir / "model.onnxz";
  const auto inputs = snapshot(legacy.parent_path());

  CliRun run = run_cli({"convert", legacy, archive});
  EXPECT_EQ(run.exit_code, 0) << run;
  EXPECT_EQ(run.out + run.err, "");  // No progress bar on a pipe, nothing to say.
  EXPECT_TRUE(verify(archive).ok());

  run = run_cli({"verify", archive});
  EXPECT_EQ(run.exit_code, 0) << run;
  EXPECT_EQ(run.out, archive.string() +
                         ": ok (ZIP structure, layout, references, CRC-32s; no digests; no "
                         "signature; ONNX IR rules)\n");
  run = run_cli({"verify", "--quiet", archive, legacy});
  EXPECT_EQ(run.exit_code, 0) << run;
  EXPECT_EQ(run.out + run.err, "");

  run = run_cli({"info", archive});
  EXPECT_EQ(run.exit_code, 0) << run;
  EXPECT_CONTAINS(run.out, "producer        make_legacy_models");
  EXPECT_CONTAINS(run.out, "opset_import    ai.onnx 13, custom 1");
  EXPECT_CONTAINS(run.out, "ENTRY");
  EXPECT_CONTAINS(run.out, "ALIGN");
  EXPECT_CONTAINS(run.out, "w_big          w_big        FLOAT  [64, 64]      64  16384     64");

  run = run_cli({"info", "--json", archive});
  EXPECT_EQ(run.exit_code, 0) << run;
  const std::string checked = python_on_json(
      run.out,
      "assert d['format'] == 'onnxz' and d['model']['ir_version'] == 8\n"
      "assert d['model']['opset_import'] == [{'domain': '', 'version': 13},"
      " {'domain': 'custom', 'version': 1}]\n"
      "for e in d['entries']:\n"
      "    assert e['offset'] % 64 == 0 and e['alignment'] >= 64 and e['stored']\n"
      "print(' '.join(e['name'] + '=' + ','.join(e['tensors']) + ':' + str(e['size'])"
      " for e in d['entries']))\n");
  EXPECT_EQ(checked, "w_big=w_big:16384 w_i32_big=w_i32_big:1200 __MODEL_PROTO=:1474\n");

  run = run_cli({"info", legacy});
  EXPECT_EQ(run.exit_code, 0) << run;
  EXPECT_CONTAINS(run.out, "w_big       FLOAT    [64, 64]  weights.bin      24  16384");
  run = run_cli({"info", "--json", legacy});
  EXPECT_EQ(python_on_json(run.out,
                           "print(sum(1 for t in d['tensors'] if t['location'] == 'weights.bin'))"),
            "17\n");

  // Back, with the weights in two files at most 8 KiB each where they can be.
  const fs::path back_folder = dir / "back";
  fs::create_directory(back_folder);
  run = run_cli({"convert", archive, back_folder / "model.onnx", "--external-data=w.bin",
                 "--max-file-size", "8K", "--threshold", "0", "--alignment", "64"});
  EXPECT_EQ(run.exit_code, 0) << run;
  std::vector<std::string> names;
  for (const auto& item : fs::directory_iterator(back_folder)) {
    names.push_back(item.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"model.onnx", "w.bin", "w.bin.1", "w.bin.2"}));
  // Default: small, so inline.
  run = run_cli({"convert", archive, dir / "inline.onnx"});
  EXPECT_EQ(run.exit_code, 0) << run;
  const auto views = python_dump({back_folder / "model.onnx", dir / "inline.onnx"});
  for (const auto& [path, view] : views) {
    SCOPED_TRACE(path);
    EXPECT_EQ(view.checker, "ok");
    EXPECT_EQ(view.digests, models_->expected("external_one_file"));
  }
  EXPECT_EQ(snapshot(legacy.parent_path()), inputs);
}

TEST_F(Cli, ExtractViewRepack) {
  ScratchDir dir("cli_extract");
  const fs::path legacy = copy_case(dir, "inline_typed");
  const fs::path archive = dir / "net.onnxz";
  ASSERT_EQ(run_cli({"convert", legacy, archive, "--threshold", "0"}).exit_code, 0);
  const std::string archive_digest = sha256_hex(read_file_bytes(archive));

  // extract: DIR made, <stem>.onnx and its data, loadable by the reference.
  CliRun run = run_cli({"extract", archive, dir / "out"});
  EXPECT_EQ(run.exit_code, 0) << run;
  EXPECT_TRUE(fs::exists(dir / "out" / "net.onnx"));
  EXPECT_TRUE(fs::exists(dir / "out" / "net.onnx.data"));
  run = run_cli({"extract", archive, dir / "out"});
  expect_failure(run, {"net.onnx: already exists (--force replaces it)"});
  run = run_cli({"extract", "--force", archive, dir / "out"});
  EXPECT_EQ(run.exit_code, 0) << run;

  // view: next to the archive by default, referring into it.
  run = run_cli({"view", archive});
  EXPECT_EQ(run.exit_code, 0) << run;
  EXPECT_TRUE(fs::exists(dir / "net.view.onnx"));
  run = run_cli({"view", archive, dir / "out" / "elsewhere.onnx"});
  expect_failure(run, {"the view must be in the archive's folder"});
  run = run_cli({"view", archive, archive});
  expect_failure(run, {"would overwrite the archive"});

  const auto views = python_dump({dir / "out" / "net.onnx", dir / "net.view.onnx"});
  for (const auto& [path, view] : views) {
    SCOPED_TRACE(path);
    EXPECT_EQ(view.checker, "ok");
    EXPECT_EQ(view.digests, models_->expected("inline_raw"));
  }

  // repack: what Python's zipfile made of the archive (deflated, model not last, a stray file).
  const auto made = run_tool(std::string(kPython) + " " + shell_quote(kRezip.string()) + " " +
                             shell_quote(archive.string()) + " " +
                             shell_quote((dir / "other.zip").string()) + " deflated --extra");
  ASSERT_EQ(made.exit_code, 0) << made.output;
  const std::string zip_digest = sha256_hex(read_file_bytes(dir / "other.zip"));
  run = run_cli({"verify", dir / "other.zip"});
  EXPECT_EQ(run.exit_code, 1) << run;
  run = run_cli({"repack", dir / "other.zip", dir / "fixed.onnxz", "--alignment", "4K"});
  EXPECT_EQ(run.exit_code, 0) << run;
  EXPECT_EQ(run.err, "onnxzip: note: " + (dir / "other.zip").string() +
                         ": entry 'README.txt' left out: no tensor refers to it\n");
  run = run_cli({"verify", dir / "fixed.onnxz"});
  EXPECT_EQ(run.exit_code, 0) << run;
  const ZipReader fixed = ZipReader::open(dir / "fixed.onnxz");
  for (const ZipEntry& e : fixed.entries()) {
    EXPECT_EQ(e.local->data_offset % 4096, 0u) << e.name;
  }
  EXPECT_EQ(load(dir / "fixed.onnxz"), load(archive));
  run = run_cli({"repack", "-q", dir / "other.zip", dir / "quiet.onnxz"});
  EXPECT_EQ(run.out + run.err, "") << run;

  EXPECT_EQ(sha256_hex(read_file_bytes(archive)), archive_digest);
  EXPECT_EQ(sha256_hex(read_file_bytes(dir / "other.zip")), zip_digest);
}

TEST_F(Cli, InfoJsonEscapesWhateverTheModelHolds) {
  ScratchDir dir("cli_json_escape");
  ModelProto model = read_legacy_model(models_->model("inline_raw"));
  // Quotes, backslash, control characters, valid UTF-8, and bytes that are not UTF-8.
  model.producer_name = std::string("q\"b\\c\x01\x1f\n\t\x7f") + "\xc3\xa9\xe2\x82\xac" +
                        "\xff\xc3(\xed\xa0\x80\xf0\x9f\x98\x80";
  model.doc_string = "first line\nsecond line";
  model.graph->initializer[1].name = "w\xff\"big";
  serialize_model_to_file(model, dir / "odd.onnx");
  ASSERT_EQ(run_cli({"convert", dir / "odd.onnx", dir / "odd.onnxz"}).exit_code, 0);
  for (const fs::path& file : {dir / "odd.onnx", dir / "odd.onnxz"}) {
    SCOPED_TRACE(file.string());
    const CliRun run = run_cli({"info", "--json", file});
    EXPECT_EQ(run.exit_code, 0) << run;
    EXPECT_EQ(python_on_json(run.out,
                             "print(ascii(d['model']['producer_name']))\n"
                             "print(ascii(d['model']['doc_string']))"),
              "'q\"b\\\\c\\x01\\x1f\\n\\t\\x7f\\xe9\\u20ac\\ufffd\\ufffd(\\ufffd\\ufffd\\ufffd"
              "\\U0001f600'\n'first line\\nsecond line'\n");
    // The text form never sends control bytes to the terminal.
    const CliRun text = run_cli({"info", file});
    EXPECT_EQ(text.exit_code, 0) << text;
    EXPECT_CONTAINS(text.out, "doc_string      first line\n");
    EXPECT_CONTAINS(text.out, "q\"b\\c\\x01\\x1f\\x0a\\x09\\x7f\xc3\xa9\xe2\x82\xac\\xff");
    EXPECT_TRUE(std::none_of(text.out.begin(), text.out.end(), [](char c) {
      return (static_cast<unsigned char>(c) < 0x20 && c != '\n') || c == 0x7f;
    }));
  }
  const CliRun run = run_cli({"info", "--json", dir / "odd.onnxz"});
  EXPECT_EQ(python_on_json(run.out, "print(ascii([e['tensors'] for e in d['entries']]))"),
            "[['w\\ufffd\"big'], ['w_i32_big'], []]\n");
}

// --- Failures ---

TEST_F(Cli, RuntimeErrorsNameTheFileAndLeaveNothing) {
  ScratchDir dir("cli_errors");
  const fs::path legacy = copy_case(dir, "inline_raw");
  const fs::path archive = dir / "good.onnxz";
  ASSERT_EQ(run_cli({"convert", legacy, archive}).exit_code, 0);

  // A truncated model, a flipped byte in an archive's payload, a hostile reference.
  const std::vector<std::uint8_t> model_bytes = read_file_bytes(legacy);
  test_support::write_file_bytes(dir / "truncated.onnx",
                                 std::string(model_bytes.begin(), model_bytes.begin() + 700));
  std::vector<std::uint8_t> corrupt = read_file_bytes(archive);
  const ZipEntry w_big = *ZipReader::open(archive).find("w_big");
  corrupt[w_big.local->data_offset + 100] ^= 0x40;
  test_support::write_file_bytes(dir / "corrupt.onnxz",
                                 std::string(corrupt.begin(), corrupt.end()));
  ModelProto hostile;
  hostile.ir_version = 8;
  hostile.opset_import.emplace_back().version = 17;
  TensorProto& w = hostile.graph.ensure().initializer.emplace_back();
  w.name = "w";
  w.data_type = TensorProto::kFloat;
  w.dims = {4};
  w.data_location = TensorProto::kExternal;
  StringStringEntryProto& location = w.external_data.emplace_back();
  location.key = "location";
  location.value = "../x";
  serialize_model_to_file(hostile, dir / "hostile.onnx");

  fs::create_directory(dir / "out");
  const auto before = snapshot(dir.path());
  const std::string out = (dir / "out" / "result").string();

  expect_failure(run_cli({"convert", dir / "missing.onnx", out}), {"missing.onnx: no such file"});
  expect_failure(run_cli({"info", dir / "missing.onnxz"}), {"missing.onnxz: no such file"});
  expect_failure(run_cli({"convert", dir / "truncated.onnx", out}), {"truncated.onnx: "});
  expect_failure(run_cli({"info", dir / "truncated.onnx"}), {"truncated.onnx: "});
  expect_failure(run_cli({"convert", dir / "corrupt.onnxz", out}),
                 {"corrupt.onnxz", "'w_big'", "CRC-32"});
  expect_failure(run_cli({"extract", dir / "corrupt.onnxz", dir / "new_folder"}),
                 {"corrupt.onnxz", "'w_big'", "CRC-32"});
  expect_failure(run_cli({"convert", dir / "hostile.onnx", out}),
                 {"hostile.onnx", "tensor 'w'", "'../x'"});
  expect_failure(run_cli({"convert", archive, archive}), {"good.onnxz", "never written to"});
  expect_failure(run_cli({"extract", legacy, dir / "out"}), {"not an .onnxz archive"});
  expect_failure(run_cli({"repack", legacy, out}), {"model.onnx"});

  // verify reports instead of failing: one line per problem on standard output, exit 1.
  CliRun run = run_cli({"verify", dir / "corrupt.onnxz"});
  EXPECT_EQ(run.exit_code, 1) << run;
  ASSERT_EQ(lines_of(run.out).size(), 1u) << run;
  EXPECT_TRUE(run.out.starts_with((dir / "corrupt.onnxz").string() + ": entry 'w_big'")) << run;
  EXPECT_CONTAINS(run.out, "CRC-32 mismatch");
  run = run_cli({"verify", dir / "hostile.onnx", dir / "missing.onnx", archive});
  EXPECT_EQ(run.exit_code, 1) << run;
  const std::vector<std::string> lines = lines_of(run.out);
  ASSERT_EQ(lines.size(), 3u) << run;
  EXPECT_TRUE(lines[0].starts_with((dir / "hostile.onnx").string() + ": tensor 'w'")) << run;
  EXPECT_CONTAINS(lines[0], "'../x'");
  EXPECT_EQ(lines[1], (dir / "missing.onnx").string() + ": no such file");
  EXPECT_TRUE(lines[2].starts_with(archive.string() + ": ok (")) << lines[2];

  EXPECT_EQ(snapshot(dir.path()), before);  // No output, no temporary, inputs untouched.
}

TEST_F(Cli, VerifyFindsWhatConvertRefusesNamingTheInput) {
  ScratchDir dir("cli_refused");
  test_support::write_file_bytes(dir / "empty.onnx", "");
  ModelProto short_model;
  short_model.ir_version = 8;
  short_model.opset_import.emplace_back().version = 17;
  TensorProto& w = short_model.graph.ensure().initializer.emplace_back();
  w.name = "w";
  w.data_type = TensorProto::kFloat;
  w.dims = {4, 300};
  w.raw_data = TensorBytes::owned(OwnedBytes(100));
  serialize_model_to_file(short_model, dir / "short.onnx");
  {
    // The same model as an archive, made by hand: save() refuses the short tensor.
    ZipWriter zip(dir / "short.onnxz");
    zip.add(kModelEntryName, serialize_model(short_model));
    zip.finish();
  }
  const std::string empty = (dir / "empty.onnx").string();
  const std::string short_tensor =
      ": tensor 'w' at graph/initializer[0]: raw_data holds 100 bytes, but dims [4, 300] of "
      "FLOAT make 4800 bytes";
  const auto before = snapshot(dir.path());

  CliRun run = run_cli({"verify", empty});
  EXPECT_EQ(run.exit_code, 1) << run;
  EXPECT_EQ(run.out,
            empty + ": ir_version: missing: a model must state the IR version it follows\n" +
                empty +
                ": opset_import: missing: from IR version 3 on, a model imports the operator "
                "sets it uses\n" +
                empty + ": graph: missing: a model must have a graph\n")
      << run;
  expect_failure(run_cli({"convert", empty, dir / "out.onnxz"}),
                 {empty + ": the file is empty, so it is not an ONNX model"});

  for (const std::string name : {"short.onnx", "short.onnxz"}) {
    SCOPED_TRACE(name);
    const std::string file = (dir / name).string();
    run = run_cli({"verify", file});
    EXPECT_EQ(run.exit_code, 1) << run;
    const std::string citation = name.ends_with(".onnxz") ? " (spec §9.4 item 5)" : "";
    EXPECT_EQ(run.out, file + short_tensor + citation + "\n") << run;
    const std::string out = (dir / (name.ends_with(".onnxz") ? "out.onnx" : "out.onnxz")).string();
    run = run_cli({"convert", file, out});
    expect_failure(run, {"onnxzip: error: " + file + short_tensor});
    EXPECT_EQ(run.err.find(out), std::string::npos) << run;  // The input is at fault.
  }
  EXPECT_EQ(snapshot(dir.path()), before);  // No output, no temporary, inputs untouched.
}

TEST_F(Cli, VerifyReportsIrViolationsOfModelsThatStillConvert) {
  ScratchDir dir("cli_ir");
  ModelProto model = read_legacy_model(models_->model("inline_raw"));
  std::swap(model.graph->node[0], model.graph->node[2]);  // Out of topological order.
  model.graph->node[3].domain = "unimported";
  serialize_model_to_file(model, dir / "bad.onnx");
  for (const fs::path& file : {dir / "bad.onnx", dir / "bad.onnxz"}) {
    if (file.extension() == ".onnxz") {
      const CliRun run = run_cli({"convert", dir / "bad.onnx", file});
      ASSERT_EQ(run.exit_code, 0) << run;
    }
    SCOPED_TRACE(file.string());
    const CliRun run = run_cli({"verify", file});
    EXPECT_EQ(run.exit_code, 1) << run;
    const std::vector<std::string> lines = lines_of(run.out);
    ASSERT_GE(lines.size(), 2u) << run;
    for (const std::string& line : lines) {
      EXPECT_TRUE(line.starts_with(file.string() + ": graph")) << line;
    }
    EXPECT_CONTAINS(run.out, "'unimported'");
  }
}

// --- Outputs that cannot hurt (issue: an output path that is not a regular file is replaced) ---

mode_t node_type(const fs::path& path) {
  struct stat status {};
  return ::lstat(path.c_str(), &status) == 0 ? (status.st_mode & S_IFMT) : 0;
}

TEST_F(Cli, NoCommandReplacesAnythingButARegularFile) {
  ScratchDir dir("cli_special_outputs");
  const fs::path legacy = copy_case(dir, "inline_raw");
  const fs::path archive = dir / "net.onnxz";
  ASSERT_EQ(run_cli({"convert", legacy, archive}).exit_code, 0);
  const fs::path zip = dir / "net.zip";
  fs::copy_file(archive, zip);

  std::vector<std::pair<std::string, fs::path>> nodes;
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0644), 0);
  nodes.emplace_back("a FIFO", dir / "fifo");
  fs::create_directory(dir / "folder");
  nodes.emplace_back("a folder", dir / "folder");
  // A character device like /dev/null: only root may make one (CI runs as root).
  if (test_support::make_null_device(dir / "null")) {
    nodes.emplace_back("a character device", dir / "null");
  }
  for (const auto& [kind, node] : nodes) {
    SCOPED_TRACE(kind);
    const mode_t before = node_type(node);
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"convert", legacy, node},
             {"convert", archive, node},
             {"repack", zip, node},
             {"view", archive, node},
         }) {
      SCOPED_TRACE(args[0]);
      expect_failure(run_cli(args), {node.string() + ": is " + kind + ", not a regular file"});
      EXPECT_EQ(node_type(node), before) << "the node must be left as it was";
    }
  }
  // extract --force: the data file's name taken by a FIFO.
  fs::create_directory(dir / "out");
  ASSERT_EQ(::mkfifo((dir / "out" / "net.onnx.data").c_str(), 0644), 0);
  expect_failure(run_cli({"extract", "--force", archive, dir / "out"}),
                 {"net.onnx.data: is a FIFO, not a regular file"});
  EXPECT_EQ(node_type(dir / "out" / "net.onnx.data"), static_cast<mode_t>(S_IFIFO));
  EXPECT_FALSE(fs::exists(dir / "out" / "net.onnx"));
}

TEST_F(Cli, ASymbolicLinkOutputIsRefusedUnlessFollowed) {
  ScratchDir dir("cli_symlink_output");
  const fs::path legacy = copy_case(dir, "inline_raw");
  std::ofstream(dir / "target.onnxz") << "old";
  fs::create_symlink("target.onnxz", dir / "link.onnxz");
  expect_failure(run_cli({"convert", legacy, dir / "link.onnxz"}),
                 {"link.onnxz: is a symbolic link; refusing to replace it"});
  EXPECT_EQ(read_text(dir / "target.onnxz"), "old");
  const CliRun run = run_cli({"convert", "--follow-symlinks", legacy, dir / "link.onnxz"});
  EXPECT_EQ(run.exit_code, 0) << run;
  EXPECT_TRUE(fs::is_symlink(dir / "link.onnxz"));
  EXPECT_EQ(detect_format(dir / "target.onnxz"), ModelFormat::kOnnxz);
  // The other direction, where the legacy writer makes the file.
  std::ofstream(dir / "target.onnx") << "old";
  fs::create_symlink("target.onnx", dir / "link.onnx");
  expect_failure(run_cli({"convert", dir / "target.onnxz", dir / "link.onnx"}),
                 {"link.onnx: is a symbolic link; refusing to replace it"});
  EXPECT_EQ(read_text(dir / "target.onnx"), "old");
  EXPECT_EQ(
      run_cli({"convert", "--follow-symlinks", dir / "target.onnxz", dir / "link.onnx"}).exit_code,
      0);
  EXPECT_EQ(detect_format(dir / "target.onnx"), ModelFormat::kLegacy);
  EXPECT_GT(fs::file_size(dir / "target.onnx"), 3u);
}

TEST_F(Cli, ExtractForceReplacesModelAndDataAsOneSet) {
  ScratchDir dir("cli_extract_set");
  const fs::path legacy = copy_case(dir, "inline_typed");
  const fs::path first = dir / "first" / "net.onnxz";
  const fs::path second = dir / "second" / "net.onnxz";
  fs::create_directories(first.parent_path());
  fs::create_directories(second.parent_path());
  ASSERT_EQ(run_cli({"convert", legacy, first, "--threshold", "0"}).exit_code, 0);
  ASSERT_EQ(
      run_cli({"convert", legacy, second, "--threshold", "0", "--alignment", "4096"}).exit_code, 0);
  ASSERT_EQ(run_cli({"edit", second, "--producer", "second"}).exit_code, 0);
  ASSERT_EQ(run_cli({"extract", first, dir / "out"}).exit_code, 0);
  const std::string old_model = read_text(dir / "out" / "net.onnx");
  const std::string old_data = read_text(dir / "out" / "net.onnx.data");
  ASSERT_EQ(run_cli({"extract", "--force", second, dir / "out"}).exit_code, 0);
  EXPECT_NE(read_text(dir / "out" / "net.onnx"), old_model);
  // Both archives hold the same weights, so the data file is written again with the same bytes.
  EXPECT_EQ(read_text(dir / "out" / "net.onnx.data"), old_data);
  // Only the two files: no temporary, no file moved aside.
  EXPECT_EQ(snapshot(dir / "out").size(), 2u);
  const CliRun run = run_cli({"verify", dir / "out" / "net.onnx"});
  EXPECT_EQ(run.exit_code, 0) << run;
}

// --- Issue 30: what a new user meets ---

// A model whose weights all sit in If branches as Constant values (as in Silero VAD): the
// legacy writer keeps node attribute tensors inline unless asked.
ModelProto weights_in_branches() {
  ModelProto model;
  model.ir_version = 8;
  model.opset_import.emplace_back().version = 17;
  GraphProto& graph = model.graph.ensure();
  graph.name = "branches";
  graph.input = {test_support::tensor_value_info("cond", TensorProto::kBool, {})};
  graph.output = {test_support::tensor_value_info("R", TensorProto::kFloat, {16, 32})};
  std::vector<GraphProto> branches(2);
  for (std::size_t i = 0; i < branches.size(); ++i) {
    TensorProto weight = test_support::float_data_tensor("w", {16, 32}, 7 + i);
    move_typed_data_to_raw(weight);
    branches[i].name = i == 0 ? "then" : "else";
    branches[i].node.push_back(test_support::make_node(
        "Constant", {}, {"out"}, {test_support::tensor_attribute("value", std::move(weight))}));
    branches[i].output = {test_support::tensor_value_info("out", TensorProto::kFloat, {16, 32})};
  }
  graph.node = {test_support::make_node(
      "If", {"cond"}, {"R"},
      {test_support::graph_attribute("then_branch", std::move(branches[0])),
       test_support::graph_attribute("else_branch", std::move(branches[1]))})};
  return model;
}

TEST_F(Cli, ConvertRefusesAnOutputNameOfTheOtherFormat) {
  ScratchDir dir("cli_direction");
  const fs::path legacy = copy_case(dir, "inline_typed");
  const fs::path archive = dir / "a.onnxz";
  ASSERT_EQ(run_cli({"convert", legacy, archive}).exit_code, 0);
  const auto before = snapshot(dir.path());
  // An archive would be written as a legacy model named .onnxz, a legacy model as an archive
  // named .onnx: refused before anything is read or written, naming the rule and a fix.
  expect_failure(run_cli({"convert", archive, dir / "b.onnxz"}),
                 {"b.onnxz: the output would be a legacy .onnx model, but its name says .onnxz",
                  ".onnxz names an archive, .onnx a legacy model",
                  "name it '" + (dir / "b.onnx").string() + "'"});
  expect_failure(run_cli({"convert", legacy, dir / "out.onnx"}),
                 {"out.onnx: the output would be an .onnxz archive, but its name says legacy",
                  "name it '" + (dir / "out.onnxz").string() + "'"});
  expect_failure(run_cli({"repack", archive, dir / "r.onnx"}), {"r.onnx: the output would be"});
  EXPECT_EQ(snapshot(dir.path()), before);
  // Other names take either format.
  EXPECT_EQ(run_cli({"convert", archive, dir / "back.bin"}).exit_code, 0);
}

TEST_F(Cli, WeightsInSubgraphConstantsAreNamedWhenTheyStayInline) {
  ScratchDir dir("cli_branch_weights");
  write_legacy_model(weights_in_branches(), dir / "m.onnx");
  const fs::path archive = dir / "m.onnxz";
  ASSERT_EQ(run_cli({"convert", dir / "m.onnx", archive, "--threshold", "0"}).exit_code, 0);

  // extract, convert --external-data, view: one note each, naming the reason and the flag.
  const std::string note =
      "2 tensors (4.0 KiB) stay inline: 2 in node attributes (Constant "
      "values), 4.0 KiB";
  CliRun run = run_cli({"extract", archive, dir / "out"});
  EXPECT_EQ(run.exit_code, 0) << run;
  EXPECT_CONTAINS(run.err, (dir / "out" / "m.onnx").string() + ": " + note +
                               ": --externalize-attributes moves them out\n");
  EXPECT_CONTAINS(run.err, "no data file: every tensor stays in the model");
  EXPECT_FALSE(fs::exists(dir / "out" / "m.onnx.data"));
  run = run_cli({"convert", archive, dir / "c.onnx", "--external-data"});
  EXPECT_EQ(run.exit_code, 0) << run;
  EXPECT_CONTAINS(run.err, "--externalize-attributes moves them out");
  run = run_cli({"view", archive});
  EXPECT_EQ(run.exit_code, 0) << run;
  EXPECT_CONTAINS(run.err, (dir / "m.view.onnx").string() + ": " + note + "\n");
  EXPECT_CONTAINS(run.err, "a full copy: no weight could point into the archive");
  run = run_cli({"view", "--quiet", archive, dir / "q.view.onnx"});
  EXPECT_EQ(run.out + run.err, "") << run;

  // The flag moves them out: a data file of 2 tensors at 4K alignment.
  run = run_cli({"extract", "--externalize-attributes", archive, dir / "moved"});
  EXPECT_EQ(run.exit_code, 0) << run;
  EXPECT_EQ(run.err, "");
  EXPECT_EQ(fs::file_size(dir / "moved" / "m.onnx.data"), 4096u + 2048u);
  EXPECT_EQ(load(archive), read_legacy_model(dir / "moved" / "m.onnx"));

  // extract -f over that folder: the earlier data file goes with the earlier model.
  run = run_cli({"extract", "-f", archive, dir / "moved"});
  EXPECT_EQ(run.exit_code, 0) << run;
  EXPECT_FALSE(fs::exists(dir / "moved" / "m.onnx.data"));
  EXPECT_EQ(snapshot(dir / "moved").size(), 1u);
  EXPECT_EQ(run_cli({"verify", dir / "moved" / "m.onnx"}).exit_code, 0);
}

TEST_F(Cli, SignAndEditOfALegacyModelNameTheFix) {
  ScratchDir dir("cli_legacy_sign");
  const fs::path legacy = copy_case(dir, "inline_typed");
  const std::string fix = "not an .onnxz archive but a legacy model ('onnxzip convert " +
                          legacy.string() + " " + (dir / "inline_typed" / "model.onnxz").string() +
                          "' turns it into one)";
  expect_failure(run_cli({"sign", "--digests-only", legacy}), {legacy.string() + ": " + fix});
  expect_failure(run_cli({"edit", legacy, "--producer", "x"}), {legacy.string() + ": " + fix});
}

// What `zip -r` makes of a model folder: deflated entries, a folder entry, extra fields.
fs::path zip_r_archive(const ScratchDir& dir, const fs::path& archive) {
  const fs::path folder = dir / "folder";
  fs::create_directories(folder / "weights");
  const Archive opened = Archive::open(archive);
  const auto write = [](const fs::path& path, ByteSpan bytes) {
    test_support::write_file_bytes(
        path, std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  };
  write(folder / "__MODEL_PROTO", opened.model_bytes());
  std::string names;  // The model last, as load() wants it.
  for (const Archive::TensorInfo& info : opened.tensors()) {
    if (info.is_inline) continue;  // In the model.
    write(folder / info.entry, info.data);
    names += " " + shell_quote(info.entry);
  }
  const auto made = run_tool("cd " + shell_quote(folder.string()) + " && zip -q -r ../model.zip" +
                             names + " weights __MODEL_PROTO");
  EXPECT_EQ(made.exit_code, 0) << made.output;
  return dir / "model.zip";
}

TEST_F(Cli, VerifyOfAZipMadeByZipNamesEachEntryAndPointsToRepack) {
  if (!test_support::find_tool("zip")) GTEST_SKIP() << "no zip tool";
  ScratchDir dir("cli_zip_r");
  const fs::path legacy = copy_case(dir, "external_one_file");
  ASSERT_EQ(run_cli({"convert", legacy, dir / "m.onnxz"}).exit_code, 0);
  const fs::path zip = zip_r_archive(dir, dir / "m.onnxz");

  CliRun run = run_cli({"verify", zip});
  EXPECT_EQ(run.exit_code, 1) << run;
  std::map<std::string, int> lines;
  for (const std::string& line : lines_of(run.out)) {
    ++lines[line];
    EXPECT_EQ(lines[line], 1) << "repeated: " << line;
    if (line.find("deflated:") != std::string::npos ||
        line.find("unknown_extra_field:") != std::string::npos) {
      EXPECT_CONTAINS(line, zip.string() + ": entry '");
    }
    EXPECT_EQ(line.find("no tensor refers to this payload entry"), std::string::npos) << line;
  }
  EXPECT_CONTAINS(run.out, zip.string() + ": entry 'w_big': deflated:");
  EXPECT_CONTAINS(run.out, zip.string() + ": entry 'weights/': directory:");
  EXPECT_EQ(run.err, "onnxzip: note: " + zip.string() + ": a ZIP another tool made; 'onnxzip " +
                         "repack " + zip.string() + " OUT.onnxz' writes a conforming archive\n");

  // info does not call it .onnxz; --json says "zip".
  run = run_cli({"info", zip});
  EXPECT_EQ(run.exit_code, 0) << run;
  EXPECT_CONTAINS(run.out, "format          ZIP archive, not a conforming .onnxz (");
  run = run_cli({"info", "--json", zip});
  EXPECT_EQ(python_on_json(run.out, "print(d['format'], d['zip_findings'] > 0)"), "zip True\n");

  // repack calls the folder entry a folder.
  run = run_cli({"repack", zip, dir / "fixed.onnxz"});
  EXPECT_EQ(run.exit_code, 0) << run;
  EXPECT_EQ(run.err, "onnxzip: note: " + zip.string() + ": entry 'weights/' left out: a folder\n");
  run = run_cli({"info", dir / "fixed.onnxz"});
  EXPECT_CONTAINS(run.out, "format          .onnxz, ");
}

TEST_F(Cli, VerifySaysWhatItCheckedAndReportsJson) {
  ScratchDir dir("cli_verify_json");
  const fs::path legacy = copy_case(dir, "external_one_file");
  const fs::path archive = dir / "m.onnxz";
  ASSERT_EQ(run_cli({"convert", legacy, archive, "--digests"}).exit_code, 0);
  CliRun run = run_cli({"verify", archive});
  EXPECT_EQ(run.exit_code, 0) << run;
  EXPECT_EQ(run.out, archive.string() +
                         ": ok (ZIP structure, layout, references, CRC-32s; digests verified; no "
                         "signature; ONNX IR rules)\n");
  run = run_cli({"verify", legacy});
  EXPECT_CONTAINS(run.out, legacy.string() + ": ok (legacy model, external data");

  // A damaged payload: a crc finding and failed digests, in JSON.
  std::vector<std::uint8_t> bytes = read_file_bytes(archive);
  const ZipReader zip = ZipReader::open(archive);
  bytes[zip.find("w_big")->local->data_offset] ^= 1;
  test_support::write_file_bytes(dir / "bad.onnxz", std::string(bytes.begin(), bytes.end()));
  run = run_cli({"verify", "--json", archive, dir / "bad.onnxz", dir / "missing.onnxz"});
  EXPECT_EQ(run.exit_code, 1) << run;
  EXPECT_EQ(
      python_on_json(run.out,
                     "for f in d:\n"
                     "    kinds = sorted({x['kind'] for x in f['findings']})\n"
                     "    print(f['ok'], f['loadable'], f['digests'], f['signature'],"
                     " ','.join(kinds), f['findings'][0]['entry'] if f['findings'] else '')\n"),
      "True True verified absent  \n"
      "False False failed absent crc w_big\n"
      "False False absent absent zip \n");
}

TEST_F(Cli, InfoShowsInputsOutputsAndSitesForSeveralFiles) {
  ScratchDir dir("cli_info_io");
  write_legacy_model(test_support::checker_model_mlp_with_if(), dir / "mlp.onnx");
  ASSERT_EQ(run_cli({"convert", dir / "mlp.onnx", dir / "mlp.onnxz"}).exit_code, 0);
  CliRun run = run_cli({"info", dir / "mlp.onnxz", dir / "mlp.onnx"});
  EXPECT_EQ(run.exit_code, 0) << run;
  EXPECT_CONTAINS(run.out, "input           X: FLOAT [1, 64]\n");
  EXPECT_CONTAINS(run.out, "input           cond: BOOL []\n");
  EXPECT_CONTAINS(run.out, "output          Out: FLOAT [16, 32]\n");
  EXPECT_CONTAINS(run.out, "file            " + (dir / "mlp.onnx").string() + "\n");

  run = run_cli({"info", "--json", dir / "mlp.onnxz", dir / "missing.onnxz", dir / "mlp.onnx"});
  EXPECT_EQ(run.exit_code, 1) << run;
  EXPECT_CONTAINS(run.err, "missing.onnxz");
  // Every tensor's record, external and inline, with its site (spec/names.md).
  EXPECT_EQ(
      python_on_json(run.out,
                     "a = d[0]\n"
                     "print(len(d), [f['format'] for f in d])\n"
                     "print(a['model']['graph']['inputs'][0])\n"
                     "ts = a['tensors']\n"
                     "print(len(ts), all(t['site'].startswith('graph/') for t in ts))\n"
                     "print(sorted((t['name'], t['inline'], t['offset'] is None) for t in ts))\n"),
      "2 ['onnxz', 'onnx']\n"
      "{'name': 'X', 'data_type': 'FLOAT', 'shape': [1, 64]}\n"
      "5 True\n"
      "[('/encoder/layer.0/MatMul.weight', False, False), ('C_value', False, False), "
      "('else_value', False, False), ('onnx::Add_bias', True, True), ('then_weight', False, "
      "False)]\n");
}

// --- Inputs that are not regular files, or that change; limits the system sets ---

struct ChildRun {
  int exit_code = -1;  // -1 unless it exited.
  int signal = 0;      // The signal that ended it, if one did.
  bool timed_out = false;
  std::string out;
  std::string err;
};

std::ostream& operator<<(std::ostream& os, const ChildRun& run) {
  return os << "exit " << run.exit_code << ", signal " << run.signal
            << (run.timed_out ? ", timed out" : "") << "\n--- stdout\n"
            << run.out << "--- stderr\n"
            << run.err;
}

// Runs `program` with `args` in a child (standard output and error captured), with
// RLIMIT_FSIZE = `file_size_limit` when given; `while_running` (if any) is called with the
// child's pid once it has started. A child still running after 20 seconds is killed: a hang
// fails the test instead of stalling the suite.
ChildRun run_child(const fs::path& program, const std::vector<std::string>& args,
                   std::optional<rlim_t> file_size_limit = std::nullopt,
                   const std::function<void(pid_t)>& while_running = {}) {
  const ScratchDir capture("child_capture");
  const std::string out_path = (capture / "out").string();
  const std::string err_path = (capture / "err").string();
  std::vector<std::string> argv_strings = {program.string()};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);

  const pid_t pid = ::fork();
  if (pid == 0) {  // Only async-signal-safe calls until exec.
    const int in = ::open("/dev/null", O_RDONLY);
    const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || out < 0 || err < 0 || ::dup2(in, 0) < 0 || ::dup2(out, 1) < 0 ||
        ::dup2(err, 2) < 0) {
      ::_exit(125);
    }
    if (file_size_limit) {
      const rlimit limit{*file_size_limit, *file_size_limit};
      if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) ::_exit(126);
    }
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ChildRun run;
  if (pid < 0) return run;
  if (while_running) while_running(pid);
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      run.timed_out = true;
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) run.signal = WTERMSIG(status);
  run.out = read_text(out_path);
  run.err = read_text(err_path);
  return run;
}

ChildRun run_cli_child(const std::vector<std::string>& args,
                       std::optional<rlim_t> file_size_limit = std::nullopt) {
  return run_child(kCli, args, file_size_limit);
}

TEST_F(Cli, InputsThatAreNotRegularFilesFailAtOnce) {
  ScratchDir dir("cli_not_regular");
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  make_socket(dir / "sock");
  std::vector<std::pair<std::string, std::string>> inputs = {{"fifo", "a FIFO"},
                                                             {"sock", "a socket"}};
  // A device node of our own (the null device's numbers) needs root.
  if (test_support::make_null_device(dir / "device")) {
    inputs.emplace_back("device", "a character device");
  }
  const auto before = snapshot(dir.path());
  for (const auto& [name, kind] : inputs) {
    const std::string input = (dir / name).string();
    const std::string problem = input + ": not a regular file (" + kind + ")";
    for (const std::string flag : {"", "--no-mmap"}) {
      const std::vector<std::vector<std::string>> commands = {
          {"info", input},
          {"convert", input, (dir / "out.onnxz").string()},
          {"extract", input, (dir / "folder").string()},
          {"view", input},
          {"repack", input, (dir / "out.onnxz").string()},
          {"verify", input},
      };
      for (std::vector<std::string> command : commands) {
        if (!flag.empty()) command.push_back(flag);
        SCOPED_TRACE(command[0] + " " + name + " " + flag);
        const ChildRun run = run_cli_child(command);
        EXPECT_FALSE(run.timed_out) << run;
        EXPECT_EQ(run.exit_code, 1) << run;
        if (command[0] == "verify") {  // verify reports on standard output.
          EXPECT_EQ(run.out, problem + "\n");
          EXPECT_EQ(run.err, "");
        } else {
          EXPECT_EQ(run.out, "");
          EXPECT_EQ(run.err, "onnxzip: error: " + problem + "\n");
        }
      }
    }
  }
  EXPECT_EQ(snapshot(dir.path()), before);
}

TEST_F(Cli, NoMmapReadsInputsWithTheSameResults) {
  ScratchDir dir("cli_no_mmap");
  const fs::path legacy = copy_case(dir, "external_one_file");
  const auto expect_ok = [](const CliRun& run) { EXPECT_EQ(run.exit_code, 0) << run; };
  const auto same_file = [](const fs::path& a, const fs::path& b) {
    EXPECT_EQ(sha256_hex(read_file_bytes(a)), sha256_hex(read_file_bytes(b))) << a << " " << b;
  };
  expect_ok(run_cli({"convert", legacy, dir / "mapped.onnxz"}));
  expect_ok(run_cli({"--no-mmap", "convert", legacy, dir / "read.onnxz"}));
  same_file(dir / "mapped.onnxz", dir / "read.onnxz");
  const fs::path archive = dir / "mapped.onnxz";

  // Data files end with their write's own random id (legacy.h): all bytes before it must agree.
  const auto same_data = [](const fs::path& a, const fs::path& b) {
    std::vector<std::uint8_t> x = read_file_bytes(a);
    std::vector<std::uint8_t> y = read_file_bytes(b);
    ASSERT_EQ(x.size(), y.size()) << a << " " << b;
    ASSERT_GE(x.size(), 64u);
    x.resize(x.size() - 64);
    y.resize(y.size() - 64);
    EXPECT_TRUE(x == y) << a << " " << b;
  };
  expect_ok(run_cli({"convert", archive, dir / "mapped.onnx", "--external-data"}));
  expect_ok(run_cli({"convert", "--no-mmap", archive, dir / "read.onnx", "--external-data"}));
  same_data(dir / "mapped.onnx.data", dir / "read.onnx.data");

  expect_ok(run_cli({"extract", archive, dir / "mapped"}));
  expect_ok(run_cli({"extract", "--no-mmap", archive, dir / "read"}));
  same_data(dir / "mapped" / "mapped.onnx.data", dir / "read" / "mapped.onnx.data");

  expect_ok(run_cli({"repack", archive, dir / "mapped_repack.onnxz"}));
  expect_ok(run_cli({"repack", "--no-mmap", archive, dir / "read_repack.onnxz"}));
  same_file(dir / "mapped_repack.onnxz", dir / "read_repack.onnxz");

  expect_ok(run_cli({"view", archive, dir / "mapped.view.onnx"}));
  expect_ok(run_cli({"view", "--no-mmap", archive, dir / "read.view.onnx"}));
  same_file(dir / "mapped.view.onnx", dir / "read.view.onnx");

  for (const fs::path& file : {archive, legacy}) {
    const CliRun mapped = run_cli({"info", file});
    const CliRun read = run_cli({"info", "--no-mmap", file});
    expect_ok(read);
    EXPECT_EQ(read.out, mapped.out);
    const CliRun verified = run_cli({"verify", "--no-mmap", file});
    EXPECT_EQ(verified.exit_code, 0) << verified;
    EXPECT_TRUE(verified.out.starts_with(file.string() + ": ok (")) << verified.out;
  }
}

TEST_F(Cli, AFileSizeLimitIsAnErrorNotASignal) {
  ScratchDir dir("cli_file_size_limit");
  ModelProto model;
  model.ir_version = 8;
  model.graph.ensure().initializer.push_back(
      test_support::raw_tensor("w", TensorProto::kUint8, {1 << 20}, 1));
  serialize_model_to_file(model, dir / "big.onnx");
  const auto before = snapshot(dir.path());
  // The limit lets the tool start its output, not finish it.
  const ChildRun run = run_cli_child(
      {"convert", (dir / "big.onnx").string(), (dir / "big.onnxz").string()}, rlim_t{256} << 10);
  EXPECT_EQ(run.signal, 0) << run;
  EXPECT_EQ(run.exit_code, 1) << run;
  EXPECT_EQ(run.out, "");
  ASSERT_EQ(lines_of(run.err).size(), 1u) << run;
  EXPECT_TRUE(run.err.starts_with("onnxzip: error: " + (dir / "big.onnxz").string() + ": ")) << run;
  EXPECT_CONTAINS(run.err, "File too large");
  EXPECT_EQ(snapshot(dir.path()), before);  // No output, no temporary file.
}

// An input shrinking under its mapping: onnxzip_sigbus_probe, linked with the tool's signal
// handlers, maps a file, truncates it and reads it, which is the race of another process
// truncating an input while the tool reads it, made certain.
TEST(CliSignals, AnInputThatShrinksUnderItsMappingIsOneLineAndExitOne) {
  ScratchDir dir("cli_sigbus");
  const fs::path input = dir / "weights.bin";
  test_support::write_file_bytes(input, std::string(1 << 20, 'w'));
  const ChildRun run = run_child(ONNXZIP_SIGBUS_PROBE_PATH, {"mapped", input.string()});
  EXPECT_EQ(run.signal, 0) << run;
  EXPECT_EQ(run.exit_code, 1) << run;
  EXPECT_EQ(run.out, "");
  EXPECT_EQ(run.err, "onnxzip: error: " + input.string() +
                         ": the file changed (it shrank) while it was being read; rerun, or use "
                         "--no-mmap for files that others may change\n");
}

// The same race with the tool itself: verify reads a 64 MiB archive while it is truncated. The
// timing decides whether the truncation comes during the read (the one line above; nearly
// always, as it waits for the mapping) or after (a finding or ok); never a death by signal.
// Two payloads: verify reads them on two threads, which may both fault, and one line is printed.
TEST(CliSignals, VerifyOfAnArchiveTruncatedWhileItReadsNeverDiesOfASignal) {
  if (std::string(ONNXZIP_CLI_PATH).empty()) GTEST_SKIP() << "built without the CLI";
  ScratchDir dir("cli_sigbus_race");
  ModelProto model;
  model.ir_version = 8;
  for (const char* name : {"w", "v"}) {
    model.graph.ensure().initializer.push_back(
        test_support::raw_tensor(name, TensorProto::kUint8, {32 << 20}, 1));
  }
  save(model, dir / "big.onnxz");
  const fs::path archive = dir / "r.onnxz";
  const std::string shrank = "onnxzip: error: " + archive.string() +
                             ": the file changed (it shrank) while it was being read; rerun, or "
                             "use --no-mmap for files that others may change\n";
  // Truncates once the child has mapped the archive (its /proc/PID/maps names it), so that the
  // truncation mostly comes while verify reads.
  const auto truncate_once_mapped = [&](pid_t pid) {
    const fs::path maps = "/proc/" + std::to_string(pid) + "/maps";
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < deadline &&
           read_text(maps).find(archive.string()) == std::string::npos) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    fs::resize_file(archive, 1 << 20);
  };
  // The window is the CRC pass over 64 MiB, a few milliseconds: on a loaded machine the
  // truncating thread may miss it, so up to 16 attempts run until one lands in it.
  int hits = 0;
  int attempts = 0;
  for (; attempts < 16 && (attempts < 4 || hits == 0); ++attempts) {
    fs::copy_file(dir / "big.onnxz", archive, fs::copy_options::overwrite_existing);
    const ChildRun run =
        run_child(kCli, {"verify", archive.string()}, std::nullopt, truncate_once_mapped);
    SCOPED_TRACE(attempts);
    EXPECT_EQ(run.signal, 0) << run;
    EXPECT_FALSE(run.timed_out) << run;
    if (run.err == shrank) {
      ++hits;
      EXPECT_EQ(run.exit_code, 1) << run;
      EXPECT_EQ(run.out, "") << run;
    } else {  // Truncated before or after the read: a finding or ok, on standard output.
      EXPECT_EQ(run.err, "") << run;
      EXPECT_EQ(lines_of(run.out).size(), 1u) << run;
    }
  }
  std::printf("[ info     ] %d of %d truncations came while verify read the mapping\n", hits,
              attempts);
  EXPECT_GE(hits, 1);  // Truncated once the mapping exists, before a 64 MiB CRC pass ends.
}

TEST(CliSignals, ABusErrorElsewhereStillKillsWithSigbus) {
  ScratchDir dir("cli_sigbus");
  const fs::path input = dir / "not_ours.bin";
  test_support::write_file_bytes(input, std::string(1 << 20, 'w'));
  const ChildRun run = run_child(ONNXZIP_SIGBUS_PROBE_PATH, {"unknown", input.string()});
  EXPECT_EQ(run.signal, SIGBUS) << run;
  EXPECT_EQ(run.err, "");
}

}  // namespace
}  // namespace onnxzip
