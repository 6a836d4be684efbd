// onnxzip verify: is a model file what it should be? One line per problem.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli_common.h"
#include "cli_progress.h"
#include "cli_remote.h"
#include "onnxzip/archive.h"
#include "onnxzip/convert.h"
#include "onnxzip/integrity.h"

namespace onnxzip::cli {
namespace {

struct VerifyArgs {
  std::vector<std::string> files;
  InflateLimits limits;
  std::string public_key;
};

// The problems of the file at `path`, each a line "FILE: <where>: <message>":
// verify_model_file's findings, the same as the Python package's verify() returns.
std::vector<std::string> file_problems(const std::string& path, const InflateLimits& limits,
                                       const std::optional<PublicKey>& public_key,
                                       FileAccess access, bool quiet) {
  VerifyOptions options;
  options.public_key = public_key;
  options.zip = limits.zip_options();
  options.access = access;
  const VerifyReport report = [&] {
    // Gone before the first line is printed.
    ProgressBar bar("verifying", quiet);
    options.progress = bar.callback();
    return verify_model_file(path, options);
  }();
  std::vector<std::string> lines;
  for (const VerifyFinding& finding : report.findings) {
    lines.push_back(to_string(finding));
  }
  return lines;
}

int run_verify(const VerifyArgs& args, const GlobalOptions& global) {
  std::optional<PublicKey> public_key;
  if (!args.public_key.empty()) public_key = PublicKey::load(args.public_key);
  int status = kExitOk;
  for (const std::string& given : args.files) {
    std::vector<std::string> lines;
    // A URL is downloaded first (cli_remote.h) and checked as a local file; messages name it
    // without its query (a presigned URL's credentials).
    const std::string file = is_remote(given) ? display_url(given) : given;
    try {
      std::optional<Download> fetched;
      if (is_remote(given)) fetched = download(given, global, "downloading");
      const std::string path = fetched ? fetched->path : file;
      lines = retry_while_changed([&] {
        return file_problems(path, args.limits, public_key, global.access(), global.quiet);
      });
      if (public_key && detect_format(path) != ModelFormat::kOnnxz) {
        lines.push_back(with_file(file, "a legacy .onnx model holds no signature (--public-key)"));
      }
    } catch (const Error& e) {  // Missing, unreadable: a problem of this file, then the next.
      lines.push_back(with_file(file, e));
    }
    for (const std::string& line : lines) {
      std::printf("%s\n", printable(in_tool_terms(line)).c_str());
    }
    if (!lines.empty()) {
      status = kExitFailure;
    } else if (!global.quiet) {
      std::printf("%s: ok\n", printable(file).c_str());
    }
  }
  return status;
}

}  // namespace

Command add_verify_command(CLI::App& app, const GlobalOptions& global) {
  CLI::App* sub = app.add_subcommand(
      "verify", "Check .onnxz and .onnx files; one line per problem, exit status 1 if any");
  auto args = std::make_shared<VerifyArgs>();
  sub->add_option("FILE", args->files, "The .onnxz archives or legacy .onnx models to check")
      ->required();
  add_inflate_limit_options(*sub, args->limits);
  sub->add_option("--public-key", args->public_key,
                  "Also require a valid __SIGNATURE by this ECDSA P-256 public key (PEM)")
      ->type_name("PUBLIC.pem");
  sub->footer(
      "Prints one line per problem, 'FILE: <where>: <message>', or 'FILE: ok'. An .onnxz is\n"
      "checked against the whole format specification: ZIP structure, entry records,\n"
      "references between the model and its entries, alignment, CRC-32 of every entry. A\n"
      "legacy .onnx is parsed and its external data resolved and size-checked. Both get the\n"
      "payload check (every inline tensor's data matches its dims and type) and the ONNX IR\n"
      "rules: ir_version, a graph and opset imports present, no cycles, single assignment,\n"
      "nodes in topological order, unique names, every node's domain imported. An archive with\n"
      "__DIGESTS has every entry's SHA-256 checked against it; with --public-key its\n"
      "__SIGNATURE must verify with that key (onnxzip sign). Exit status 0 when every file is\n"
      "valid, else 1.\n\n"
      "Examples:\n"
      "  onnxzip verify model.onnxz\n"
      "  onnxzip verify --quiet *.onnxz *.onnx || echo 'problems found'");
  return {sub, [args, &global] { return run_verify(*args, global); }};
}

}  // namespace onnxzip::cli
