// convert_remote (convert.h): a remote archive written as a legacy model while it downloads,
// served by nginx (tests/support/nginx_server.h). Every output form equals convert()'s of the
// same archive file, byte for byte, whatever the range size and the ranges in flight; damage is
// an Error naming the URL and the entry, and leaves nothing. Skipped without libcurl or nginx.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "onnxzip/archive.h"
#include "onnxzip/convert.h"
#include "onnxzip/error.h"
#include "onnxzip/internal/http_source.h"
#include "onnxzip/internal/zip_reader.h"
#include "support/error_of.h"
#include "support/model_builder.h"
#include "support/nginx_server.h"
#include "support/scratch_dir.h"

namespace onnxzip {
namespace {

namespace fs = std::filesystem;
using test_support::error_of;
using test_support::NginxServer;

// Initializers of sizes around the edges (0, 1, 63, 64, 65 floats...) and some large enough to
// span several ranges, plus the tensors-everywhere model's attribute, sparse and subgraph
// tensors; every payload an entry.
ModelProto test_model() {
  ModelProto model = test_support::model_with_tensors_everywhere();
  std::uint32_t seed = 100;
  for (const std::int64_t floats : {0, 1, 63, 64, 65, 300, 1024, 5000, 70000, 3, 200000, 17}) {
    model.graph->initializer.push_back(test_support::raw_tensor(
        "extra" + std::to_string(seed), TensorProto::kFloat, {floats}, seed));
    ++seed;
  }
  return model;
}

void write_bytes(const fs::path& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

// Every file of a folder: its name, size and a hash of its bytes (a short line to compare).
std::string folder_contents(const fs::path& dir) {
  std::vector<std::string> files;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    const std::vector<std::uint8_t> bytes = test_support::read_file_bytes(entry.path());
    std::uint64_t hash = 1469598103934665603ULL;
    for (const std::uint8_t b : bytes) hash = (hash ^ b) * 1099511628211ULL;
    files.push_back(entry.path().filename().string() + " " + std::to_string(bytes.size()) + " " +
                    std::to_string(hash));
  }
  std::sort(files.begin(), files.end());
  std::string text;
  for (const std::string& line : files) text += line + "\n";
  return text;
}

class ConvertRemoteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!http_available()) GTEST_SKIP() << "built without libcurl";
    if (!NginxServer::available()) GTEST_SKIP() << "nginx is not installed";
    server_ = std::make_unique<NginxServer>();
    save(test_model(), server_->root() / "m.onnxz", SaveOptions{.threshold = 0});
    url_ = server_->file_url("m.onnxz");
  }

  std::unique_ptr<NginxServer> server_;
  std::string url_;
};

struct Form {
  const char* label;
  LegacyWriteOptions legacy;
};

