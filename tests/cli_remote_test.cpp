// The onnxzip tool on archives named by a URL (src/cli/cli_remote.h), served by nginx
// (tests/support/nginx_server.h): every result equal to the local one's, the requests counted.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "onnxzip/archive.h"
#include "onnxzip/internal/http_source.h"
#include "onnxzip/legacy.h"
#include "support/external_tool.h"
#include "support/model_builder.h"
#include "support/nginx_server.h"
#include "support/scratch_dir.h"

namespace onnxzip {
namespace {

namespace fs = std::filesystem;
using test_support::NginxServer;
using test_support::run_tool;
using test_support::shell_quote;

const std::string kCli = ONNXZIP_CLI_PATH;

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

class CliRemoteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (kCli.empty()) GTEST_SKIP() << "built without the CLI";
    if (!http_available()) GTEST_SKIP() << "built without libcurl";
    if (!NginxServer::available()) GTEST_SKIP() << "nginx is not installed";
    server_ = std::make_unique<NginxServer>();
    // The MLP of the archive tests: initializers, a Constant, an If with subgraph tensors.
    save(test_support::checker_model_mlp_with_if(), server_->root() / "m.onnxz",
         SaveOptions{.threshold = 0});
    local_ = (server_->root() / "m.onnxz").string();
    url_ = server_->file_url("m.onnxz");
  }

  test_support::ToolResult onnxzip(const std::string& arguments) const {
    return run_tool(shell_quote(kCli) + " --quiet " + arguments + " 2>&1");
  }

  std::unique_ptr<NginxServer> server_;
  std::string local_;
  std::string url_;
};

TEST_F(CliRemoteTest, InfoJsonEqualsTheLocalOneApartFromTheFile) {
  const auto local = onnxzip("info --json " + shell_quote(local_));
  ASSERT_EQ(local.exit_code, 0) << local.output;
  server_->forget();
  const auto remote = onnxzip("info --json " + shell_quote(url_ + "?X-Amz-Signature=s3cr3t"));
  ASSERT_EQ(remote.exit_code, 0) << remote.output;
  EXPECT_EQ(server_->requests(1).size(), 1U);
  EXPECT_EQ(remote.output.find("s3cr3t"), std::string::npos);
  // The archive is smaller than the first request's MiB: every local header is known.
  EXPECT_EQ(replace_all(remote.output, url_, local_), local.output);
}

TEST_F(CliRemoteTest, InfoOfAnArchiveLargerThanTheTailEqualsTheLocalOne) {
  // Six payloads of 384 KiB: the first read (1 MiB) holds the local headers of the last two only,
  // so the others' data offsets come from the central directory's layout.
  for (const std::uint32_t alignment : {64U, 4096U}) {
    SCOPED_TRACE(alignment);
    ModelProto model;
    model.ir_version = 8;
    GraphProto& graph = model.graph.ensure();
    for (int i = 0; i < 6; ++i) {
      graph.initializer.push_back(test_support::raw_tensor(
          "w" + std::to_string(i), TensorProto::kFloat, {96, 1024}, static_cast<std::uint32_t>(i)));
    }
    const fs::path path = server_->root() / "big.onnxz";
    save(model, path, SaveOptions{.alignment = alignment});
    const std::string url = server_->file_url("big.onnxz");
    for (const std::string format : {"--json ", ""}) {
      const auto local = onnxzip("info " + format + shell_quote(path.string()));
      ASSERT_EQ(local.exit_code, 0) << local.output;
      server_->forget();
      const auto remote = onnxzip("info " + format + shell_quote(url));
      ASSERT_EQ(remote.exit_code, 0) << remote.output;
      EXPECT_EQ(server_->requests(1).size(), 1U);
      EXPECT_EQ(replace_all(remote.output, url, path.string()), local.output);
    }
  }
}

