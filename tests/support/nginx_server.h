// Test support: a real HTTP server for the remote-archive tests -- nginx (Debian nginx-light),
// started as a child process on 127.0.0.1 with an ephemeral port, with its own configuration, logs
// and temporary folders in a scratch folder, stopped (and waited for) by the destructor. No root,
// no system service: tests running in parallel each get their own server.
//
// It serves the scratch folder's files under /files/ and these places for faults:
//   /norange/NAME   the same files, Range ignored (200 with the whole file: max_ranges 0);
//   /private/NAME   the same files, only with "Authorization: Bearer secret" (else 401);
//   /fail/NAME      503 always.
// Its access log (method, URI, Range header, status, body bytes) counts the requests it served.
#ifndef ONNXZIP_TESTS_SUPPORT_NGINX_SERVER_H_
#define ONNXZIP_TESTS_SUPPORT_NGINX_SERVER_H_

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "support/scratch_dir.h"

namespace onnxzip::test_support {

// One line of the access log.
struct ServedRequest {
  std::string method;
  std::string uri;
  std::string range;  // The Range header, "-" when there was none.
  int status = 0;
  std::uint64_t body_bytes = 0;
};

class NginxServer final {
 public:
  // Whether nginx is installed (tests skip without it).
  static bool available();

  NginxServer();  // Starts it; throws std::runtime_error when it does not come up.
  ~NginxServer();
  NginxServer(const NginxServer&) = delete;
  NginxServer& operator=(const NginxServer&) = delete;

  // The folder served under /files/.
  const std::filesystem::path& root() const noexcept { return root_; }
  // "http://127.0.0.1:PORT" + path (path starting with '/').
  std::string url(const std::string& path) const;
  // url("/files/" + name)
  std::string file_url(const std::string& name) const { return url("/files/" + name); }

  // The requests logged since start (or since the last forget()): waits until at least
  // `at_least` are logged (nginx logs a request just after answering it), then a little longer
  // for any more.
  std::vector<ServedRequest> requests(std::size_t at_least = 0) const;
  // Forgets the requests logged so far (requests() then counts from here).
  void forget();

 private:
  ScratchDir dir_;
  std::filesystem::path root_;
  std::filesystem::path log_;
  std::uint16_t port_ = 0;
  pid_t pid_ = -1;
  std::size_t forgotten_ = 0;
};

// tests/support/fault_proxy.py in front of a server: url("/FAULT/NAME") answers with the fault
// (see the script) what the server answers for /files/NAME. Started by the constructor, killed
// by the destructor.
class FaultProxy final {
 public:
  explicit FaultProxy(const NginxServer& server);
  ~FaultProxy();
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  std::string url(const std::string& fault, const std::string& name) const;

 private:
  ScratchDir dir_;
  std::uint16_t port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace onnxzip::test_support

#endif  // ONNXZIP_TESTS_SUPPORT_NGINX_SERVER_H_
