// s3://bucket/key read like a URL (src/io/s3_source.cpp, Archive::open_url) from a real S3
// server: moto with signature checking on, behind a proxy that counts requests and injects
// faults (tests/support/s3_server.h). The archives are uploaded by boto3, an independent client,
// and every remote result is compared with the local file's. Skipped, with the reason, where no
// Python has moto or the build has no libcurl.
#include "s3_source.h"

#include <gtest/gtest.h>

#include <stdlib.h>

#include <cstdlib>
#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "onnxzip/archive.h"
#include "onnxzip/error.h"
#include "support/cli_run.h"
#include "support/error_of.h"
#include "support/model_builder.h"
#include "support/s3_server.h"
#include "support/scratch_dir.h"

namespace onnxzip::s3 {
namespace {

namespace fs = std::filesystem;
using test_support::error_of;
using test_support::S3Server;

std::vector<std::uint8_t> to_vector(ByteSpan bytes) { return {bytes.begin(), bytes.end()}; }

// The tests only read the store, so they stay independent of each other.
class S3SourceTest : public test_support::S3SuiteTest<S3SourceTest> {
 public:
  // small.onnxz fits the first read; big.onnxz: 40 tensors of 64 KiB beyond a 256 KiB tail;
  // wide.onnxz: a model of over 64 KiB (3,000 initializers).
  static Uploads prepare(const fs::path& files) {
    test_support::write_float_archive(files / "small.onnxz", 8, 256);
    test_support::write_float_archive(files / "big.onnxz", 40, 16384);
    test_support::write_float_archive(files / "wide.onnxz", 3000, 4);
    return {{"small.onnxz", (files / "small.onnxz").string()},
            {"dir/big model.onnxz", (files / "big.onnxz").string()},
            {"big.onnxz", (files / "big.onnxz").string()},
            {"wide.onnxz", (files / "wide.onnxz").string()}};
  }

 protected:
  // A local archive, the same bytes as the store's object of that name.
  static fs::path model(const std::string& name) { return file(name); }

  // The store's settings, from an environment of the test's own.
  Environment environment(const std::string& secret = "") const {
    return server_->environment(dir_.path(), secret);
  }

  Archive open(const std::string& url, HttpOptions http = {}) const {
    http.retry_delay = std::chrono::milliseconds(1);
    return Archive::open(open_source(url, http, {}, environment()));
  }