TEST_F(CliRemoteTest, VerifyAndExtractAndConvertEqualTheLocalResults) {
  const test_support::ScratchDir out("cli_remote");
  const auto verified = run_tool(shell_quote(kCli) + " verify " + shell_quote(url_) + " 2>&1");
  EXPECT_EQ(verified.exit_code, 0) << verified.output;
  // Named by its URL, not by the download's path.
  EXPECT_EQ(verified.output, url_ +
                                 ": ok (ZIP structure, layout, references, CRC-32s; no digests; "
                                 "no signature; ONNX IR rules)\n");

  ASSERT_EQ(
      onnxzip("extract " + shell_quote(local_) + " " + shell_quote((out / "l").string())).exit_code,
      0);
  const auto extracted =
      onnxzip("extract " + shell_quote(url_) + " " + shell_quote((out / "r").string()));
  ASSERT_EQ(extracted.exit_code, 0) << extracted.output;
  EXPECT_EQ(test_support::read_file_bytes(out / "r" / "m.onnx"),
            test_support::read_file_bytes(out / "l" / "m.onnx"));
  EXPECT_EQ(test_support::read_file_bytes(out / "r" / "m.onnx.data"),
            test_support::read_file_bytes(out / "l" / "m.onnx.data"));

  // Every output form of convert: written while it downloads, equal to the local one.
  int form = 0;
  for (const std::string flags :
       {"", "--external-data", "--external-data w.bin --alignment 64 --threshold 0",
        "--max-file-size 2000 --threshold 0"}) {
    SCOPED_TRACE(flags);
    const fs::path l = out / ("l" + std::to_string(form));
    const fs::path r = out / ("r" + std::to_string(++form));
    fs::create_directories(l);
    fs::create_directories(r);
    ASSERT_EQ(onnxzip("convert " + flags + " " + shell_quote(local_) + " " +
                      shell_quote((l / "m.onnx").string()))
                  .exit_code,
              0);
    const auto converted = onnxzip("convert " + flags + " " + shell_quote(url_) + " " +
                                   shell_quote((r / "m.onnx").string()));
    ASSERT_EQ(converted.exit_code, 0) << converted.output;
    std::vector<std::string> names;
    for (const auto& file : fs::directory_iterator(l)) {
      names.push_back(file.path().filename().string());
      EXPECT_EQ(test_support::read_file_bytes(r / names.back()),
                test_support::read_file_bytes(file.path()))
          << names.back();
    }
    EXPECT_EQ(std::distance(fs::directory_iterator(r), fs::directory_iterator()),
              static_cast<std::ptrdiff_t>(names.size()));
  }
}

TEST_F(CliRemoteTest, ExtractOfALegacyModelUrlIsRefusedAndConvertDownloadsIt) {
  const test_support::ScratchDir out("cli_remote_legacy");
  write_legacy_model(test_support::checker_model_mlp_with_if(), server_->root() / "l.onnx");
  const std::string url = server_->file_url("l.onnx");
  const auto extracted = onnxzip("extract " + shell_quote(url) + " " + shell_quote(out.path()));
  EXPECT_EQ(extracted.exit_code, 1);
  EXPECT_NE(extracted.output.find(url + ": not an .onnxz archive"), std::string::npos)
      << extracted.output;
  const auto converted =
      onnxzip("convert " + shell_quote(url) + " " + shell_quote((out / "l.onnxz").string()));
  EXPECT_EQ(converted.exit_code, 0) << converted.output;
  ASSERT_EQ(onnxzip("convert " + shell_quote((server_->root() / "l.onnx").string()) + " " +
                    shell_quote((out / "local.onnxz").string()))
                .exit_code,
            0);
  EXPECT_EQ(Archive::open(out / "l.onnxz").model_bytes().size(),
            Archive::open(out / "local.onnxz").model_bytes().size());
}

TEST_F(CliRemoteTest, HeadersViewAndFailuresExitNonZeroWithAClearMessage) {
  const std::string private_url = server_->url("/private/m.onnxz");
  const auto refused = onnxzip("info " + shell_quote(private_url));
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.output.find("HTTP 401"), std::string::npos) << refused.output;
  const auto allowed =
      onnxzip("--header 'Authorization: Bearer secret' info " + shell_quote(private_url));
  EXPECT_EQ(allowed.exit_code, 0) << allowed.output;
  const auto wrong =
      onnxzip("--header 'Authorization: Bearer hunter2' verify " + shell_quote(private_url));
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_EQ(wrong.output.find("hunter2"), std::string::npos) << wrong.output;

  const std::string missing_url = server_->file_url("none.onnxz");
  for (const std::string command : {"info ", "verify ", "extract "}) {
    const std::string folder = command == "extract " ? " " + shell_quote(local_ + ".out") : "";
    const auto missing = onnxzip(command + shell_quote(missing_url) + folder);
    EXPECT_EQ(missing.exit_code, 1) << command;
    EXPECT_NE(missing.output.find("HTTP 404"), std::string::npos) << missing.output;
    // The URL names the place once, as a path does.
    const std::size_t first = missing.output.find(missing_url);
    EXPECT_NE(first, std::string::npos) << missing.output;
    EXPECT_EQ(missing.output.find(missing_url, first + 1), std::string::npos) << missing.output;
  }

  const auto view = onnxzip("view " + shell_quote(url_));
  EXPECT_EQ(view.exit_code, 2);
  EXPECT_NE(view.output.find("a view points into a local archive file"), std::string::npos)
      << view.output;
}

}  // namespace
}  // namespace onnxzip
