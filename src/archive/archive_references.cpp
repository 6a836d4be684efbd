// Tensor references and the model entry: the rules of spec §6.1, §7.2 and §9.4 that the archive
// writer, loader, verifier and view writer share.
#include <charconv>
#include <cstdio>
#include <iterator>
#include <memory>
#include <optional>
#include <system_error>
#include <utility>

#include "archive_internal.h"
#include "message_text.h"
#include "onnxzip/internal/zip_reader.h"
#include "onnxzip/tensor.h"
#include "zip_writer.h"

namespace onnxzip::archive_detail {
namespace {

using Severity = VerifyFinding::Severity;
using detail::ExternalData;

std::string entry_label(std::string_view location) { return "entry " + quote(location); }

// A reference's fault and the code a reader gives it (the writers refuse every fault as the
// caller's kInvalidArgument).
struct Fault {
  ErrorCode code;
  std::string problem;
};

// Spec §7.2 item 2: an external tensor carries no payload of its own.
std::string carried_payload(const TensorProto& tensor) {
  if (tensor.raw_data) return "an external tensor also carries raw_data";
  if (const std::string_view field = present_typed_field(tensor); !field.empty()) {
    return "an external tensor also carries " + std::string(field);
  }
  return {};
}

// Spec §7.2 item 5 and §7.3: a type with a known fixed element size, and dims x element size
// equal to the entry's size.
std::optional<Fault> size_fault(const TensorProto& tensor, std::uint64_t entry_size) {
  const std::int32_t data_type = tensor.data_type.value_or(TensorProto::kUndefined);
  if (data_type == TensorProto::kString || data_type == TensorProto::kUndefined) {
    return Fault{ErrorCode::kCorrupt,
                 std::string(data_type == TensorProto::kString ? "a STRING" : "an UNDEFINED") +
                     " tensor cannot be external (spec §7.2 item 5)"};
  }
  if (element_bits(data_type) == 0) {
    return Fault{ErrorCode::kUnsupported,
                 "data type " + std::to_string(data_type) + " is unknown to this library"};
  }
  std::uint64_t expected = 0;
  try {
    expected = tensor_byte_size(tensor.dims, data_type, "dims");
  } catch (const Error& e) {
    return Fault{e.code(), e.message()};  // Names the dims; the caller names the tensor.
  }
  if (expected != entry_size) {
    return Fault{ErrorCode::kCorrupt, "the entry holds " + std::to_string(entry_size) +
                                          " bytes, but dims x element size of " +
                                          std::string(data_type_name(data_type)) + " is " +
                                          std::to_string(expected) + " (spec §7.3)"};
  }
  return std::nullopt;
}

// What spec §7.2 items 3 and 4 and §9.4 items 3 and 4 say of the keys besides the location:
// `errors` a reader must refuse, `findings` it accepts (the writers refuse the other keys too).
struct KeyReview {
  std::vector<std::string> errors;
  std::vector<std::string> findings;
};

// For a reference in which reference_fault found nothing (its numbers are numbers).
KeyReview review_keys(const ExternalData& data, std::uint64_t entry_size) {
  KeyReview review;
  if (!data.length) {
    review.findings.push_back("external_data has no 'length' (spec §7.2 item 3)");
  } else if (*data.length->value != entry_size) {
    review.errors.push_back("length " + quote(data.length->text) + " differs from the entry's " +
                            std::to_string(entry_size) + " bytes");
  } else if (!data.length->canonical) {
    review.findings.push_back("length " + quote(data.length->text) +
                              " is not in canonical decimal form (spec §7.2)");
  }
  if (data.offset && *data.offset->value != 0) {
    review.errors.push_back("offset " + quote(data.offset->text) +
                            ": a payload starts at its entry's first byte, so only offset 0 is "
                            "allowed (spec §7.2 item 4, §9.4 item 3)");
  } else if (data.offset) {
    review.findings.push_back(
        "an 'offset' key (of 0) is not part of a canonical reference (spec §9.4 item 4)");
  }
  for (const std::string_view key : data.other_keys) review.findings.push_back(other_key(key));
  const auto& keys = data.keys;
  if (data.length && keys.size() >= 2 &&
      (keys[0].key != kLocationKey || keys[1].key != kLengthKey)) {
    review.findings.push_back(
        "external_data keys are not in the order location, length (spec §7.2 item 3)");
  }
  return review;
}

}  // namespace

std::string other_key(std::string_view key) {
  return "external_data key " + quote(key) +
         " is not part of an .onnxz reference (spec §7.2 item 4, §9.4 item 4)";
}

std::string location_problem(std::string_view location) {
  // The path-like forms first, so the message says what the location was trying to be.
  if (location.empty()) return "is empty";
  // ONNX Runtime's "*/_ORT_MEM_ADDR_/*" marker; the bare word is a valid entry name.
  if (location.find("/_ORT_MEM_ADDR_/") != std::string_view::npos) {
    return "is ONNX Runtime's in-memory address marker (_ORT_MEM_ADDR_), not an entry";
  }
  if (location.front() == '#') return "starts with '#' (special external data), not an entry";
  const char first = location.front();
  const bool drive = location.size() >= 2 && location[1] == ':' && detail::is_ascii_letter(first);
  if (first == '/' || first == '\\' || drive) return "is an absolute path, not an entry";
  std::size_t start = 0;
  while (start <= location.size()) {
    const std::size_t end = std::min(location.find_first_of("/\\", start), location.size());
    if (location.substr(start, end - start) == "..") {
      return "is a path out of the archive ('..'), not an entry";
    }
    start = end + 1;
  }
  if (location.find_first_of("/\\") != std::string_view::npos) {
    return "is a path, not an entry name";
  }
  if (location.starts_with("__")) return "is a reserved name (spec §6.2), not a payload entry";
  const std::string problem = entry_name_problem(location, EntryNameKind::kPayload);
  if (!problem.empty()) return "is not a payload entry name (spec §6.1): " + problem;
  return {};
}

TensorProto make_reference(const TensorProto& tensor, std::string_view location,
                           std::uint64_t length) {
  TensorProto reference = tensor_without_data(tensor);
  TensorRef{std::string(location), length}.apply_to(reference);
  return reference;
}

bool is_canonical_reference(const TensorProto& tensor, std::string_view location,
                            std::uint64_t length) {
  if (tensor.data_location != TensorProto::kExternal || tensor.raw_data ||
      !present_typed_field(tensor).empty() || tensor.external_data.size() != 2) {
    return false;
  }
  const StringStringEntryProto& where = tensor.external_data[0];
  const StringStringEntryProto& size = tensor.external_data[1];
  if (!where.unknown_fields.empty() || !size.unknown_fields.empty() || !where.key || !where.value ||
      !size.key || !size.value) {
    return false;
  }
  char digits[24];
  const auto [end, error] = std::to_chars(std::begin(digits), std::end(digits), length);
  return error == std::errc() && *where.key == kLocationKey && *where.value == location &&
         *size.key == kLengthKey && *size.value == std::string_view(digits, end - digits);
}

std::size_t PayloadIndex::add(std::string location, std::uint64_t size) {
  const std::size_t index = entries_.size();
  by_location_.emplace(location, index);
  entries_.push_back({std::move(location), size});
  return index;
}

std::size_t PayloadIndex::find(std::string_view location) const {
  const auto found = by_location_.find(location);
  return found == by_location_.end() ? npos : found->second;
}

std::size_t check_writer_reference(const TensorProto& tensor, std::string_view site,
                                   const PayloadIndex& index, const std::string& source,
                                   std::string_view unknown_location) {
  // Messages are built only on failure: a model may hold very many tensors.
  ErrorContext entry_place;  // Set once the entry is known.
  const auto fail = [&](const std::string& problem) {
    ErrorContext place = tensor_place(tensor, site);
    place.file = source;
    place.entry = entry_place.entry;
    place.entry_name = entry_place.entry_name;
    throw Error(ErrorCode::kInvalidArgument, std::move(place), problem);
  };
  const ExternalData data = detail::read_external_data(tensor);
  if (const std::string fault = detail::reference_fault(data); !fault.empty()) fail(fault);
  const std::string_view location = *data.location;
  // Looked up first: a location the index lacks gets the caller's reason (legacy external data
  // not loaded, say), whatever its name.
  const std::size_t found = index.find(location);
  if (found == PayloadIndex::npos) {
    fail("refers to external data " + quote(location) + ", " + std::string(unknown_location));
  }
  if (const std::string problem = location_problem(location); !problem.empty()) {
    fail("the location " + quote(location) + " " + problem + " (spec §6.1, §9.4 item 3)");
  }
  const PayloadIndex::Entry& entry = index.entries()[found];
  const auto fail_at_entry = [&](const std::string& problem) {
    entry_place.entry = entry_label(entry.location);
    entry_place.entry_name = std::string(entry.location);
    fail(problem);
  };
  if (const std::string problem = carried_payload(tensor); !problem.empty()) {
    fail_at_entry(problem);
  }
  if (const std::optional<Fault> fault = size_fault(tensor, entry.size)) {
    fail_at_entry(fault->problem);
  }
  // The writers accept the findings a reader accepts, since they write the canonical form
  // anyway, except keys that have no place in an .onnxz reference at all.
  const KeyReview review = review_keys(data, entry.size);
  if (!review.errors.empty()) fail_at_entry(review.errors.front());
  if (!data.other_keys.empty()) fail_at_entry(other_key(data.other_keys.front()));
  return found;
}

const ZipEntry* find_model_entry(const ZipReader& zip, const IssueSink& report) {
  const std::string name(kModelEntryName);
  const ZipEntry* model = zip.find(kModelEntryName);
  if (model == nullptr) {
    report({.severity = Severity::kError,
            .entry = name,
            .problem =
                "not an .onnxz archive: no entry named " + quote(name) + " (spec §9.4 item 1)"});
    return nullptr;
  }
  const std::vector<ZipEntry>& entries = zip.entries();
  if (model->index + 1 != entries.size()) {
    const ZipEntry& after = entries[model->index + 1];
    report({.severity = Severity::kError,
            .entry = name,
            .offset = model->local_header_offset,
            .problem = "not an .onnxz archive: entry " + quote(name) + " at offset " +
                       std::to_string(model->local_header_offset) +
                       " is not the last entry: entry " + quote(after.name) +
                       " follows at offset " + std::to_string(after.local_header_offset) +
                       " (spec §2.4, §9.4 item 1)"});
  }
  if (model->central_index + 1 != entries.size()) {
    report({.severity = Severity::kError,
            .entry = name,
            .offset = model->central_header_offset,
            .problem = "not an .onnxz archive: the central directory record of entry " +
                       quote(name) + " at offset " + std::to_string(model->central_header_offset) +
                       " is not the last one (spec §2.4, §9.4 item 1)"});
  }
  return model;
}

namespace {

// check_reference's reporting: each issue names the tensor, and the entry once it is known.
class ReferenceReport final {
 public:
  // The tensor's label is made only when there is something to report: opening an archive
  // checks every reference, and nearly all of them pass.
  ReferenceReport(const TensorProto& tensor, std::string_view site, const IssueSink& report)
      : tensor_(tensor), site_(site), report_(report) {}

