// onnxzip verify: is a model file what it should be? One line per problem.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli_common.h"
#include "cli_progress.h"
#include "onnxzip/archive.h"
#include "onnxzip/integrity.h"
#include "onnxzip/ir_check.h"
#include "onnxzip/legacy.h"
#include "onnxzip/tensor.h"

namespace onnxzip::cli {
namespace {

struct VerifyArgs {
  std::vector<std::string> files;
  InflateLimits limits;
  std::string public_key;
};

// The problems of one file, each a line "FILE: <where>: <message>".
std::vector<std::string> archive_problems(const std::string& file, const InflateLimits& limits,
                                          const std::optional<PublicKey>& public_key,
                                          FileAccess access, bool quiet) {
  std::vector<std::string> lines;
  VerifyOptions verify_options;
  verify_options.public_key = public_key;
  verify_options.zip = limits.zip_options();
  verify_options.access = access;
  const VerifyReport report = [&] {
    // Gone before the first line is printed.
    ProgressBar bar("verifying", quiet);
    verify_options.progress = bar.callback();
    return verify(file, verify_options);
  }();
  verify_options.progress = nullptr;
  for (const VerifyFinding& finding : report.findings) {
    lines.push_back(with_file(file, finding.message));
  }
  // The IR rules need a model that opens; when it does not, the findings above say why.
  try {
    // The model is all the IR rules need; verify above read every payload already.
    LoadOptions load_options;
    load_options.inflate_payloads = false;
    load_options.zip = verify_options.zip;
    load_options.access = access;
    const Archive archive = Archive::open(file, load_options);
    for (const IrProblem& problem : check_ir(archive.model())) {
      lines.push_back(with_file(file, to_string(problem)));
    }
  } catch (const Error&) {
    if (report.loadable()) throw;  // verify and open disagree: a bug, not a finding.
  }
  return lines;
}

std::vector<std::string> legacy_problems(const std::string& file, FileAccess access) {
  std::vector<std::string> lines;
  std::optional<ModelProto> model;
  try {
    LegacyReadOptions options;
    options.access = access;
    model = read_legacy_model(file, options);
  } catch (const Error& e) {
    lines.push_back(with_file(file, e.message()));
    // The external data is broken; the graph may still be checked.
    LegacyReadOptions references_only;
    references_only.load_external_data = false;
    references_only.access = access;
    try {
      model = read_legacy_model(file, references_only);
    } catch (const Error&) {
      return lines;  // It does not even parse: the line above says so.
    }
  }
  // The payload rule verify() applies to an archive's inline tensors (spec §9.4 item 5); the
  // reader has checked the sizes of the external ones it loaded.
  for_each_tensor(*model, [&](const TensorProto& tensor, const TensorSite& site) {
    if (const std::string problem = payload_problem(tensor); !problem.empty()) {
      lines.push_back(with_file(file, tensor_label(tensor, site.path) + ": " + problem));
    }
  });
  for (const IrProblem& problem : check_ir(*model)) {
    lines.push_back(with_file(file, to_string(problem)));
  }
  return lines;
}

int run_verify(const VerifyArgs& args, const GlobalOptions& global) {
  std::optional<PublicKey> public_key;
  if (!args.public_key.empty()) public_key = PublicKey::load(args.public_key);
  int status = kExitOk;
  for (const std::string& file : args.files) {
    std::vector<std::string> lines;
    try {
      lines = detect_format(file) == ModelFormat::kOnnxz
                  ? archive_problems(file, args.limits, public_key, global.access(), global.quiet)
                  : legacy_problems(file, global.access());
      if (public_key && detect_format(file) != ModelFormat::kOnnxz) {
        lines.push_back(with_file(file, "a legacy .onnx model holds no signature (--public-key)"));
      }
    } catch (const Error& e) {  // Missing, unreadable: a problem of this file, then the next.
      lines.push_back(with_file(file, e.message()));
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
