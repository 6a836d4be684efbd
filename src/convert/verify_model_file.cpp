// verify_model_file: the one verification of a model file, for the CLI and the bindings alike.
#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "archive_internal.h"
#include "onnxzip/archive.h"
#include "onnxzip/convert.h"
#include "onnxzip/error.h"
#include "onnxzip/internal/mapped_file.h"
#include "onnxzip/ir_check.h"
#include "onnxzip/legacy.h"
#include "onnxzip/onnx_codec.h"
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

// detect_format's rule over bytes already read: a ZIP starts with a local header, or an empty
// one with its end record.
bool is_archive(const ByteSpan bytes) {
  const auto starts_with = [&](const std::string_view signature) {
    return bytes.size() >= signature.size() &&
           std::equal(signature.begin(), signature.end(), bytes.begin(),
                      [](char a, std::uint8_t b) { return static_cast<std::uint8_t>(a) == b; });
  };
  return starts_with(std::string_view("PK\x03\x04", 4)) ||
         starts_with(std::string_view("PK\x05\x06", 4));
}

VerifyReport verify_archive(const ByteSpan bytes, const VerifyOptions& options,
                            const std::string& source) {
  VerifyReport report = verify_bytes(bytes, options, source);
  try {
    // The model is all the IR rules need; verify above read every payload already.
    LoadOptions load_options;
    load_options.inflate_payloads = false;
    load_options.limits = options.limits;
    const Archive archive = Archive::from_bytes(bytes, kNoOwner, load_options, source);
    add_ir_problems(report, source, archive.model());
    report.checked += "; ONNX IR rules";
  } catch (const Error&) {
    if (report.loadable()) throw;  // verify and open disagree: a bug, not a finding.
  }
  return report;
}

// A legacy model in memory: its external data has no folder to be found in.
VerifyReport verify_legacy_bytes(const ByteSpan bytes, const VerifyOptions& options,
                                 const std::string& source) {
  VerifyReport report;
  std::optional<ModelProto> model;
  try {
    model = parse_model(bytes, options.parse, source);
  } catch (const Error& e) {
    const Error named = e.context().file.empty() ? e.with_context({.file = source}) : e;
    add(report, Severity::kError, Kind::kModel, named.context(), named.problem());
    report.checked = "legacy model, which does not parse";
    return report;
  }
  for_each_tensor(*model, [&](const TensorProto& tensor, const TensorSite& site) {
    const ErrorContext place{.file = source, .tensor = tensor_label(tensor, site.path)};
    if (tensor.data_location.value_or(0) == TensorProto::kExternal) {
      add(report, Severity::kError, Kind::kReference, place,
          "refers to external data, which a model given as bytes has no folder to hold: verify "
          "the model's file");
    } else if (const std::string problem = payload_problem(tensor); !problem.empty()) {
      add(report, Severity::kWarning, Kind::kModel, place, problem);
    }
  });
  add_ir_problems(report, source, *model);
  report.checked =
      "legacy model, payloads, ONNX IR rules; a legacy model holds no digests or signature";
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
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw Error(ErrorCode::kInvalidArgument, {.file = path.string()},
                "is a folder, not a model file");
  }
  // An archive is opened once: verify and the IR rules read the same mapping.
  const std::shared_ptr<const MappedFile> file =
      MappedFile::open(path, whole_file_access(options.access));
  if (is_archive(file->bytes())) {
    // As verify(path): under the readers' lock, which keeps an in-place edit (spec §9.6) out.
    const std::string shown = shown_name(path, options);
    return archive_detail::read_as_reader(
        *file, [&] { return verify_archive(file->bytes(), options, shown); });
  }
  return verify_legacy(path, options);
}

VerifyReport verify_model_bytes(const ByteSpan bytes, const VerifyOptions& options,
                                const std::string_view source_name) {
  const std::string source(source_name);
  return is_archive(bytes) ? verify_archive(bytes, options, source)
                           : verify_legacy_bytes(bytes, options, source);
}

}  // namespace onnxzip