  void at_entry(const ZipEntry& entry) { entry_ = &entry; }
  void error(ErrorCode code, std::string problem) {
    failed_ = true;
    issue(Severity::kError, code, std::move(problem));
  }
  void warning(std::string problem) {
    issue(Severity::kWarning, ErrorCode::kCorrupt, std::move(problem));
  }
  bool failed() const noexcept { return failed_; }

 private:
  void issue(Severity severity, ErrorCode code, std::string problem) {
    const std::string entry_name = entry_ != nullptr ? entry_->name : std::string();
    ErrorContext place = tensor_place(tensor_, site_);
    if (entry_ != nullptr) {
      place.entry = entry_label(entry_name);
      place.entry_name = entry_name;
      place.offset = entry_->local_header_offset;
    }
    report_({.severity = severity,
             .code = code,
             .entry = entry_name,
             .tensor = place.tensor,
             .offset = entry_ != nullptr ? entry_->local_header_offset : 0,
             .place = std::move(place),
             .problem = std::move(problem)});
  }

  const TensorProto& tensor_;
  std::string_view site_;
  const IssueSink& report_;
  const ZipEntry* entry_ = nullptr;
  bool failed_ = false;
};

// Spec §9.4 item 3, first part: one location, a payload entry name, naming an entry.
const ZipEntry* resolve_location(const ExternalData& data, const ZipReader& zip,
                                 ReferenceReport& report) {
  if (const std::string fault = detail::reference_fault(data); !fault.empty()) {
    report.error(ErrorCode::kCorrupt, fault);
    return nullptr;
  }
  if (const std::string problem = location_problem(*data.location); !problem.empty()) {
    report.error(ErrorCode::kCorrupt,
                 "the location " + quote(*data.location) + " " + problem + " (spec §9.4 item 3)");
    return nullptr;
  }
  const ZipEntry* entry = zip.find(*data.location);
  if (entry == nullptr) {
    report.error(ErrorCode::kCorrupt,
                 "the location " + quote(*data.location) + " names no entry of the archive");
  }
  return entry;
}

}  // namespace

const ZipEntry* check_reference(const TensorProto& tensor, std::string_view site,
                                const ZipReader& zip, const IssueSink& sink) {
  ReferenceReport report(tensor, site, sink);
  const ExternalData data = detail::read_external_data(tensor);
  const ZipEntry* entry = resolve_location(data, zip, report);
  if (entry == nullptr) return nullptr;
  report.at_entry(*entry);
  if (std::string problem = carried_payload(tensor); !problem.empty()) {
    report.error(ErrorCode::kCorrupt, std::move(problem));
  }
  if (std::optional<Fault> fault = size_fault(tensor, entry->size)) {
    report.error(fault->code, std::move(fault->problem));
  }
  KeyReview review = review_keys(data, entry->size);
  for (std::string& problem : review.errors) report.error(ErrorCode::kCorrupt, std::move(problem));
  for (std::string& problem : review.findings) report.warning(std::move(problem));
  return report.failed() ? nullptr : entry;
}

IssueSink throwing_sink(const std::string& source) {
  return [source](Issue issue) {
    if (issue.severity == Severity::kError) throw issue.error(source);
  };
}

TensorBytes entry_payload(const ZipReader& zip, const ZipEntry& entry, bool verify_crc) {
  if (entry.is_stored()) {
    if (verify_crc) zip.verify(entry);
    return zip.data(entry);
  }
  // Inflated once; every tensor referring to the entry shares the buffer through the token.
  auto inflated = std::make_shared<const TensorBytes>(zip.verified_data(entry));
  const ByteSpan view = inflated->view();
  return TensorBytes::borrowed(view, std::move(inflated));
}

}  // namespace onnxzip::archive_detail
