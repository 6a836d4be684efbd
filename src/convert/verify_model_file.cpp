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

void add(VerifyReport& report, const Severity severity, ErrorContext place, std::string problem) {
  VerifyFinding finding;
  finding.severity = severity;
  finding.place = std::move(place);
  finding.message = std::move(problem);
  report.findings.push_back(std::move(finding));
}

void add_ir_problems(VerifyReport& report, const std::filesystem::path& path,
                     const ModelProto& model) {
  for (const IrProblem& problem : check_ir(model)) {
    add(report, Severity::kWarning, {.file = path.string()}, to_string(problem));
  }
}

VerifyReport verify_archive(const std::filesystem::path& path, const VerifyOptions& options) {
  VerifyReport report = verify(path, options);
  try {
    // The model is all the IR rules need; verify above read every payload already.
    LoadOptions load_options;
    load_options.inflate_payloads = false;
    load_options.limits = options.limits;
    load_options.access = options.access;
    const Archive archive = Archive::open(path, load_options);
    add_ir_problems(report, path, archive.model());
  } catch (const Error&) {
    if (report.loadable()) throw;  // verify and open disagree: a bug, not a finding.
  }
  return report;
}

VerifyReport verify_legacy(const std::filesystem::path& path, const VerifyOptions& options) {
  VerifyReport report;
  std::optional<ModelProto> model;
  try {
    LegacyReadOptions read;
    read.access = options.access;
    model = read_legacy_model(path, read);
  } catch (const Error& e) {
    // The reader names what it knows of the place; the file is the caller's name for it.
    const Error named = e.context().file.empty() ? e.with_context({.file = path.string()}) : e;
    add(report, Severity::kError, named.context(), named.problem());
    // The external data is broken; the graph may still be checked.
    LegacyReadOptions references_only;
    references_only.load_external_data = false;
    references_only.access = options.access;
    try {
      model = read_legacy_model(path, references_only);
    } catch (const Error&) {
      return report;  // It does not even parse: the finding above says so.
    }
  }
  // The payload rule verify() applies to an archive's inline tensors (spec §9.4 item 5); the
  // reader has checked the sizes of the external ones it loaded.
  for_each_tensor(*model, [&](const TensorProto& tensor, const TensorSite& site) {
    if (const std::string problem = payload_problem(tensor); !problem.empty()) {
      add(report, Severity::kWarning,
          {.file = path.string(), .tensor = tensor_label(tensor, site.path)}, problem);
    }
  });
  add_ir_problems(report, path, *model);
  return report;
}

}  // namespace

VerifyReport verify_model_file(const std::filesystem::path& path, const VerifyOptions& options) {
  return detect_format(path) == ModelFormat::kOnnxz ? verify_archive(path, options)
                                                    : verify_legacy(path, options);
}

}  // namespace onnxzip
