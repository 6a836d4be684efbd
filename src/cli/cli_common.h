// What every command of the onnxzip tool shares: the usage error, argument parsing (sizes,
// alignments, file names), printing untrusted text safely, and the global flags. Private to
// src/cli/.
#ifndef ONNXZIP_CLI_COMMON_H_
#define ONNXZIP_CLI_COMMON_H_

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "onnxzip/error.h"
#include "onnxzip/internal/mapped_file.h"
#include "onnxzip/internal/zip_reader.h"
#include "onnxzip/tensor.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace onnxzip::cli {

// Exit codes.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // A runtime failure, or problems found by verify.
inline constexpr int kExitUsage = 2;    // The command line is wrong.

// A command line that parses but makes no sense (a bad value, a flag that does not apply):
// reported like CLI11's own parse errors, exit code 2.
class UsageError final : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Flags of the main program that every command honours.
struct GlobalOptions {
  bool quiet = false;    // No progress bar, no "ok" lines, no notes.
  bool no_mmap = false;  // Read inputs into memory instead of mapping them (mapped_file.h).
  // An output path that is a symbolic link: replace the regular file it leads to (else refused).
  bool follow_symlinks = false;
  // Extra request headers for archives named by a URL ("Name: value"); never printed.
  std::vector<std::string> headers;

  FileAccess access() const noexcept { return no_mmap ? FileAccess::kRead : FileAccess::kMap; }
};

// One subcommand: its CLI11 App (owned by the parent) and what runs it once parsed. run()
// returns the exit code or throws (onnxzip::Error: exit 1, UsageError: exit 2).
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

// The SIZE syntax of --threshold, --max-file-size and --alignment, for --help.
inline constexpr std::string_view kSizeSyntax =
    "SIZE is a byte count: 1000, or with a unit: K, M, G, T or KiB, MiB, GiB, TiB (powers of "
    "1024), KB, MB, GB, TB (powers of 1000); case does not matter";

// Parses SIZE (see kSizeSyntax). UsageError naming `flag` for anything else, or a value that does
// not fit in 64 bits.
std::uint64_t parse_size(std::string_view text, std::string_view flag);

// A SIZE option: its text, and whether it was given at all (an empty value is not a size).
struct SizeOption {
  std::string text;
  const CLI::Option* option = nullptr;

  // nullopt when the option is absent; else parse_size (UsageError for a bad value).
  std::optional<std::uint64_t> value() const;
};

// Adds `--name SIZE` to `app`, bound to `size`.
void add_size_option(CLI::App& app, const std::string& name, SizeOption& size,
                     const std::string& description);

// --max-ratio and --max-inflated-size: the zip bomb limits on deflated entries
// (ZipReaderOptions), for every command that reads an archive.
struct InflateLimits {
  std::uint64_t max_ratio = ZipReaderOptions{}.max_compression_ratio;
  SizeOption max_inflated_size;

  // ZipReaderOptions with these limits (UsageError for a bad size).
  ZipReaderOptions zip_options() const;
};
void add_inflate_limit_options(CLI::App& app, InflateLimits& limits);

// --wait SECONDS of the commands that edit an archive in place: how long they wait for its lock
// (EditOptions::wait, SignOptions::wait; default kDefaultEditWait).
struct LockWait {
  std::optional<double> seconds;  // Not given: the library's default.
  // The duration (UsageError for a negative or non-finite number).
  std::chrono::milliseconds duration() const;
};
void add_wait_option(CLI::App& app, LockWait& wait);

// `value` must be a power of two in [min, max]: else UsageError naming `flag`.
void require_power_of_two(std::uint64_t value, std::uint64_t min, std::uint64_t max,
                          std::string_view flag);

// `name` must be a plain file name (no folder part, not "." or ".."): else UsageError.
void require_plain_file_name(std::string_view name, std::string_view flag);

// The length of the valid UTF-8 sequence of two to four bytes that starts `text` (shortest
// form, no surrogates, at most U+10FFFF), or 0 (for ASCII too).
std::size_t utf8_sequence_length(std::string_view text);

// Untrusted text (names and strings from a model) made safe for a terminal: valid UTF-8 is kept,
// control characters and invalid bytes become \xNN.
std::string printable(std::string_view text);

// "12.3 MiB" (or "123 bytes").
std::string human_bytes(std::uint64_t bytes);

// The error's message, naming `file` when the error names no file of its own (a thrower that
// knew the file said so in the error's context). Never what(), which starts with the code.
std::string with_file(const std::filesystem::path& file, const Error& error);
// "FILE: message", for a message that names no file (an IR problem's).
std::string with_file(const std::filesystem::path& file, std::string_view message);

// One note on standard error (unless --quiet) naming the tensors holding data that a write kept
// inline in `file` against the caller's wish for external data, grouped by reason, with the flag
// that moves each group out (`flags`: for the reasons a flag exists for; "" for none). Tensors
// under the threshold are expected there and not named.
struct KeptInlineFlags {
  std::string attribute;  // "--externalize-attributes"
  std::string sparse;     // "--externalize-sparse"
};
void note_kept_inline(const std::string& file, const std::vector<KeptInline>& kept,
                      const KeptInlineFlags& flags, const GlobalOptions& global);

// Error(kInvalidArgument) naming `file` and the fix ('onnxzip convert') when it is a legacy
// model, not an archive: for the commands that take an archive only.
void require_archive(const std::string& file);

// Registers each command under `app` (definitions in the cli_*.cpp files).
Command add_convert_command(CLI::App& app, const GlobalOptions& global);
Command add_repack_command(CLI::App& app, const GlobalOptions& global);
Command add_info_command(CLI::App& app, const GlobalOptions& global);
Command add_verify_command(CLI::App& app, const GlobalOptions& global);
Command add_extract_command(CLI::App& app, const GlobalOptions& global);
Command add_view_command(CLI::App& app, const GlobalOptions& global);
Command add_edit_command(CLI::App& app, const GlobalOptions& global);
Command add_sign_command(CLI::App& app, const GlobalOptions& global);

// f()'s result; when a file changed while f() read it (Error kChanged: an in-place edit
// overlapped the read), f() runs again after a pause, up to kChangedAttempts runs in all, and the
// last run's Error propagates. An edit holds the file only while it writes its tail. For reads
// that write nothing before they are done.
inline constexpr int kChangedAttempts = 4;
template <typename F>
decltype(auto) retry_while_changed(F&& f) {
  for (int attempt = 1;; ++attempt) {
    try {
      return f();
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kChanged || attempt == kChangedAttempts) throw;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20) * attempt);
  }
}

}  // namespace onnxzip::cli

#endif  // ONNXZIP_CLI_COMMON_H_
