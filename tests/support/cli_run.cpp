#include "support/cli_run.h"

#include <cstdint>

#include "support/external_tool.h"
#include "support/scratch_dir.h"

namespace onnxzip::test_support {
namespace {

std::string read_text(const std::filesystem::path& path) {
  const std::vector<std::uint8_t> bytes = read_file_bytes(path);
  return std::string(bytes.begin(), bytes.end());
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

}  // namespace onnxzip::test_support
