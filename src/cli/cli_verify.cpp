// onnxzip verify: is a model file what it should be? One line per problem, or JSON.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli_common.h"
#include "cli_output.h"
#include "cli_progress.h"
#include "cli_remote.h"
#include "onnxzip/archive.h"
#include "onnxzip/convert.h"
#include "onnxzip/integrity.h"
#include "onnxzip/internal/http_source.h"
#include "onnxzip/internal/json_text.h"

namespace onnxzip::cli {
namespace {

struct VerifyArgs {
  std::vector<std::string> files;
  InflateLimits limits;
  std::string public_key;
  bool json = false;
};

// One file's outcome: verify_model_file's report, or the error that kept it from being read.
struct FileOutcome {
  std::string file;  // As messages name it (a URL without its query).
  VerifyReport report;
  bool legacy = false;

  bool ok() const { return report.ok(); }
  // A layout finding (deflated, unaligned, folder entries...): another tool's ZIP.
  bool repackable() const {
    for (const VerifyFinding& finding : report.findings) {
      if (finding.kind == VerifyFinding::Kind::kLayout) return true;
    }
    return false;
  }
};

FileOutcome verify_file(const std::string& given, const VerifyArgs& args,
                        const std::optional<PublicKey>& public_key, const GlobalOptions& global) {
  FileOutcome outcome;
  // A URL is downloaded first (cli_remote.h) and checked as a local file; messages name it
  // without its query (a presigned URL's credentials).
  outcome.file = is_remote(given) ? display_url(given) : given;
  try {
    std::optional<Download> fetched;
    if (is_remote(given)) fetched = download(given, global, "downloading");
    const std::string path = fetched ? fetched->path : given;
    VerifyOptions options;
    options.source_name = fetched ? fetched->shown : "";  // The URL, not the download.
    options.public_key = public_key;
    options.public_key_term = "--public-key";
    options.limits = args.limits.zip_options();
    options.access = global.access();
    outcome.legacy = detect_format(path) != ModelFormat::kOnnxz;
    // Gone before the first line is printed.
    ProgressBar bar("verifying", global.quiet);
    options.progress = bar.callback();
    outcome.report = retry_while_changed([&] { return verify_model_file(path, options); });
    if (public_key && outcome.legacy) {
      VerifyFinding& finding = outcome.report.findings.emplace_back();
      finding.kind = VerifyFinding::Kind::kSignature;
      finding.place.file = outcome.file;
      finding.message = "a legacy .onnx model holds no signature (--public-key)";
    }
  } catch (const Error& e) {  // Missing, unreadable: a problem of this file, then the next.
    VerifyFinding& finding = outcome.report.findings.emplace_back();
    finding.place = e.with_context({.file = outcome.file}).context();
    finding.message = e.problem();
    outcome.report.checked = "nothing: the file cannot be read";
  }
  return outcome;
}

void print_text(const FileOutcome& outcome, const GlobalOptions& global) {
  for (const VerifyFinding& finding : outcome.report.findings) {
    std::printf("%s\n", printable(to_string(finding)).c_str());
  }
  if (global.quiet) return;
  if (outcome.ok()) {
    std::printf("%s: ok (%s)\n", printable(outcome.file).c_str(),
                printable(outcome.report.checked).c_str());
  } else if (outcome.repackable()) {
    std::fprintf(stderr,
                 "onnxzip: note: %s: a ZIP another tool made; 'onnxzip repack %s OUT.onnxz' "
                 "writes a conforming archive\n",
                 printable(outcome.file).c_str(), printable(outcome.file).c_str());
  }
}

void write_json(JsonText& json, const FileOutcome& outcome) {
  const VerifyReport& report = outcome.report;
  json.begin_object();
  json.key("file");
  json.string(outcome.file);
  json.key("format");
  json.string(outcome.legacy ? "onnx" : "onnxz");
  json.key("ok");
  json.boolean(report.ok());
  json.key("loadable");
  json.boolean(report.loadable());
  json.key("digests");
  json.string(to_string(report.digests));
  json.key("signature");
  json.string(to_string(report.signature));
  json.key("signature_key_id");
  json.string(report.signature_key_id);
  json.key("checked");
  json.string(report.checked);
  json.key("findings");
  json.begin_array();
  for (const VerifyFinding& finding : report.findings) {
    json.begin_object();
    json.key("severity");
    json.string(to_string(finding.severity));
    json.key("kind");
    json.string(to_string(finding.kind));
    json.key("entry");
    json.string(finding.entry);
    json.key("tensor");
    json.string(finding.tensor);
    json.key("offset");
    json.number(finding.offset);
    json.key("message");
    json.string(finding.message);
    json.key("line");
    json.string(to_string(finding));
    json.end_object();
  }
  json.end_array();
  json.end_object();
}

int run_verify(const VerifyArgs& args, const GlobalOptions& global) {
  std::optional<PublicKey> public_key;
  if (!args.public_key.empty()) public_key = PublicKey::load(args.public_key);
  int status = kExitOk;
  JsonText json;
  json.begin_array();
  for (const std::string& given : args.files) {
    const FileOutcome outcome = verify_file(given, args, public_key, global);
    if (!outcome.ok()) status = kExitFailure;
    if (args.json) {
      write_json(json, outcome);
    } else {
      print_text(outcome, global);
      std::fflush(stdout);
    }
  }
  json.end_array();
  if (args.json) std::fputs(std::move(json).finish().c_str(), stdout);
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
  sub->add_flag("--json", args->json,
                "Print a JSON array, one object per file: ok, loadable, the digests' and the "
                "signature's status, what was checked, and the findings (severity, kind, entry, "
                "tensor, offset, message)");
  sub->footer(
      "Prints one line per problem, 'FILE: <where>: <message>', or 'FILE: ok (<what was\n"
      "checked>)'. An .onnxz is checked against the whole format specification: ZIP structure,\n"
      "entry records, references between the model and its entries, alignment, CRC-32 of every\n"
      "entry. A legacy .onnx is parsed and its external data resolved and size-checked. Both\n"
      "get the payload check (every inline tensor's data matches its dims and type) and the\n"
      "ONNX IR rules: ir_version, a graph and opset imports present, no cycles, single\n"
      "assignment, nodes in topological order, unique names, every node's domain imported. An\n"
      "archive with __DIGESTS has every entry's SHA-256 checked against it; with --public-key\n"
      "its __SIGNATURE must verify with that key (onnxzip sign). A ZIP another tool made\n"
      "(deflated, unaligned) gets a note: 'onnxzip repack' makes it conform. Exit status 0\n"
      "when every file is valid, else 1.\n\n"
      "Examples:\n"
      "  onnxzip verify model.onnxz\n"
      "  onnxzip verify --quiet *.onnxz *.onnx || echo 'problems found'\n"
      "  onnxzip verify --json model.onnxz | python3 -m json.tool");
  return {sub, [args, &global] { return run_verify(*args, global); }};
}

}  // namespace onnxzip::cli
