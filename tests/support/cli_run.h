// Test support: runs the onnxzip tool built with the tests, as a shell would, and keeps what it
// printed, for the CLI tests that check output and exit status.
#ifndef ONNXZIP_TESTS_SUPPORT_CLI_RUN_H_
#define ONNXZIP_TESTS_SUPPORT_CLI_RUN_H_

#include <filesystem>
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

}  // namespace onnxzip::test_support

#endif  // ONNXZIP_TESTS_SUPPORT_CLI_RUN_H_
