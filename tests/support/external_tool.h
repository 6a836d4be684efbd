// Test support: runs external programs (unzip, 7z, python's zipfile, zipalign, ziptool) the
// interop tests use as independent judges of the archives the library writes.
#ifndef ONNXZIP_TESTS_SUPPORT_EXTERNAL_TOOL_H_
#define ONNXZIP_TESTS_SUPPORT_EXTERNAL_TOOL_H_

#include <filesystem>
#include <optional>
#include <string>

namespace onnxzip::test_support {

// The executable `name` (an absolute path, or looked up in PATH), or nullopt when absent.
std::optional<std::filesystem::path> find_tool(const std::string& name);

struct ToolResult {
  int exit_code = -1;  // -1 when the program did not exit normally.
  std::string output;  // Standard output and standard error, interleaved.
};

// Runs `command` through /bin/sh; `command` must quote its own arguments (see shell_quote).
ToolResult run_tool(const std::string& command);

// `text` in single quotes, safe to paste into a shell command.
std::string shell_quote(const std::string& text);

}  // namespace onnxzip::test_support

#endif  // ONNXZIP_TESTS_SUPPORT_EXTERNAL_TOOL_H_