std::vector<Form> output_forms() {
  using Mode = LegacyWriteOptions::Mode;
  return {
      {"auto (inline)", {}},
      {"inline", {.mode = Mode::kInline}},
      {"external", {.mode = Mode::kExternal}},
      {"external, named, unaligned, all",
       {.mode = Mode::kExternal, .data_file_name = "weights.bin", .alignment = 1, .threshold = 0}},
      {"external in files of 300 KB", {.mode = Mode::kExternal, .max_file_size = 300'000}},
      {"external with attributes and sparse",
       {.mode = Mode::kExternal,
        .alignment = 64,
        .threshold = 0,
        .externalize_attributes = true,
        .externalize_sparse = true}},
  };
}

TEST_F(ConvertRemoteTest, EveryOutputFormEqualsTheLocalConvertWhateverTheRanges) {
  const test_support::ScratchDir out("convert_remote");
  const std::vector<HttpOptions> reads = {
      {},  // One range: the archive is small.
      {.tail_size = 65557, .max_parallel = 4, .piece_size = 4097},  // Headers cut, out of order.
      {.tail_size = 65557, .max_parallel = 1, .piece_size = 100'000},
  };
  for (const Form& form : output_forms()) {
    ConvertOptions options;
    options.legacy = form.legacy;
    options.load.verify_crc = true;
    const fs::path local = out / (std::string("local ") + form.label);
    fs::create_directory(local);
    convert(server_->root() / "m.onnxz", local / "m.onnx", options);
    for (std::size_t r = 0; r < reads.size(); ++r) {
      SCOPED_TRACE(std::string(form.label) + ", reads " + std::to_string(r));
      const fs::path remote = out / (std::string("remote ") + form.label + std::to_string(r));
      fs::create_directory(remote);
      std::uint64_t last_done = 0;
      std::uint64_t last_total = 1;
      options.legacy.progress = [&](std::uint64_t done, std::uint64_t total) {
        last_done = done;
        last_total = total;
      };
      server_->forget();
      const std::shared_ptr<const HttpSource> source = HttpSource::open(url_, reads[r]);
      ASSERT_EQ(detect_format(*source), ModelFormat::kOnnxz);
      convert_remote(source, remote / "m.onnx", options);
      EXPECT_EQ(folder_contents(remote), folder_contents(local));
      EXPECT_EQ(last_done, last_total);
      // The open's request (two when the model is beyond the tail), then one per range.
      const std::uint64_t size = fs::file_size(server_->root() / "m.onnxz");
      const std::uint64_t ranges = (size + reads[r].piece_size - 1) / reads[r].piece_size;
      EXPECT_LE(server_->requests(1).size(), 2 + ranges);
    }
  }
}

TEST_F(ConvertRemoteTest, ALegacyModelIsToldFromAnArchive) {
  write_legacy_model(test_support::checker_model_mlp_with_if(), server_->root() / "l.onnx");
  EXPECT_EQ(detect_format(*HttpSource::open(server_->file_url("l.onnx"))), ModelFormat::kLegacy);
  // A file larger than the tail: told by the end record's signature.
  EXPECT_EQ(detect_format(*HttpSource::open(url_, {.tail_size = 65557})), ModelFormat::kOnnxz);
}

// The archive with one byte changed at `offset`, served as NAME.
void serve_damaged(const NginxServer& server, const std::string& name, std::uint64_t offset) {
  std::vector<std::uint8_t> bytes = test_support::read_file_bytes(server.root() / "m.onnxz");
  bytes[static_cast<std::size_t>(offset)] ^= 0x5A;
  write_bytes(server.root() / name, bytes);
}

TEST_F(ConvertRemoteTest, DamageIsAnErrorNamingTheUrlAndTheEntryAndLeavesNothing) {
  const Archive local = Archive::open(server_->root() / "m.onnxz");
  const Archive::TensorInfo& info = *local.find_tensor("extra110");
  const ZipEntry& entry = local.zip().at(info.entry);
  serve_damaged(*server_, "payload.onnxz", entry.local->data_offset + entry.size / 2);
  // The local header's CRC-32 field (offset 14).
  serve_damaged(*server_, "header.onnxz", entry.local_header_offset + 14);
  const struct {
    const char* file;
    const char* problem;
  } cases[] = {{"payload.onnxz", "CRC-32"}, {"header.onnxz", "the local header says CRC-32"}};
  for (const auto& c : cases) {
    for (const LegacyWriteOptions::Mode mode :
         {LegacyWriteOptions::Mode::kExternal, LegacyWriteOptions::Mode::kInline}) {
      SCOPED_TRACE(c.file);
      const test_support::ScratchDir out("convert_remote_damage");
      ConvertOptions options;
      options.legacy.mode = mode;
      const std::string url = server_->file_url(c.file);
      const Error error = error_of([&] {
        convert_remote(HttpSource::open(url, {.tail_size = 65557, .piece_size = 50'000}),
                       out / "m.onnx", options);
      });
      EXPECT_EQ(error.code(), ErrorCode::kCorrupt);
      EXPECT_EQ(error.context().file, url);
      EXPECT_NE(error.message().find("entry '" + entry.name + "'"), std::string::npos)
          << error.message();
      EXPECT_NE(error.message().find(c.problem), std::string::npos) << error.message();
      EXPECT_TRUE(out.file_names().empty());
    }
  }
}

}  // namespace
}  // namespace onnxzip
