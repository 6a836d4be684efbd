#include "support/cli_run.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>

#include "support/external_tool.h"
#include "support/scratch_dir.h"

namespace onnxzip::test_support {
namespace {

std::string read_text(const std::filesystem::path& path) {
  const std::vector<std::uint8_t> bytes = read_file_bytes(path);
  return std::string(bytes.begin(), bytes.end());
}

// The largest RssAnon of a process seen so far, sampled from /proc/PID/status.
void sample_anon(const std::string& status_path, std::uint64_t& peak) {
  std::ifstream in(status_path);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("RssAnon:")) {
      peak = std::max<std::uint64_t>(peak, std::stoull(line.substr(8)) * 1024);
    }
  }
}

}  // namespace

std::ostream& operator<<(std::ostream& os, const CliRun& run) {
  return os << "exit " << run.exit_code << "\n--- stdout\n" << run.out << "--- stderr\n" << run.err;
}

CliRun run_cli(const std::filesystem::path& scratch, const std::vector<std::string>& args) {
  std::string command = shell_quote(std::string(ONNXZIP_CLI_PATH));
  for (const std::string& arg : args) command += " " + shell_quote(arg);
  const std::filesystem::path out = scratch / "stdout.txt";
  const std::filesystem::path err = scratch / "stderr.txt";
  // Grouped, so that run_tool's own redirection of the shell's output does not apply to it.
  const ToolResult result = run_tool("{ " + command + " </dev/null >" + shell_quote(out.string()) +
                                     " 2>" + shell_quote(err.string()) + "; }");
  CliRun run{result.exit_code, read_text(out), read_text(err)};
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return run;
}

LimitedCliRun run_cli_limited(const std::filesystem::path& scratch,
                              const std::vector<std::string>& args,
                              std::optional<ResourceLimit> limit) {
  const std::string out_path = (scratch / "stdout.txt").string();
  const std::string err_path = (scratch / "stderr.txt").string();
  std::vector<std::string> argv_strings = {std::string(ONNXZIP_CLI_PATH)};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  const rlimit bound{limit ? limit->bytes : 0, limit ? limit->bytes : 0};
  const pid_t pid = ::fork();
  if (pid == 0) {
    // Only async-signal-safe calls between fork and exec.
    const int in = ::open("/dev/null", O_RDONLY);
    const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || out < 0 || err < 0 || ::dup2(in, 0) < 0 || ::dup2(out, 1) < 0 ||
        ::dup2(err, 2) < 0 || (limit && ::setrlimit(limit->resource, &bound) != 0)) {
      ::_exit(126);
    }
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  LimitedCliRun run;
  if (pid < 0) return run;
  int status = 0;
  rusage usage{};
  const std::string status_path = "/proc/" + std::to_string(pid) + "/status";
  pid_t done = 0;
  while ((done = ::wait4(pid, &status, WNOHANG, &usage)) == 0) {
    sample_anon(status_path, run.peak_anon);
    ::usleep(2000);
  }
  if (done == pid && WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
  run.max_rss = static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;
  run.out = read_text(out_path);
  run.err = read_text(err_path);
  std::filesystem::remove(out_path);
  std::filesystem::remove(err_path);
  return run;
}

}  // namespace onnxzip::test_support