  test_support::ScratchDir dir_{"s3_source"};  // The test's HOME and the tool's outputs.
};

TEST_F(S3SourceTest, OpenIsOneSignedRequestAndEachTensorBeyondTheTailOne) {
  const Archive local = Archive::open(model("big.onnxz"));
  const Archive remote = open("s3://models/dir/big model.onnxz", {.tail_size = 256 << 10});
  test_support::S3ProxyStats stats = server_->stats();
  EXPECT_EQ(stats.requests, 1U);
  ASSERT_EQ(stats.requests_seen.size(), 1U);
  EXPECT_EQ(stats.requests_seen[0], "GET /models/dir/big%20model.onnxz bytes=-262144");
  EXPECT_TRUE(std::equal(remote.model_bytes().begin(), remote.model_bytes().end(),
                         local.model_bytes().begin(), local.model_bytes().end()));
  ASSERT_EQ(remote.tensors().size(), local.tensors().size());

  server_->reset_stats();
  for (const char* name : {"w0", "w17"}) {
    EXPECT_EQ(to_vector(remote.payload(*remote.find_tensor(name)).view()),
              to_vector(local.find_tensor(name)->data))
        << name;
  }
  stats = server_->stats();
  EXPECT_EQ(stats.requests, 2U);  // One per tensor.
  EXPECT_LE(stats.bytes, 2U * (64U << 10) + 1024U);
}

TEST_F(S3SourceTest, ASmallArchiveIsOneRequestAndAModelBeyondTheTailTwo) {
  const Archive local_small = Archive::open(model("small.onnxz"));
  const Archive small = open("s3://models/small.onnxz");
  for (const Archive::TensorInfo& tensor : local_small.tensors()) {
    EXPECT_EQ(to_vector(small.payload(*small.find_tensor(tensor.name)).view()),
              to_vector(tensor.data));
  }
  EXPECT_EQ(server_->stats().requests, 1U);  // Every tensor was in the first read.

  server_->reset_stats();
  const Archive local_wide = Archive::open(model("wide.onnxz"));
  ASSERT_GT(local_wide.model_bytes().size(), 70000U);
  const Archive wide = open("s3://models/wide.onnxz", {.tail_size = 65557});
  EXPECT_EQ(wide.tensors().size(), 3000U);
  EXPECT_EQ(server_->stats().requests, 2U);
}

TEST_F(S3SourceTest, RefusalsSayWhatTheStoreSaidNamingTheObjectAndNoSecret) {
  const auto open_with = [&](const std::string& url, const std::string& secret) {
    return error_of([&] {
      (void)Archive::open(
          open_source(url, {.retry_delay = std::chrono::milliseconds(1)}, {}, environment(secret)));
    });
  };
  const Error wrong_secret = open_with("s3://models/small.onnxz", "wrong-secret-value");
  EXPECT_EQ(wrong_secret.code(), ErrorCode::kIo);
  EXPECT_EQ(wrong_secret.context().file, "s3://models/small.onnxz");
  EXPECT_NE(wrong_secret.message().find("HTTP 403 SignatureDoesNotMatch"), std::string::npos)
      << wrong_secret.message();
  EXPECT_NE(wrong_secret.message().find("AWS_SECRET_ACCESS_KEY"), std::string::npos);
  EXPECT_EQ(wrong_secret.message().find("wrong-secret-value"), std::string::npos);
  EXPECT_EQ(wrong_secret.message().find(server_->access_key_id()), std::string::npos);

  const Error no_key = open_with("s3://models/absent.onnxz", "");
  EXPECT_EQ(no_key.code(), ErrorCode::kNotFound);
  EXPECT_NE(no_key.message().find("NoSuchKey"), std::string::npos) << no_key.message();
  EXPECT_NE(no_key.message().find("bucket 'models' has no object 'absent.onnxz'"),
            std::string::npos);

  server_->inject("region");
  const Error wrong_region = open_with("s3://models/small.onnxz", "");
  EXPECT_EQ(wrong_region.code(), ErrorCode::kIo);
  EXPECT_NE(wrong_region.message().find("HTTP 301 PermanentRedirect"), std::string::npos)
      << wrong_region.message();
  EXPECT_NE(wrong_region.message().find("AWS_REGION=eu-west-3"), std::string::npos);

  const Error no_bucket = open_with("s3://nobucket/small.onnxz", "");
  EXPECT_EQ(no_bucket.code(), ErrorCode::kNotFound);
  EXPECT_NE(no_bucket.message().find("NoSuchBucket"), std::string::npos) << no_bucket.message();
}

// The proxy answers 503 SlowDown or cuts a body: the request is retried, resuming where it was.
TEST_F(S3SourceTest, ThrottledAndCutRequestsAreRetried) {
  const Archive local = Archive::open(model("big.onnxz"));
  server_->inject("slowdown", 2);
  const Archive remote = open("s3://models/dir/big model.onnxz", {.tail_size = 256 << 10});
  EXPECT_EQ(server_->stats().requests, 3U);
  server_->reset_stats();
  server_->inject("reset");
  EXPECT_EQ(to_vector(remote.payload(*remote.find_tensor("w3")).view()),
            to_vector(local.find_tensor("w3")->data));
  EXPECT_EQ(server_->stats().requests, 2U);

  server_->inject("slowdown", 10);
  const Error gave_up = error_of([&] { (void)open("s3://models/small.onnxz"); });
  EXPECT_EQ(gave_up.code(), ErrorCode::kIo);
  EXPECT_NE(gave_up.message().find("503 SlowDown"), std::string::npos) << gave_up.message();
  EXPECT_NE(gave_up.message().find("after 4 attempts"), std::string::npos) << gave_up.message();
}

// Variables of the process's environment set for a scope, then restored (the tool inherits them).
class ScopedEnvironment final {
 public:
  explicit ScopedEnvironment(const std::vector<std::pair<std::string, std::string>>& variables) {
    for (const auto& [name, value] : variables) {
      saved_[name] = process_environment(name);
      ::setenv(name.c_str(), value.c_str(), 1);
    }
  }
  ~ScopedEnvironment() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        ::setenv(name.c_str(), value->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
  }
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

// Archive::open_url takes s3:// and finds the settings in the process's environment.
TEST_F(S3SourceTest, ArchiveOpenUrlTakesS3Urls) {
  const ScopedEnvironment scope(server_->variables(dir_.path()));
  const Archive local = Archive::open(model("small.onnxz"));
  const Archive remote = Archive::open_url("s3://models/small.onnxz");
  EXPECT_EQ(remote.tensors().size(), local.tensors().size());
  EXPECT_EQ(server_->stats().requests, 1U);
}

// The tool's read commands take s3:// where they take an http(s) URL.
TEST_F(S3SourceTest, TheToolReadsS3Urls) {
  const ScopedEnvironment scope(server_->variables(dir_.path()));
  const test_support::CliRun info =
      test_support::run_cli(dir_.path(), {"info", "s3://models/small.onnxz"});
  EXPECT_EQ(info.exit_code, 0) << info;
  EXPECT_NE(info.out.find("s3://models/small.onnxz"), std::string::npos) << info;
  EXPECT_EQ(server_->stats().requests, 1U);

  // verify reads every byte: its findings are the local file's (this model has no opset).
  const test_support::CliRun local_verify =
      test_support::run_cli(dir_.path(), {"verify", model("big.onnxz").string()});
  const test_support::CliRun verify =
      test_support::run_cli(dir_.path(), {"verify", "s3://models/big.onnxz"});
  EXPECT_EQ(verify.exit_code, local_verify.exit_code) << verify;
  std::string expected = local_verify.out;
  expected.replace(0, model("big.onnxz").string().size(), "s3://models/big.onnxz");
  EXPECT_EQ(verify.out, expected) << verify;

  const fs::path local_out = dir_ / "local";
  const fs::path remote_out = dir_ / "remote";
  ASSERT_EQ(test_support::run_cli(dir_.path(),
                                  {"extract", model("big.onnxz").string(), local_out.string()})
                .exit_code,
            0);
  const test_support::CliRun extract =
      test_support::run_cli(dir_.path(), {"extract", "s3://models/big.onnxz", remote_out.string()});
  ASSERT_EQ(extract.exit_code, 0) << extract;
  for (const char* name : {"big.onnx", "big.onnx.data"}) {
    EXPECT_EQ(test_support::read_file_bytes(remote_out / name),
              test_support::read_file_bytes(local_out / name))
        << name;
  }
}

TEST_F(S3SourceTest, TheToolSaysWhatTheStoreRefusedWithoutTheSecret) {
  const ScopedEnvironment scope(server_->variables(dir_.path(), "not-the-secret-123"));
  const test_support::CliRun info =
      test_support::run_cli(dir_.path(), {"info", "s3://models/small.onnxz"});
  EXPECT_NE(info.exit_code, 0);
  EXPECT_NE(info.err.find("s3://models/small.onnxz"), std::string::npos) << info;
  EXPECT_NE(info.err.find("SignatureDoesNotMatch"), std::string::npos) << info;
  EXPECT_EQ(info.err.find("not-the-secret-123"), std::string::npos) << info;
  EXPECT_EQ(info.out.find("not-the-secret-123"), std::string::npos) << info;
}

}  // namespace
}  // namespace onnxzip::s3
