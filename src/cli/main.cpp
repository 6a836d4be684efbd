// The onnxzip command-line tool: CLI11 setup and the exit-code policy. Prints and exits here,
// never in the library. Each command lives in its own cli_*.cpp.
//
// Exit codes: 0 success; 1 a runtime failure (one line "onnxzip: error: <message>" on standard
// error, the message naming the file and the problem; an input that shrinks under its mapping
// too: cli_signals.h) or problems found by verify; 2 a usage error (a one-line message and a
// pointer to --help).
#include <sys/resource.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "cli_common.h"
#include "cli_signals.h"
#include "onnxzip/error.h"

#ifndef ONNXZIP_VERSION
#define ONNXZIP_VERSION "unknown"
#endif

namespace {

using onnxzip::cli::Command;
using onnxzip::cli::kExitFailure;
using onnxzip::cli::kExitUsage;

int usage_error(const std::string& message) {
  std::fprintf(stderr, "onnxzip: error: %s\nRun with --help for more information.\n",
               message.c_str());
  return kExitUsage;
}

// Every mapped input file holds two descriptors while its tensors live (MappedFile's, and Boost's
// own), and a legacy model may have a data file per tensor: the soft limit (often 1024) goes up
// to the hard one, as the limit is meant to be raised by programs that need it.
void raise_open_file_limit() noexcept {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
}

int runtime_error(const std::string& message) {
  std::fprintf(stderr, "onnxzip: error: %s\n", message.c_str());
  return kExitFailure;
}

// The flags every command takes, and the examples that close --help.
void add_global_options(CLI::App& app, onnxzip::cli::GlobalOptions& global) {
  app.set_version_flag("--version", "onnxzip " ONNXZIP_VERSION);
  app.require_subcommand(1);
  // Global flags may also follow the command: `onnxzip convert a b --quiet`.
  app.fallthrough();
  app.add_flag("-q,--quiet", global.quiet,
               "No progress bar, no 'ok' lines, no notes: only results and errors");
  app.add_option("--header", global.headers,
                 "An extra request header for archives named by an http(s) URL, 'Name: value' "
                 "(e.g. 'Authorization: Bearer TOKEN'); may be given more than once; never "
                 "printed")
      ->type_name("HEADER");
  app.add_flag("--follow-symlinks", global.follow_symlinks,
               "An output path that is a symbolic link: replace the regular file it leads to "
               "(default: refuse). Anything else but a regular file is never replaced");
  app.add_flag("--no-mmap", global.no_mmap,
               "Read input files into memory instead of mapping them: for files that other "
               "programs may change or truncate while onnxzip reads them (network file systems "
               "too)");
  app.footer(
      "Examples:\n"
      "  onnxzip convert model.onnx model.onnxz\n"
      "  onnxzip info model.onnxz\n"
      "  onnxzip verify model.onnxz\n"
      "  onnxzip edit model.onnxz --set-metadata license=MIT\n"
      "Run 'onnxzip COMMAND --help' for a command's options.");
}

// CLI11 would report an unknown command as a missing one: the message for a first word (not a
// flag) that names no command, "" when it names one or there is none.
std::string unknown_command(int argc, char** argv, const std::vector<Command>& commands) {
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "--header") ++i;          // Its value is the next word.
    if (word.starts_with("-")) continue;  // A global flag.
    std::string names;
    for (const Command& command : commands) {
      if (command.app->get_name() == word) return "";
      names += (names.empty() ? "" : ", ") + command.app->get_name();
    }
    return "unknown command '" + onnxzip::cli::printable(word) + "' (the commands are " + names +
           ")";
  }
  return "";
}

// Runs the command that was parsed, under the exit-code policy.
int run_parsed_command(const std::vector<Command>& commands) {
  try {
    for (const Command& command : commands) {
      if (command.app->parsed()) {
        // The commands write nothing before their reads are done, so a run may be repeated.
        return onnxzip::cli::retry_while_changed([&] { return command.run(); });
      }
    }
    return usage_error("no command given");
  } catch (const onnxzip::cli::UsageError& e) {
    return usage_error(e.what());
  } catch (const onnxzip::Error& e) {
    // It names the file; the code is no word for users.
    return runtime_error(onnxzip::cli::in_tool_terms(e.message()));
  } catch (const std::bad_alloc&) {
    return runtime_error("out of memory");
  } catch (const std::exception& e) {
    return runtime_error(e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  onnxzip::cli::install_signal_handlers();
  raise_open_file_limit();
  CLI::App app{
      "onnxzip: the ONNX zip container (.onnxz).\n"
      "An .onnxz file is a ZIP archive holding an ONNX model whose weights are stored,\n"
      "64-byte aligned entries that runtimes can memory-map and use in place."};
  onnxzip::cli::GlobalOptions global;
  add_global_options(app, global);
  const std::vector<Command> commands = {
      onnxzip::cli::add_convert_command(app, global),
      onnxzip::cli::add_info_command(app, global),
      onnxzip::cli::add_verify_command(app, global),
      onnxzip::cli::add_extract_command(app, global),
      onnxzip::cli::add_view_command(app, global),
      onnxzip::cli::add_repack_command(app, global),
      onnxzip::cli::add_edit_command(app, global),
      onnxzip::cli::add_sign_command(app, global),
  };
  if (const std::string message = unknown_command(argc, argv, commands); !message.empty()) {
    return usage_error(message);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return usage_error(e.what());
  }
  return run_parsed_command(commands);
}
