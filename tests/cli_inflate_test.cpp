// The onnxzip tool on a zip bomb (issue 9 item 4): an archive of 256 KB whose one tensor is
// 256 MiB of zeros, deflated. With the default compression-ratio limit every command that would
// inflate it refuses it in one line naming the entry, the ratio and --max-ratio; `info` needs no
// payload and describes it. With the limit raised every command processes it, and the evidence
// that none holds the inflated bytes in memory is a hard one: the tool runs under an
// RLIMIT_DATA of 96 MiB (heap and every private writable mapping count, file mappings do not), so
// a single anonymous copy of the tensor would make it fail. Its peak RSS is printed too; for the
// commands that read a spilled entry through its mapping, RSS includes those file pages.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "onnxzip/archive.h"
#include "onnxzip/internal/zip_reader.h"
#include "onnxzip/onnx_codec.h"
#include "support/cli_run.h"
#include "support/expect_contains.h"
#include "support/memory_probe.h"
#include "support/model_builder.h"
#include "support/scratch_dir.h"
#include "support/zip_builder.h"

namespace onnxzip {
namespace {

namespace fs = std::filesystem;
using test_support::ScratchDir;

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
constexpr std::uint64_t kBombBytes = 256 * kMiB;
// Far below the tensor, above what the tool needs besides: its own heap, one inflater buffer.
constexpr std::uint64_t kDataLimit = 96 * kMiB;

using test_support::LimitedCliRun;

// Runs the tool with `args` under RLIMIT_DATA = kDataLimit (without sanitizers, whose shadow
// memory the limit would refuse), standard output and error captured in `dir`.
LimitedCliRun run_limited(const fs::path& dir, const std::vector<std::string>& args) {
  std::optional<test_support::ResourceLimit> limit;
  if (!test_support::kSanitizedBuild) limit = test_support::ResourceLimit{RLIMIT_DATA, kDataLimit};
  return test_support::run_cli_limited(dir, args, limit);
}

class CliInflate : public ::testing::Test {
 protected:
  // The bomb: tensor "w", FLOAT [64Mi] of zeros, deflated by libdeflate, then a deflated
  // __MODEL_PROTO (an archive another tool wrote: everything deflated). The model passes the IR
  // rules, so the only problems verify finds are those of the ZIP records.
  static void SetUpTestSuite() {
    if (std::string(ONNXZIP_CLI_PATH).empty()) return;
    dir_ = std::make_unique<ScratchDir>("cli_inflate");
    ModelProto model;
    model.ir_version = 8;
    model.opset_import.emplace_back().version = 17;
    GraphProto& graph = model.graph.ensure();
    graph.name = "bomb";
    const std::int64_t count = static_cast<std::int64_t>(kBombBytes / 4);
    TensorProto& w = graph.initializer.emplace_back();
    w.name = "w";
    w.data_type = TensorProto::kFloat;
    w.dims = {count};
    TensorRef{"w", kBombBytes}.apply_to(w);
    graph.node.push_back(test_support::make_node("Identity", {"w"}, {"y"}));
    graph.output.push_back(test_support::tensor_value_info("y", TensorProto::kFloat, {count}));
    std::vector<testing::TestEntry> entries(2);
    entries[0].name = "w";
    entries[0].data.assign(kBombBytes, 0);
    entries[1].name = std::string(kModelEntryName);
    entries[1].data = serialize_model(model);
    for (testing::TestEntry& e : entries) e.method = zip::kMethodDeflated;
    const std::vector<std::uint8_t> bytes = testing::build_zip(entries).bytes;
    test_support::write_file_bytes(bomb(), std::string(bytes.begin(), bytes.end()));
  }
  static void TearDownTestSuite() { dir_.reset(); }

  void SetUp() override {
    if (std::string(ONNXZIP_CLI_PATH).empty()) GTEST_SKIP() << "built without the CLI";
  }

  static fs::path bomb() { return *dir_ / "bomb.onnxz"; }

