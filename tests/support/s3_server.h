// Test support: an S3 store on 127.0.0.1 for the object-storage tests -- moto's server with
// signature checking on, behind a counting and fault-injecting proxy (tests/support/s3_server.py),
// started as a child process and killed by the destructor -- and S3SuiteTest, the fixture of the
// suites that share one. moto is not a Debian package: the tests skip where no Python has it
// (S3Server::python(), with the reason).
#ifndef ONNXZIP_TESTS_SUPPORT_S3_SERVER_H_
#define ONNXZIP_TESTS_SUPPORT_S3_SERVER_H_

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/types.h>

#include <cstdint>
#include <exception>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "onnxzip/s3_options.h"
#include "s3_config.h"
#include "support/scratch_dir.h"

namespace onnxzip::test_support {

// The bucket the store starts with.
inline constexpr char kS3TestBucket[] = "models";
// The variables S3Server::variables() sets, in its order.
inline constexpr const char* kStoreVariables[] = {
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL_S3",
    "AWS_REGION",        "AWS_CONFIG_FILE",       "AWS_SHARED_CREDENTIALS_FILE"};

// What the proxy forwarded since its last reset.
struct S3ProxyStats {
  std::uint64_t requests = 0;
  std::uint64_t bytes = 0;                 // Body bytes sent to the client.
  std::uint64_t received = 0;              // Body bytes the client sent.
  std::vector<std::string> requests_seen;  // "METHOD PATH RANGE" each.
  // Each request's S3 operation ("get", "create", "copy", "part", "complete", "abort", ...)
  // and the headers an edit conditions its requests with, in order.
  struct Request {
    std::string operation;
    std::string if_match;
    std::string copy_source_range;
    std::string copy_source_if_match;
  };
  std::vector<Request> log;
  std::vector<std::uint64_t> bytes_received;  // Each request's body bytes, as requests_seen.
};

class S3Server final {
 public:
  // A Python interpreter with moto 5 and boto3: $ONNXZIP_MOTO_PYTHON, else `python3` on PATH, else
  // pyenv's; nullopt when none has them.
  static std::optional<std::string> python();
  // Why the S3 tests cannot run here ("built without libcurl", no Python with moto), or "" when
  // they can: what each suite's SetUpTestSuite checks first and its tests skip with.
  static std::string why_unavailable();

  // Starts the store with `bucket`, holding each (key, local file) uploaded by boto3. Throws
  // std::runtime_error when it does not come up.
  S3Server(const std::string& bucket,
           const std::vector<std::pair<std::string, std::string>>& uploads);
  ~S3Server();
  S3Server(const S3Server&) = delete;
  S3Server& operator=(const S3Server&) = delete;

  // The proxy's URL, "http://127.0.0.1:PORT": the endpoint clients use.
  const std::string& endpoint() const noexcept { return endpoint_; }
  const std::string& access_key_id() const noexcept { return access_key_id_; }
  const std::string& secret_access_key() const noexcept { return secret_access_key_; }

  // The store's settings, each way a test hands them to the code under test; `secret` (when not
  // empty) stands for the store's secret key. The client's: keys, region us-east-1, endpoint.
  s3::Config config(const std::string& secret = "") const;
  // The same as S3Options, which override the environment's.
  S3Options options() const;
  // The same as the AWS tools read them from the environment (kStoreVariables), with no
  // configuration or credentials file (`dir`/none), so that no ~/.aws answers instead.
  std::vector<std::pair<std::string, std::string>> variables(const std::filesystem::path& dir,
                                                             const std::string& secret = "") const;
  // variables() and HOME=`home`, as the reader's Environment, which is nothing else.
  s3::Environment environment(const std::filesystem::path& home,
                              const std::string& secret = "") const;

  S3ProxyStats stats() const;
  // Zeroes the counts and drops the faults not yet met.
  void reset_stats() const;
  // The next `count` requests (of S3 operation `operation` when not empty: "copy", "complete"...)
  // get `kind` ("slowdown", "reset", "conflict", "overwrite"; see s3_server.py).
  void inject(const std::string& kind, int count = 1, const std::string& operation = "") const;

  // boto3, the independent client: `file` uploaded as `key`, and `key` downloaded to `file`.
  void put(const std::string& key, const std::string& file) const;
  void get(const std::string& key, const std::string& file) const;
  // The keys of the bucket's multipart uploads in progress (boto3's ListMultipartUploads).
  std::vector<std::string> pending_uploads() const;

 private:
  ScratchDir dir_;
  pid_t pid_ = -1;
  std::string endpoint_;
  std::string access_key_id_;
  std::string secret_access_key_;
};

// The fixture of a suite of tests sharing one store: moto takes seconds to start where a test
// takes milliseconds, so ctest runs each such suite as one case (tests/CMakeLists.txt). Every
// test is skipped with the reason when the store cannot run here (S3Server::why_unavailable(),
// then Suite::missing()), fails when it did not start, and starts with the proxy's counters and
// pending faults cleared. `Suite` derives from S3SuiteTest<Suite>, so each suite has its own
// store, and may declare publicly, in place of the defaults below:
//   static std::string missing();  another reason to skip ("no openssl tool"), "" for none.
//   static Uploads prepare(const std::filesystem::path& files);  writes the suite's files into
//       `files` (kept for the suite) and names the objects (key, file) the store starts with.
//   static constexpr bool kStoreInEnvironment = true;  sets the store's variables() in the
//       process's environment for the suite, for code that finds the store there.
template <typename Suite>
class S3SuiteTest : public ::testing::Test {
 public:
  using Uploads = std::vector<std::pair<std::string, std::string>>;
  static std::string missing() { return ""; }
  static Uploads prepare(const std::filesystem::path& /*files*/) { return {}; }
  static constexpr bool kStoreInEnvironment = false;

 protected:
  static void SetUpTestSuite() {
    skip_reason_ = S3Server::why_unavailable();
    if (skip_reason_.empty()) skip_reason_ = Suite::missing();
    if (!skip_reason_.empty()) return;
    try {
      files_ = std::make_unique<ScratchDir>("s3_suite");
      server_ = std::make_unique<S3Server>(kS3TestBucket, Suite::prepare(files_->path()));
    } catch (const std::exception& error) {
      start_error_ = error.what();
      return;
    }
    if (!Suite::kStoreInEnvironment) return;
    for (const auto& [name, value] : server_->variables(files_->path())) {
      ::setenv(name.c_str(), value.c_str(), 1);
    }
  }
  static void TearDownTestSuite() {
    if (Suite::kStoreInEnvironment) {
      for (const char* name : kStoreVariables) ::unsetenv(name);
    }
    server_.reset();
    files_.reset();
  }

  void SetUp() override {
    if (!skip_reason_.empty()) GTEST_SKIP() << skip_reason_;
    ASSERT_TRUE(start_error_.empty()) << start_error_;
    server_->reset_stats();
  }

  // The suite's files (prepare's) and its store.
  static std::filesystem::path file(const std::string& name) { return *files_ / name; }
  static inline std::unique_ptr<ScratchDir> files_;
  static inline std::unique_ptr<S3Server> server_;

 private:
  static inline std::string skip_reason_;
  static inline std::string start_error_;
};

}  // namespace onnxzip::test_support

#endif  // ONNXZIP_TESTS_SUPPORT_S3_SERVER_H_
