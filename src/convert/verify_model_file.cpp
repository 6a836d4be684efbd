// verify_model_file: the one verification of a model file, for the CLI and the bindings alike.
#include <optional>
#include <string>
#include <utility>

#include "onnxzip/archive.h"
#include "onnxzip/convert.h"
#include "onnxzip/error.h"
#include "onnxzip/ir_check.h"
#include "onnxzip/legacy.h"
#include "onnxzip/tensor.h"

namespace onnxzip {
namespace {

using Severity = VerifyFinding::Severity;
using Kind = VerifyFinding::Kind;

void add(VerifyReport& report, const Severity severity, Kind kind, ErrorContext place,
         std::string problem) {
  VerifyFinding finding;
  finding.severity = severity;
  finding.kind = kind;
  finding.place = std::move(place);
  finding.message = std::move(problem);
  report.findings.push_back(std::move(finding));
}

// What findings call the file: options.source_name, else its path.
std::string shown_name(const std::filesystem::path& path, const VerifyOptions& options) {
  return options.source_name.empty() ? path.string() : options.source_name;
}

void add_ir_problems(VerifyReport& report, const std::string& shown, const ModelProto& model) {
  for (const IrProblem& problem : check_ir(model)) {
    add(report, Severity::kWarning, Kind::kIr, {.file = shown}, to_string(problem));
  }
}

VerifyReport verify_archive(const std::filesystem::path& path, const VerifyOptions& options) {
  VerifyReport report = verify(path, options);
  try {
    // The model is all the IR rules need; verify above read every payload already.
    LoadOptions load_options;
    load_options.inflate_payloads = false;
    load_options.zip = options.zip;
    load_options.access = options.access;
    const Archive archive = Archive::open(path, load_options);
    add_ir_problems(report, shown_name(path, options), archive.model());
    report.checked += "; ONNX IR rules";
  } catch (const Error&) {
    if (report.loadable()) throw;  // verify and open disagree: a bug, not a finding.
  }
  return report;
}

VerifyReport verify_legacy(const std::filesystem::path& path, const VerifyOptions& options) {
  VerifyReport report;
  const std::string shown = shown_name(path, options);
  std::optional<ModelProto> model;
  LegacyReadOptions read;
  read.access = options.access;
  read.source_name = options.source_name;
  try {
    model = read_legacy_model(path, read);
  } catch (const Error& e) {
    // The reader names what it knows of the place; the file is the caller's name for it.
    const Error named = e.context().file.empty() ? e.with_context({.file = shown}) : e;
    // A reader error naming a data file is one of the references to it.
    add(report, Severity::kError, named.context().entry.empty() ? Kind::kModel : Kind::kReference,
        named.context(), named.problem());
    // The external data is broken; the graph may still be checked.
    LegacyReadOptions references_only = read;
    references_only.load_external_data = false;
    try {
      model = read_legacy_model(path, references_only);
    } catch (const Error&) {
      report.checked = "legacy model, which does not parse";
      return report;  // The finding above says why.
    }
  }
  // The payload rule verify() applies to an archive's inline tensors (spec §9.4 item 5); the
  // reader has checked the sizes of the external ones it loaded.
  for_each_tensor(*model, [&](const TensorProto& tensor, const TensorSite& site) {
    if (const std::string problem = payload_problem(tensor); !problem.empty()) {
      add(report, Severity::kWarning, Kind::kModel,
          {.file = shown, .tensor = tensor_label(tensor, site.path)}, problem);
    }
  });
  add_ir_problems(report, shown, *model);
  report.checked =
      "legacy model, external data, payloads, ONNX IR rules; a legacy model holds no digests or "
      "signature";
  return report;
}

}  // namespace

VerifyReport verify_model_file(const std::filesystem::path& path, const VerifyOptions& options) {
  return detect_format(path) == ModelFormat::kOnnxz ? verify_archive(path, options)
                                                    : verify_legacy(path, options);
}

}  // namespace onnxzip
