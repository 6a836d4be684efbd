// Test support: runs the onnxzip tool built with the tests, as a shell would, and keeps what it
// printed, for the CLI tests that check output and exit status.
#ifndef ONNXZIP_TESTS_SUPPORT_CLI_RUN_H_
#define ONNXZIP_TESTS_SUPPORT_CLI_RUN_H_

#include <cstdint>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace onnxzip::test_support {

struct CliRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// What gtest prints of a run when an expectation on it fails.
std::ostream& operator<<(std::ostream& os, const CliRun& run);

// Runs the tool (ONNXZIP_CLI_PATH) with `args` and no standard input; its standard output and
// error pass through files in `scratch`, removed afterwards.
CliRun run_cli(const std::filesystem::path& scratch, const std::vector<std::string>& args);

// A limit the tool runs under: setrlimit(resource, {bytes, bytes}) in the child, before exec.
struct ResourceLimit {
  int resource = 0;  // RLIMIT_AS, RLIMIT_DATA...
  std::uint64_t bytes = 0;
};

struct LimitedCliRun : CliRun {
  std::uint64_t max_rss = 0;    // Bytes (the child's ru_maxrss).
  std::uint64_t peak_anon = 0;  // Bytes: the largest RssAnon sampled while it ran.
};

// Runs the tool with `args` (no shell: fork and exec) under `limit` when one is given, with no
// standard input; its standard output and error pass through files in `scratch`, removed
// afterwards. Its RssAnon is sampled every 2 ms while it runs, for the record.
LimitedCliRun run_cli_limited(const std::filesystem::path& scratch,
                              const std::vector<std::string>& args,
                              std::optional<ResourceLimit> limit);

}  // namespace onnxzip::test_support

#endif  // ONNXZIP_TESTS_SUPPORT_CLI_RUN_H_
