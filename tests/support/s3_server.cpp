#include "support/s3_server.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "onnxzip/internal/http_source.h"
#include "support/external_tool.h"

namespace onnxzip::test_support {
namespace {

using namespace std::chrono_literals;

std::string control(const std::string& endpoint, const std::string& method,
                    const std::string& path) {
  const ToolResult result =
      run_tool("curl -sS -X " + method + " " + shell_quote(endpoint + path) + " 2>&1");
  if (result.exit_code != 0) throw std::runtime_error("the S3 test proxy: " + result.output);
  return result.output;
}

// `text` as a query value: every byte but unreserved ones as %XX.
std::string percent_encoded(const std::string& text) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (std::isalnum(byte) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += c;
    } else {
      out += '%';
      out += kHex[byte >> 4];
      out += kHex[byte & 15];
    }
  }
  return out;
}

}  // namespace

std::optional<std::string> S3Server::python() {
  std::vector<std::string> candidates;
  if (const char* chosen = std::getenv("ONNXZIP_MOTO_PYTHON")) candidates.emplace_back(chosen);
  candidates.emplace_back("python3");
  if (const char* home = std::getenv("HOME")) {
    candidates.push_back(std::string(home) + "/.pyenv/shims/python3");
  }
  candidates.emplace_back("/root/.pyenv/shims/python3");
  for (const std::string& candidate : candidates) {
    if (run_tool(shell_quote(candidate) + " -c 'import moto.server, boto3' >/dev/null 2>&1")
            .exit_code == 0) {
      return candidate;
    }
  }
  return std::nullopt;
}

std::string S3Server::why_unavailable() {
  if (!http_available()) return "built without libcurl";
  if (!python()) return "no Python with moto 5 and boto3 (pip install 'moto[server]' boto3)";
  return "";
}

S3Server::S3Server(const std::string& bucket,
                   const std::vector<std::pair<std::string, std::string>>& uploads)
    : dir_("s3_server") {
  const std::optional<std::string> interpreter = python();
  if (!interpreter) throw std::runtime_error("no Python with moto and boto3");
  const std::string script = std::string(ONNXZIP_TEST_DATA_DIR) + "/../support/s3_server.py";
  const std::string state_file = (dir_ / "state.json").string();
  std::vector<std::string> arguments = {*interpreter, script, state_file, bucket};
  for (const auto& [key, path] : uploads) arguments.push_back(key + "=" + path);
  const std::string log = (dir_ / "server.log").string();
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork() failed");
  if (pid_ == 0) {
    const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (out >= 0) {
      ::dup2(out, 1);
      ::dup2(out, 2);
    }
    std::vector<char*> argv;
    for (std::string& argument : arguments) argv.push_back(argument.data());
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  // moto imports slowly, more so with both cores busy.
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(state_file);
    std::string line;
    if (std::getline(in, line) && !line.empty()) {
      const nlohmann::json state = nlohmann::json::parse(line);
      endpoint_ = state["endpoint"];
      access_key_id_ = state["access_key_id"];
      secret_access_key_ = state["secret_access_key"];
      return;
    }
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      std::ifstream log_in(log);
      std::ostringstream text;
      text << log_in.rdbuf();
      throw std::runtime_error("the S3 test server stopped: " + text.str());
    }
    std::this_thread::sleep_for(20ms);
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  throw std::runtime_error("the S3 test server did not start");
}

S3Server::~S3Server() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

s3::Config S3Server::config(const std::string& secret) const {
  return s3::Config{
      .credentials = {access_key_id_, secret.empty() ? secret_access_key_ : secret, ""},
      .region = "us-east-1",
      .endpoint = endpoint_};
}

S3Options S3Server::options() const {
  return S3Options{.credentials = S3Credentials{access_key_id_, secret_access_key_, ""},
                   .region = "us-east-1",
                   .endpoint_url = endpoint_};
}

std::vector<std::pair<std::string, std::string>> S3Server::variables(
    const std::filesystem::path& dir, const std::string& secret) const {
  const std::string none = (dir / "none").string();
  const std::string values[] = {access_key_id_, secret.empty() ? secret_access_key_ : secret,
                                endpoint_,      "us-east-1",
                                none,           none};
  static_assert(std::size(values) == std::size(kStoreVariables));
  std::vector<std::pair<std::string, std::string>> out;
  for (std::size_t i = 0; i < std::size(values); ++i)
    out.emplace_back(kStoreVariables[i], values[i]);
  return out;
}

s3::Environment S3Server::environment(const std::filesystem::path& home,
                                      const std::string& secret) const {
  std::map<std::string, std::string, std::less<>> table;
  for (auto& [name, value] : variables(home, secret)) table.emplace(name, value);
  table.emplace("HOME", home.string());
  return [table = std::move(table)](std::string_view name) -> std::optional<std::string> {
    const auto found = table.find(name);
    if (found == table.end()) return std::nullopt;
    return found->second;
  };
}

S3ProxyStats S3Server::stats() const {
  const nlohmann::json json = nlohmann::json::parse(control(endpoint_, "GET", "/__proxy/stats"));
  S3ProxyStats out;
  out.requests = json["requests"];
  out.bytes = json["bytes"];
  out.received = json.value("received", std::uint64_t{0});
  for (const nlohmann::json& entry : json["log"]) {
    out.requests_seen.push_back(entry["method"].get<std::string>() + " " +
                                entry["path"].get<std::string>() + " " +
                                entry["range"].get<std::string>());
    out.bytes_received.push_back(entry.value("received", std::uint64_t{0}));
    out.log.push_back({entry.value("op", ""), entry.value("if_match", ""),
                       entry.value("copy_source_range", ""),
                       entry.value("copy_source_if_match", "")});
  }
  return out;
}

void S3Server::reset_stats() const { control(endpoint_, "POST", "/__proxy/reset"); }

void S3Server::inject(const std::string& kind, int count, const std::string& operation) const {
  control(endpoint_, "POST",
          "/__proxy/fault?kind=" + kind + "&count=" + std::to_string(count) +
              (operation.empty() ? "" : "&op=" + operation));
}

void S3Server::put(const std::string& key, const std::string& file) const {
  control(endpoint_, "POST",
          "/__proxy/put?key=" + percent_encoded(key) + "&path=" + percent_encoded(file));
}

void S3Server::get(const std::string& key, const std::string& file) const {
  control(endpoint_, "POST",
          "/__proxy/get?key=" + percent_encoded(key) + "&path=" + percent_encoded(file));
}

std::vector<std::string> S3Server::pending_uploads() const {
  return nlohmann::json::parse(control(endpoint_, "GET", "/__proxy/uploads"))
      .get<std::vector<std::string>>();
}

}  // namespace onnxzip::test_support
