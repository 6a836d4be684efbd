// The commands that need only an archive's tail -- info, info --json, edit --set-metadata, edit
// --model -- work in an address space smaller than the file (issue 32 defect 8): they read the
// tail with pread and never map the file. The archive is sparse (its payload a hole), so it
// costs no disk; the tool runs under RLIMIT_AS, half the file's size, which a mapping of the
// whole file cannot fit in. verify and extract may still map, and are not run here.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "crc32.h"
#include "onnxzip/archive.h"
#include "onnxzip/onnx_codec.h"
#include "support/cli_run.h"
#include "support/expect_contains.h"
#include "support/memory_probe.h"
#include "support/model_builder.h"
#include "support/scratch_dir.h"
#include "zip_layout.h"

namespace onnxzip {
namespace {

namespace fs = std::filesystem;
using test_support::ScratchDir;

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
constexpr std::uint64_t kPayloadBytes = 768 * kMiB;
// Half the file: room for the tool, none for a mapping of the file.
constexpr std::uint64_t kAddressSpace = kPayloadBytes / 2;

using ToolRun = test_support::CliRun;

// Runs the tool with `args` under RLIMIT_AS = kAddressSpace, its output captured in `dir`.
ToolRun run_in_small_address_space(const fs::path& dir, const std::vector<std::string>& args) {
  return test_support::run_cli_limited(dir, args,
                                       test_support::ResourceLimit{RLIMIT_AS, kAddressSpace});
}

// A model with one FLOAT tensor "w" of kPayloadBytes, referring to entry "w".
ModelProto sparse_model(const std::string& graph_name) {
  ModelProto model;
  model.ir_version = 8;
  model.opset_import.emplace_back().version = 17;
  GraphProto& graph = model.graph.ensure();
  graph.name = graph_name;
  const auto count = static_cast<std::int64_t>(kPayloadBytes / 4);
  TensorProto& w = graph.initializer.emplace_back();
  w.name = "w";
  w.data_type = TensorProto::kFloat;
  w.dims = {count};
  TensorRef{"w", kPayloadBytes}.apply_to(w);
  graph.node.push_back(test_support::make_node("Identity", {"w"}, {"y"}));
  graph.output.push_back(test_support::tensor_value_info("y", TensorProto::kFloat, {count}));
  return model;
}

// Writes `bytes` at `offset` of the open file `fd`.
void write_at(int fd, std::uint64_t offset, const std::vector<std::uint8_t>& bytes) {
  ASSERT_EQ(::pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(offset)),
            static_cast<ssize_t>(bytes.size()));
}

// An .onnxz archive laid out as the writer lays it out (zip_layout.h), whose payload entry "w"
// holds kPayloadBytes zeros that are never written: a hole of the file.
void write_sparse_archive(const fs::path& path) {
  std::vector<std::uint8_t> zeros(kMiB, 0);
  std::uint32_t crc = 0;
  for (std::uint64_t done = 0; done < kPayloadBytes; done += kMiB) crc = crc32(zeros, crc);
  const std::vector<std::uint8_t> model = serialize_model(sparse_model("before"));
  const std::uint32_t model_crc = crc32(model);
  constexpr std::uint32_t kAlignment = 64;
  const zip::EntryLayout w = zip::plan_entry(0, 1, kPayloadBytes, kAlignment);
  const zip::EntryLayout m = zip::plan_entry(w.data_offset + kPayloadBytes, kModelEntryName.size(),
                                             model.size(), kAlignment);
  std::vector<std::uint8_t> tail =
      zip::encode_local_header(m, kModelEntryName, model_crc, kAlignment);
  tail.insert(tail.end(), model.begin(), model.end());
  std::vector<std::uint8_t> directory;
  zip::append_central_record(directory, zip::written_entry(w, "w", crc));
  zip::append_central_record(directory, zip::written_entry(m, kModelEntryName, model_crc));
  const std::uint64_t directory_offset = m.data_offset + model.size();
  const std::uint64_t directory_size = directory.size();
  zip::append_end_records(directory, 2, directory_offset, directory_size);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  write_at(fd, 0, zip::encode_local_header(w, "w", crc, kAlignment));
  write_at(fd, m.local_header_offset, tail);
  write_at(fd, directory_offset, directory);
  ::close(fd);
}

class CliTailOnly : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string(ONNXZIP_CLI_PATH).empty()) GTEST_SKIP() << "built without the CLI";
    if (test_support::kSanitizedBuild) GTEST_SKIP() << "sanitizers reserve more address space";
    dir_ = std::make_unique<ScratchDir>("cli_tail_only");
    write_sparse_archive(archive());
    ASSERT_GT(fs::file_size(archive()), kAddressSpace);
  }

  fs::path archive() const { return *dir_ / "sparse.onnxz"; }
  ToolRun run(const std::vector<std::string>& args) const {
    return run_in_small_address_space(dir_->path(), args);
  }

  std::unique_ptr<ScratchDir> dir_;
};

// The limit the test rests on: the whole file cannot be mapped under it.
TEST_F(CliTailOnly, VerifyMapsTheFileAndCannotUnderTheLimit) {
  const ToolRun verify = run({"verify", archive().string()});
  EXPECT_NE(verify.exit_code, 0) << verify.out << verify.err;
}

TEST_F(CliTailOnly, InfoReadsTheTailOnly) {
  const ToolRun text = run({"info", archive().string()});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_CONTAINS(text.out, "before");
  const ToolRun json = run({"info", "--json", archive().string()});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_CONTAINS(json.out, "\"offset\": 64");
  EXPECT_CONTAINS(json.out, std::to_string(kPayloadBytes));
}

TEST_F(CliTailOnly, EditSetMetadataReadsTheTailOnly) {
  const ToolRun edit = run({"edit", archive().string(), "--set-metadata", "stage=tested"});
  ASSERT_EQ(edit.exit_code, 0) << edit.err;
  const Archive edited = Archive::open(archive(), {.access = FileAccess::kRanges});
  ASSERT_EQ(edited.model().metadata_props.size(), 1u);
  EXPECT_TRUE(edited.model().metadata_props[0].key == "stage");
  EXPECT_EQ(edited.tensors().at(0).offset, 64u);
}

TEST_F(CliTailOnly, EditModelReadsTheTailOnly) {
  const fs::path model = *dir_ / "after.onnx";
  const std::vector<std::uint8_t> bytes = serialize_model(sparse_model("after"));
  test_support::write_file_bytes(model, std::string(bytes.begin(), bytes.end()));
  const ToolRun edit = run({"edit", archive().string(), "--model", model.string()});
  ASSERT_EQ(edit.exit_code, 0) << edit.err;
  const Archive edited = Archive::open(archive(), {.access = FileAccess::kRanges});
  EXPECT_TRUE(edited.model().graph->name == "after");
}

}  // namespace
}  // namespace onnxzip
