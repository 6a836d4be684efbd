#include "support/nginx_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace onnxzip::test_support {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr const char* kNginx = "/usr/sbin/nginx";

// A port no one listens on now; nginx may still lose it to another process before it binds,
// which the constructor retries.
std::uint16_t free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("socket() failed");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    ::close(fd);
    throw std::runtime_error("cannot find a free port");
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

bool accepts_connections(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(port);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  ::close(fd);
  return ok;
}

std::string configuration(const fs::path& dir, const fs::path& root, std::uint16_t port) {
  std::ostringstream c;
  // As root, nginx's workers would become "nobody", who may not read the scratch folder.
  if (::geteuid() == 0) c << "user root;\n";
  c << "worker_processes 1;\n"
    << "daemon off;\n"
    << "master_process on;\n"
    << "pid " << (dir / "nginx.pid").string() << ";\n"
    << "error_log " << (dir / "error.log").string() << " warn;\n"
    << "events { worker_connections 256; }\n"
    << "http {\n"
    << "  log_format counting '$request_method $uri \"$http_range\" $status $body_bytes_sent';\n"
    << "  access_log " << (dir / "access.log").string() << " counting;\n"
    << "  client_body_temp_path " << (dir / "body").string() << ";\n"
    << "  proxy_temp_path " << (dir / "proxy").string() << ";\n"
    << "  fastcgi_temp_path " << (dir / "fastcgi").string() << ";\n"
    << "  uwsgi_temp_path " << (dir / "uwsgi").string() << ";\n"
    << "  scgi_temp_path " << (dir / "scgi").string() << ";\n"
    << "  types { application/octet-stream onnxz; }\n"
    << "  server {\n"
    << "    listen 127.0.0.1:" << port << ";\n"
    << "    location /files/ { alias " << root.string() << "/; }\n"
    << "    location /norange/ { alias " << root.string() << "/; max_ranges 0; }\n"
    << "    location /private/ {\n"
    << "      if ($http_authorization != \"Bearer secret\") { return 401; }\n"
    << "      alias " << root.string() << "/;\n"
    << "    }\n"
    << "    location /fail/ { return 503; }\n"
    << "  }\n"
    << "}\n";
  return c.str();
}

}  // namespace

bool NginxServer::available() { return ::access(kNginx, X_OK) == 0; }

NginxServer::NginxServer() : dir_("nginx") {
  root_ = dir_ / "root";
  log_ = dir_ / "access.log";
  fs::create_directories(root_);
  for (int attempt = 0; attempt < 5; ++attempt) {
    port_ = free_port();
    const fs::path config = dir_ / "nginx.conf";
    std::ofstream(config) << configuration(dir_.path(), root_, port_);
    const std::string prefix = dir_.path().string() + "/";
    const std::string startup_log = (dir_ / "startup.log").string();
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork() failed");
    if (pid_ == 0) {
      const int out = ::open(startup_log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (out >= 0) {
        ::dup2(out, 1);
        ::dup2(out, 2);
      }
      ::execl(kNginx, kNginx, "-p", prefix.c_str(), "-e", startup_log.c_str(), "-c", config.c_str(),
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;  // It failed (most likely the port was taken): try another.
        break;
      }
      if (accepts_connections(port_)) return;
      std::this_thread::sleep_for(10ms);
    }
    if (pid_ > 0) break;
  }
  std::ifstream startup(dir_ / "startup.log");
  std::stringstream text;
  text << startup.rdbuf();
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  throw std::runtime_error("nginx did not start: " + text.str());
}

NginxServer::~NginxServer() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);  // Fast shutdown; the master waits for its worker.
  int status = 0;
  for (int i = 0; i < 500; ++i) {
    if (::waitpid(pid_, &status, WNOHANG) == pid_) return;
    std::this_thread::sleep_for(10ms);
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, &status, 0);
}

std::string NginxServer::url(const std::string& path) const {
  return "http://127.0.0.1:" + std::to_string(port_) + path;
}

std::vector<ServedRequest> NginxServer::requests(std::size_t at_least) const {
  const auto read = [&] {
    std::vector<ServedRequest> all;
    std::ifstream in(log_);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      ServedRequest r;
      fields >> r.method >> r.uri;
      fields >> std::ws;
      std::getline(fields, r.range, '"');  // The opening quote.
      std::getline(fields, r.range, '"');
      fields >> r.status >> r.body_bytes;
      all.push_back(std::move(r));
    }
    all.erase(all.begin(),
              all.begin() + static_cast<std::ptrdiff_t>(std::min(forgotten_, all.size())));
    return all;
  };
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (read().size() < at_least && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  std::this_thread::sleep_for(30ms);  // Any request beyond those expected shows up too.
  return read();
}

void NginxServer::forget() { forgotten_ += requests().size(); }

FaultProxy::FaultProxy(const NginxServer& server) : dir_("fault_proxy") {
  const std::string script = std::string(ONNXZIP_TEST_DATA_DIR) + "/../support/fault_proxy.py";
  const std::string upstream = server.url("");
  const std::string port_file = (dir_ / "port").string();
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork() failed");
  if (pid_ == 0) {
    // Its tracebacks for connections the client dropped (the faults) are not the test's output.
    const int null = ::open("/dev/null", O_WRONLY);
    if (null >= 0) ::dup2(null, 2);
    ::execl("/usr/bin/python3", "python3", script.c_str(), upstream.c_str(), port_file.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(port_file);
    unsigned port = 0;
    if (in >> port) {
      port_ = static_cast<std::uint16_t>(port);
      return;
    }
    std::this_thread::sleep_for(10ms);
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  throw std::runtime_error("the fault proxy did not start");
}

FaultProxy::~FaultProxy() {
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
}

std::string FaultProxy::url(const std::string& fault, const std::string& name) const {
  return "http://127.0.0.1:" + std::to_string(port_) + "/" + fault + "/" + name;
}

}  // namespace onnxzip::test_support
