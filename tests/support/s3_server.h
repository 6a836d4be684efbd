// Test support: an S3 store on 127.0.0.1 for the object-storage tests -- moto's server with
// signature checking on, behind a counting and fault-injecting proxy (tests/support/s3_server.py),
// started as a child process and killed by the destructor. moto is not a Debian package: the
// tests skip where no Python has it (S3Server::python(), with the reason).
#ifndef ONNXZIP_TESTS_SUPPORT_S3_SERVER_H_
#define ONNXZIP_TESTS_SUPPORT_S3_SERVER_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "support/scratch_dir.h"

namespace onnxzip::test_support {

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

}  // namespace onnxzip::test_support

#endif  // ONNXZIP_TESTS_SUPPORT_S3_SERVER_H_