  static std::unique_ptr<ScratchDir> dir_;
};

std::unique_ptr<ScratchDir> CliInflate::dir_;

// What each command that reads an archive runs, given its scratch folder.
struct Command {
  const char* name;
  std::vector<std::string> (*args)(const fs::path& archive, const fs::path& out);
  const char* output;  // What it writes in its scratch folder ("" for nothing).
};

const Command kCommands[] = {
    {"info",
     [](const fs::path& a, const fs::path&) -> std::vector<std::string> {
       return {"info", a.string()};
     },
     ""},
    {"verify",
     [](const fs::path& a, const fs::path&) -> std::vector<std::string> {
       return {"verify", a.string()};
     },
     ""},
    {"extract",
     [](const fs::path& a, const fs::path& o) -> std::vector<std::string> {
       return {"extract", a.string(), (o / "out").string()};
     },
     "out/bomb.onnx.data"},
    {"view",
     [](const fs::path& a, const fs::path& o) -> std::vector<std::string> {
       return {"view", a.string(), (o / "bomb.view.onnx").string()};
     },
     "bomb.view.onnx"},
    {"convert",
     [](const fs::path& a, const fs::path& o) -> std::vector<std::string> {
       return {"convert", a.string(), (o / "bomb.onnx").string()};
     },
     "bomb.onnx"},
    {"repack",
     [](const fs::path& a, const fs::path& o) -> std::vector<std::string> {
       return {"repack", a.string(), (o / "repacked.onnxz").string()};
     },
     "repacked.onnxz"},
};

// The limit the evidence rests on holds on this machine: a process under it cannot get as much
// anonymous memory as the tensor.
TEST_F(CliInflate, TheDataLimitRefusesAnAnonymousCopyOfTheTensor) {
  if (test_support::kSanitizedBuild) GTEST_SKIP() << "sanitizers map shadow memory";
  const rlimit limit{kDataLimit, kDataLimit};
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::setrlimit(RLIMIT_DATA, &limit) != 0) ::_exit(2);
    void* const copy = std::malloc(kBombBytes);
    ::_exit(copy == nullptr ? 0 : 1);
  }
  ASSERT_GT(pid, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "malloc of 256 MiB succeeded under RLIMIT_DATA";
}

TEST_F(CliInflate, EveryCommandRefusesTheBombByItsRatioButInfoDescribesIt) {
  const std::uint64_t compressed = [] {
    const ZipReader zip = ZipReader::open(bomb());
    return zip.at("w").compressed_size;
  }();
  ASSERT_GT(kBombBytes / compressed, 900u);  // About what `zip` makes of a tensor of zeros.
  for (const Command& command : kCommands) {
    SCOPED_TRACE(command.name);
    // The view must be next to the archive: each command gets a copy in its own folder.
    ScratchDir dir(std::string("cli_bomb_") + command.name);
    fs::copy_file(bomb(), dir / "bomb.onnxz");
    const LimitedCliRun run = run_limited(dir.path(), command.args(dir / "bomb.onnxz", dir.path()));
    if (std::string(command.name) == "info") {
      EXPECT_EQ(run.exit_code, 0) << run;
      EXPECT_CONTAINS(run.out, std::to_string(kBombBytes));  // The entry's size, uninflated.
      continue;
    }
    EXPECT_EQ(run.exit_code, 1) << run;
    const std::string& text = std::string(command.name) == "verify" ? run.out : run.err;
    EXPECT_CONTAINS(
        text, "bomb.onnxz: entry 'w' at offset 0: deflated from " + std::to_string(compressed) +
                  " to " + std::to_string(kBombBytes) + " bytes, a compression ratio of " +
                  std::to_string(kBombBytes / compressed) +
                  ":1, above the limit of 100:1 that refuses zip bombs (--max-ratio N: raise it "
                  "for an archive you trust, 0 for no limit)");
    EXPECT_EQ(text.find("ZipReaderOptions"), std::string::npos) << text;  // The tool's words.
    if (std::string(command.name) != "verify") {
      EXPECT_EQ(run.out, "") << run;
      EXPECT_TRUE(run.err.starts_with("onnxzip: error: ")) << run;
      EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run;
    }
    if (*command.output != '\0') {
      EXPECT_FALSE(fs::exists(dir / command.output));
    }
  }
}

// --max-inflated-size caps any deflated entry, whatever its ratio.
TEST_F(CliInflate, MaxInflatedSizeRefusesLargeEntries) {
  ScratchDir dir("cli_bomb_size");
  const LimitedCliRun run =
      run_limited(dir.path(), {"extract", bomb().string(), (dir / "out").string(), "--max-ratio",
                               "0", "--max-inflated-size", "1M"});
  EXPECT_EQ(run.exit_code, 1) << run;
  EXPECT_EQ(run.out, "") << run;
  EXPECT_CONTAINS(run.err, "entry 'w' at offset 0: inflates to " + std::to_string(kBombBytes) +
                               " bytes, above the limit of 1048576 (--max-inflated-size SIZE: "
                               "raise it for an archive you trust)");
  EXPECT_EQ(run.err.find("ZipReaderOptions"), std::string::npos) << run.err;
  EXPECT_FALSE(fs::exists(dir / "out"));
}

TEST_F(CliInflate, EveryCommandProcessesATrustedBombInBoundedMemory) {
  for (const Command& command : kCommands) {
    SCOPED_TRACE(command.name);
    ScratchDir dir(std::string("cli_bomb_") + command.name);
    fs::copy_file(bomb(), dir / "bomb.onnxz");
    std::vector<std::string> args = command.args(dir / "bomb.onnxz", dir.path());
    args.insert(args.end(), {"--max-ratio", "0"});
    const LimitedCliRun run = run_limited(dir.path(), args);
    std::printf(
        "[ bomb ] onnxzip %-7s on 256 MiB deflated to %.0f KiB: exit %d, max RSS %.1f MiB, "
        "peak RssAnon %.1f MiB (RLIMIT_DATA %.0f MiB%s)\n",
        command.name, static_cast<double>(fs::file_size(bomb())) / 1024, run.exit_code,
        static_cast<double>(run.max_rss) / kMiB, static_cast<double>(run.peak_anon) / kMiB,
        static_cast<double>(kDataLimit) / kMiB,
        test_support::kSanitizedBuild ? ", not applied: sanitizers" : "");
    if (std::string(command.name) == "verify") {
      // The archive breaks the format's rules (deflated entries, ZIP header fields), and says
      // so; the CRC-32 of the inflated tensor is right and no limit is hit.
      EXPECT_EQ(run.exit_code, 1) << run;
      EXPECT_CONTAINS(run.out, "deflated; not zero-copy");
      EXPECT_EQ(run.out.find("CRC"), std::string::npos) << run;
      EXPECT_EQ(run.out.find("limit"), std::string::npos) << run;
      EXPECT_EQ(run.out.find("memory"), std::string::npos) << run;
    } else {
      EXPECT_EQ(run.exit_code, 0) << run;
    }
    if (*command.output != '\0') {
      ASSERT_TRUE(fs::exists(dir / command.output));
      EXPECT_GE(fs::file_size(dir / command.output), kBombBytes);
    }
    // Nothing read the inflated tensor into anonymous memory; these read it only from the
    // inflater, so no page of it is counted in their RSS either.
    const std::string name = command.name;
    if (!test_support::kSanitizedBuild &&
        (name == "info" || name == "verify" || name == "repack")) {
      EXPECT_LT(run.max_rss, 64 * kMiB);
    }
  }
  // The repacked archive holds the tensor, stored.
  ScratchDir dir("cli_bomb_check");
  std::vector<std::string> args = {"repack", bomb().string(), (dir / "r.onnxz").string(),
                                   "--max-ratio", "0"};
  ASSERT_EQ(run_limited(dir.path(), args).exit_code, 0);
  const ModelProto loaded = load(dir / "r.onnxz");
  const ByteSpan w = loaded.graph->initializer[0].raw_data->view();
  ASSERT_EQ(w.size(), kBombBytes);
  EXPECT_TRUE(std::all_of(w.begin(), w.end(), [](std::uint8_t b) { return b == 0; }));
}

}  // namespace
}  // namespace onnxzip
