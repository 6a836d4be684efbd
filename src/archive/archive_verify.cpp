// verify(): an archive checked against the whole spec (§9.5), every deviation a finding.
//
// Errors are what load() refuses (the same checks, archive_references.cpp) plus wrong CRC-32s;
// warnings are deviations a reader accepts: the ZipReader's findings (§9.3) and what only a
// conformance check looks at -- the fixed header values of §3.1, the extra fields of §3.4 to
// §3.6, alignment to the archive's A, names (§6), order (§2.4), unreferenced entries (§7.2),
// non-canonical references (§9.4 item 4) and inline payloads that disagree with their tensor's
// dims and type (§9.4 item 5).
#include <algorithm>
#include <atomic>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "archive_internal.h"
#include "integrity_entries.h"
#include "interrupted_edit.h"
#include "little_endian.h"
#include "onnxzip/internal/byte_source.h"
#include "onnxzip/internal/mapped_file.h"
#include "onnxzip/internal/zip_reader.h"
#include "onnxzip/tensor.h"
#include "posix_file.h"
#include "progress_meter.h"
#include "task_threads.h"
#include "zip_records.h"

namespace onnxzip {
namespace {

using archive_detail::quote;
using detail::hex;
using Severity = VerifyFinding::Severity;
using Kind = VerifyFinding::Kind;

// spec §3.1 and Appendix B.
constexpr std::uint16_t kFlags = zip::kFlagUtf8;
constexpr std::uint16_t kDosTime = 0x0000;
constexpr std::uint16_t kDosDate = 0x0021;
constexpr std::uint32_t kExternalAttributes = 0x81A40000u;
constexpr std::uint16_t kHostUnix = 3u << 8;
constexpr std::uint64_t kMinAlignment = 64;
constexpr std::uint64_t kMaxAlignment = 65536;

class Verifier final {
 public:
  Verifier(const VerifyOptions& options, VerifyReport& report)
      : options_(options), report_(report) {}

  void run(const ZipReader& zip);

 private:
  // A finding at `place`, which gets the archive's name as its file.
  void add(Severity severity, Kind kind, std::string entry, std::string tensor,
           std::uint64_t offset, ErrorContext place, std::string problem) {
    if (place.file.empty()) place.file = zip_->source_name();
    VerifyFinding& finding = report_.findings.emplace_back();
    finding.severity = severity;
    finding.kind = kind;
    finding.entry = std::move(entry);
    finding.tensor = std::move(tensor);
    finding.offset = offset;
    finding.message = std::move(problem);
    finding.place = std::move(place);
    finding.integrity = kind == Kind::kDigest || kind == Kind::kSignature;
  }
  // A finding of what a reader refused with `error`, at the place the error names.
  void add(Severity severity, Kind kind, std::string entry, std::uint64_t offset,
           const Error& error, std::string_view note = "") {
    add(severity, kind, std::move(entry), "", offset, error.context(),
        error.problem() + std::string(note));
  }
  // A deviation from the profile (spec §3 to §6) at entry `e`.
  void warn(const ZipEntry& e, std::uint64_t offset, std::string problem,
            Kind kind = Kind::kLayout) {
    add(Severity::kWarning, kind, e.name, "", offset, entry_place(e.name), std::move(problem));
  }
  archive_detail::IssueSink collector(Kind kind) {
    return [this, kind](archive_detail::Issue issue) {
      add(issue.severity, kind, std::move(issue.entry), std::move(issue.tensor), issue.offset,
          std::move(issue.place), std::move(issue.problem));
    };
  }
  static ErrorContext entry_place(std::string_view name) {
    return {.entry = "entry " + quote(name)};
  }

  bool is_required_gap(const ZipFinding& finding) const;
  void check_archive_records();
  void check_headers(const ZipEntry& e);
  void check_extra_fields(const ZipEntry& e);
  void check_alignment_record(const ZipEntry& e, const zip::ExtraRecord& record);
  void check_alignment(const ZipEntry& e);
  void check_name(const ZipEntry& e);
  void read_entries();
  void check_crc(const ZipEntry& e);
  void check_model(const ZipEntry& model_entry);
  void report_zip_findings();
  void check_unreferenced();

  const VerifyOptions& options_;
  VerifyReport& report_;
  const ZipReader* zip_ = nullptr;
  detail::ProgressMeter* meter_ = nullptr;  // During run().
  // The alignment the archive's 0xD935 records declare (the first one seen), spec §3.6.
  std::optional<std::uint64_t> declared_alignment_;
  std::set<std::size_t> referenced_;  // Entry indexes some tensor refers to.
  // What read_entries() found, by entry index: why an entry's bytes could not be read or did not
  // match their CRC-32, and the SHA-256 of those read whole (with `__DIGESTS` only; nullopt for
  // the others, and the integrity entries, which it does not list).
  std::map<std::size_t, Error> read_errors_;
  archive_detail::EntryHashes hashes_;
};

void Verifier::run(const ZipReader& zip) {
  zip_ = &zip;
  std::uint64_t total = 0;
  if (options_.check_crc && options_.progress) {
    for (const ZipEntry& e : zip.entries()) {
      // Sizes a hostile archive declares: only a progress total, so saturate.
      if (__builtin_add_overflow(total, e.size, &total))
        total = std::numeric_limits<std::uint64_t>::max();
    }
  }
  detail::ProgressMeter meter(options_.progress, total);
  meter_ = &meter;
  // The declared alignment first, so every entry and gap is judged by it.
  for (const ZipEntry& e : zip.entries()) check_extra_fields(e);
  report_zip_findings();
  check_archive_records();
  if (options_.check_crc) read_entries();
  bool central_order_reported = false;
  for (const ZipEntry& e : zip.entries()) {
    check_headers(e);
    check_alignment(e);
    check_name(e);
    if (options_.check_crc) check_crc(e);
    if (e.central_index != e.index && !central_order_reported) {
      central_order_reported = true;
      warn(e, e.central_header_offset,
           "the central directory does not list the entries in file order (spec §2.4 item 4)");
    }
  }
  const ZipEntry* model = archive_detail::find_model_entry(zip, collector(Kind::kModel));
  if (model != nullptr) {
    check_model(*model);
    const archive_detail::IntegrityCheck integrity = archive_detail::check_integrity(
        zip, *model, options_, hashes_,
        [this](Severity severity, Kind kind, std::string entry, std::uint64_t offset,
               ErrorContext place, std::string problem) {
          add(severity, kind, std::move(entry), "", offset, std::move(place), std::move(problem));
        });
    report_.digests = integrity.digests;
    report_.signature = integrity.signature;
    report_.signature_key_id = integrity.signature_key_id;
  }
  check_unreferenced();
  meter.finish();
  meter_ = nullptr;
}

// The ZipReader's findings (spec §9.3), each naming its entry, and an interrupted edit's record.
void Verifier::report_zip_findings() {
  if (const std::optional<ZipTrailer>& edit = zip_->trailer()) {  // spec §9.6 item 3.
    add(Severity::kWarning, Kind::kZip, "", "", edit->offset, {},
        "interrupted_edit: " + edit->finding + " (spec §9.3)");
  }
  for (const ZipFinding& finding : zip_->findings()) {
    if (finding.kind == ZipFindingKind::kGap && is_required_gap(finding)) continue;
    const bool zip_record = finding.kind == ZipFindingKind::kNameEncoding ||
                            finding.kind == ZipFindingKind::kCaseOnlyDuplicate ||
                            finding.kind == ZipFindingKind::kHeaderMismatch;
    add(Severity::kWarning, zip_record ? Kind::kZip : Kind::kLayout, finding.entry, "",
        finding.offset, finding.entry.empty() ? ErrorContext{} : entry_place(finding.entry),
        std::string(to_string(finding.kind)) + ": " + finding.message + " (spec §9.3)");
  }
}

// Payload entries no tensor refers to (spec §7.2). A folder entry (a name ending in '/', which
// `zip -r` records) is no payload: its ZipReader finding says what it is.
void Verifier::check_unreferenced() {
  for (const ZipEntry& e : zip_->entries()) {
    if (e.name.starts_with("__") || e.name.ends_with('/') || referenced_.contains(e.index)) {
      continue;
    }
    warn(e, e.local_header_offset,
         "no tensor refers to this payload entry (spec §7.2, §9.3 item 9)", Kind::kReference);
  }
}

// spec §4.4: with A = 65536 a writer leaves a gap of (at most) 64 zero bytes before a local
// header whose padding would not fit in the extra field. Such a gap is conforming; any other is
// a finding.
bool Verifier::is_required_gap(const ZipFinding& finding) const {
  if (declared_alignment_ != kMaxAlignment || finding.entry.empty()) return false;
  const ZipEntry* before = zip_->find(finding.entry);
  if (before == nullptr || before->index + 1 >= zip_->entries().size()) return false;
  const ZipEntry& next = zip_->entries()[before->index + 1];
  const std::uint64_t gap = next.local_header_offset - before->local->end_offset;
  if (gap == 0 || gap > 64) return false;
  const std::uint64_t zip64 = next.size >= zip::kSentinel32 ? 20 : 0;
  const std::uint64_t header_end =
      before->local->end_offset + zip::LocalFileHeader::kSize + next.name.size() + zip64;
  std::uint64_t padding = (kMaxAlignment - header_end % kMaxAlignment) % kMaxAlignment;
  if (padding != 0 && padding < zip::kMinAlignmentRecordSize) padding += kMaxAlignment;
  if (!std::all_of(zip_->bytes().begin() + static_cast<std::ptrdiff_t>(before->local->end_offset),
                   zip_->bytes().begin() + static_cast<std::ptrdiff_t>(next.local_header_offset),
                   [](std::uint8_t b) { return b == 0; })) {
    return false;
  }
  return zip64 + padding > 0xFFFF;
}

void Verifier::check_archive_records() {
  const ZipReader& zip = *zip_;
  const std::uint64_t count = zip.entries().size();
  const bool needed = count >= zip::kSentinel16 ||
                      zip.central_directory_offset() >= zip::kSentinel32 ||
                      zip.central_directory_size() >= zip::kSentinel32;
  if (zip.has_zip64_end_record() && !needed) {
    add(Severity::kWarning, Kind::kLayout, "", "", zip.tail_offset(), {},
        "zip64 end records where no value needs them (spec §5.2)");
  }
}

void Verifier::check_headers(const ZipEntry& e) {
  const std::uint64_t at = e.central_header_offset;
  if (e.flags != kFlags) {
    warn(e, at,
         "general purpose flags " + hex(e.flags, 4) + ", expected " + hex(kFlags, 4) +
             " (spec §3.1)");
  }
  if (e.modified_time != kDosTime || e.modified_date != kDosDate) {
    warn(e, at,
         "modification date/time " + hex(e.modified_date, 4) + "/" + hex(e.modified_time, 4) +
             ", expected 0x0021/0x0000 (spec §3.1)");
  }
  if (e.external_attributes != kExternalAttributes) {
    warn(e, at,
         "external attributes " + hex(e.external_attributes, 8) +
             ", expected 0x81A40000 (spec §3.1)");
  }
  if (e.internal_attributes != 0) {
    warn(e, at,
         "internal attributes " + hex(e.internal_attributes, 4) + ", expected 0 (spec §3.1)");
  }
  const bool needs_zip64 = e.size >= zip::kSentinel32 || e.compressed_size >= zip::kSentinel32 ||
                           e.local_header_offset >= zip::kSentinel32;
  if (e.zip64 && !needs_zip64) {
    warn(e, at, "zip64 extra field where no value needs it (spec §5.1 item 3)");
  }
  const std::uint16_t needed = e.zip64 ? zip::kVersionZip64 : zip::kVersionDefault;
  if (e.version_needed != needed) {
    warn(e, at,
         "version needed to extract " + std::to_string(e.version_needed) + ", expected " +
             std::to_string(needed) + " (spec §3.1, §5.1 item 4)");
  }
  if (e.version_made_by != (kHostUnix | needed)) {
    warn(e, at,
         "version made by " + hex(e.version_made_by, 4) + ", expected " +
             hex(kHostUnix | needed, 4) + " (spec §3.1)");
  }
}

void Verifier::check_extra_fields(const ZipEntry& e) {
  // The reader has split both fields already; a failure here would be a reader bug. warn() names
  // the file and the entry.
  const std::string_view what = "extra field";
  const std::uint64_t local_at =
      e.local_header_offset + zip::LocalFileHeader::kSize + e.name.size();
  const std::uint64_t central_at =
      e.central_header_offset + zip::CentralDirectoryHeader::kSize + e.name.size();
  std::vector<zip::ExtraRecord> local;
  std::vector<zip::ExtraRecord> central;
  try {
    local = zip::split_extra_field(e.local->local_extra, local_at, what);
    central = zip::split_extra_field(e.central_extra, central_at, what);
  } catch (const Error& error) {
    warn(e, local_at, error.message());
    return;
  }

  // Local: [zip64] then [alignment], nothing else (spec §3.4 item 1). Unknown ids are already
  // ZipReader findings; here the order and the alignment records are checked.
  std::size_t alignment_records = 0;
  for (std::size_t i = 0; i < local.size(); ++i) {
    const zip::ExtraRecord& record = local[i];
    if (record.id == zip::kExtraZip64 && i != 0) {
      warn(e, record.offset,
           "the zip64 extra record is not the first local extra record (spec §3.4)");
    }
    if (record.id != zip::kExtraAlignment) continue;
    if (++alignment_records > 1) {
      warn(e, record.offset, "more than one alignment record (spec §3.4 item 1)");
    }
    if (i + 1 != local.size()) {
      warn(e, record.offset, "the alignment record is not the last local extra record (spec §3.4)");
    }
    check_alignment_record(e, record);
  }
  for (const zip::ExtraRecord& record : central) {
    if (record.id == zip::kExtraAlignment) {
      warn(e, record.offset, "alignment record in the central header (spec §3.4 item 2)");
    }
  }
}

// Its value (one per archive, spec §3.6) and its padding.
void Verifier::check_alignment_record(const ZipEntry& e, const zip::ExtraRecord& record) {
  if (record.data.size() < 2) {
    warn(e, record.offset,
         "alignment record of " + std::to_string(record.data.size()) +
             " data bytes, less than the 2 of its alignment field (spec §3.6)");
    return;
  }
  const std::uint16_t field = detail::load_le16(record.data.data());
  const std::uint64_t value = field == 0 ? kMaxAlignment : field;
  if (!is_power_of_two(value) || value < kMinAlignment) {
    warn(e, record.offset,
         "alignment record declares " + std::to_string(value) +
             ", not a power of two from 64 to 65536 (spec §4.1)");
  } else if (!declared_alignment_) {
    declared_alignment_ = value;
  } else if (*declared_alignment_ != value) {
    warn(e, record.offset,
         "alignment record declares " + std::to_string(value) + ", an earlier one " +
             std::to_string(*declared_alignment_) + " (spec §3.6: one alignment per archive)");
  }
  for (std::size_t k = 2; k < record.data.size(); ++k) {
    if (record.data[k] != 0) {
      warn(e, record.offset + zip::kExtraHeaderSize + k,
           "non-zero padding byte in the alignment record (spec §3.6)");
      break;
    }
  }
}

void Verifier::check_alignment(const ZipEntry& e) {
  // Misalignment to 64 is a ZipReader finding already (kUnaligned); this adds the archive's A.
  if (!declared_alignment_ || *declared_alignment_ <= kMinAlignment || !e.is_stored()) return;
  if (e.local->data_offset % kMinAlignment == 0 &&
      e.local->data_offset % *declared_alignment_ != 0) {
    warn(e, e.local->data_offset,
         "data at offset " + std::to_string(e.local->data_offset) +
             " is not a multiple of the archive's alignment " +
             std::to_string(*declared_alignment_) + " (spec §2.2 item 5, §4.1)");
  }
}

void Verifier::check_name(const ZipEntry& e) {
  if (e.name == kModelEntryName || archive_detail::is_integrity_entry(e.name)) return;
  if (e.name.starts_with("__")) {
    warn(e, e.central_header_offset,
         "unknown reserved entry, ignored by version 1 readers (spec §6.2, §11 item 1)",
         Kind::kZip);
    return;
  }
  // A folder entry is a layout finding of the reader's (kDirectory) already.
  if (e.name.ends_with('/')) return;
  if (const std::string problem = archive_detail::location_problem(e.name); !problem.empty()) {
    warn(e, e.central_header_offset, "the name " + problem, Kind::kZip);
  }
}

// Every entry's bytes read once, each piece's CRC-32 and SHA-256 computed while it is in the
// cache, the entries shared out over the cores (SHA-256 sets the pace). Findings are made
// afterwards in entry order, so the report does not depend on which thread read what.
void Verifier::read_entries() {
  const ZipReader& zip = *zip_;
  const bool hash = zip.find(kDigestsEntryName) != nullptr;
  if (hash) hashes_.assign(zip.entries().size(), std::nullopt);
  std::mutex errors_mutex;
  std::atomic<std::uint64_t> bytes_read{0};
  std::uint64_t bytes_reported = 0;
  // Only the caller's thread calls the progress callback, with what all threads have read.
  const auto report_progress = [&] {
    const std::uint64_t done = bytes_read.load(std::memory_order_relaxed);
    meter_->advance(done - bytes_reported);
    bytes_reported = done;
  };
  detail::for_each_task(zip.entries().size(), options_.threads,
                        [&](std::size_t index, bool on_caller) {
                          const ZipEntry& e = zip.entries()[index];
                          std::optional<Sha256> hasher;
                          if (hash && !archive_detail::is_integrity_entry(e.name)) hasher.emplace();
                          try {
                            zip.stream(e, [&](ByteSpan piece) {
                              if (hasher) hasher->update(piece);
                              if (!meter_->active()) return;
                              bytes_read.fetch_add(piece.size(), std::memory_order_relaxed);
                              if (on_caller) report_progress();
                            });
                            if (hasher) hashes_[index] = hasher->finish();
                          } catch (const Error& error) {
                            const std::lock_guard<std::mutex> lock(errors_mutex);
                            read_errors_.emplace(index, error);
                          }
                        });
  report_progress();
}

void Verifier::check_crc(const ZipEntry& e) {
  if (const auto found = read_errors_.find(e.index); found != read_errors_.end()) {
    add(Severity::kError, Kind::kCrc, e.name, e.local->data_offset, found->second);
  }
}

void Verifier::check_model(const ZipEntry& model_entry) {
  const ZipReader& zip = *zip_;
  ModelProto model;
  try {
    const TensorBytes bytes = archive_detail::entry_payload(zip, model_entry, false);
    // The model outlives `bytes`: with parse.no_copy, what it borrows must hold their owner.
    model =
        with_error_context([] { return ErrorContext{.entry = "entry " + quote(kModelEntryName)}; },
                           [&] {
                             return parse_message<ModelProto>(bytes.view(), bytes.owner(),
                                                              options_.parse, zip.source_name());
                           });
  } catch (const Error& error) {
    add(Severity::kError, Kind::kModel, model_entry.name, model_entry.local->data_offset, error,
        " (spec §9.4 item 2)");
    return;
  }
  const archive_detail::IssueSink sink = collector(Kind::kReference);
  for_each_tensor(model, [&](const TensorProto& tensor, const TensorSite& site) {
    if (tensor.data_location == TensorProto::kExternal) {
      // An entry counts as referenced even when the reference has other errors: the report
      // should not add "unreferenced" to "length mismatch".
      if (const auto location = detail::read_external_data(tensor).location) {
        if (const ZipEntry* e = zip.find(*location)) referenced_.insert(e->index);
      }
      archive_detail::check_reference(tensor, site.path, zip, sink);
      return;
    }
    if (!tensor.external_data.empty()) {
      const std::string label = tensor_label(tensor, site.path);
      add(Severity::kWarning, Kind::kReference, "", label, 0, {.tensor = label},
          "external_data on a tensor whose data_location is not EXTERNAL (ignored)");
    }
    if (const std::string problem = payload_problem(tensor); !problem.empty()) {
      const std::string label = tensor_label(tensor, site.path);
      add(Severity::kWarning, Kind::kModel, model_entry.name, label, model_entry.local->data_offset,
          {.tensor = label}, problem + " (spec §9.4 item 5)");
    }
  });
}

// report.checked for an archive that opened: what was read, then each integrity status.
std::string archive_checked(const VerifyReport& report, const VerifyOptions& options) {
  std::string checked = options.check_crc ? "ZIP structure, layout, references, CRC-32s"
                                          : "ZIP structure, layout, references (no CRC-32s)";
  switch (report.digests) {
    case IntegrityStatus::kAbsent:
      checked += "; no digests";
      break;
    case IntegrityStatus::kVerified:
      checked += "; digests verified";
      break;
    case IntegrityStatus::kUnchecked:
      checked += "; digests listed, not hashed";
      break;
    case IntegrityStatus::kOtherKey:
    case IntegrityStatus::kFailed:
      checked += "; digests failed";
      break;
  }
  switch (report.signature) {
    case IntegrityStatus::kAbsent:
      return checked + "; no signature";
    case IntegrityStatus::kVerified:
      return checked + "; signature verified (key " + report.signature_key_id + ")";
    case IntegrityStatus::kUnchecked:
      return checked + "; signature not checked: give " + options.public_key_term;
    case IntegrityStatus::kOtherKey:
      return checked + "; signed by another key (" + report.signature_key_id + ")";
    case IntegrityStatus::kFailed:
      return checked + "; signature failed";
  }
  return checked;
}

}  // namespace

std::string_view to_string(VerifyFinding::Severity severity) noexcept {
  return severity == VerifyFinding::Severity::kError ? "error" : "warning";
}

std::string_view to_string(VerifyFinding::Kind kind) noexcept {
  switch (kind) {
    case Kind::kZip:
      return "zip";
    case Kind::kLayout:
      return "layout";
    case Kind::kReference:
      return "reference";
    case Kind::kModel:
      return "model";
    case Kind::kIr:
      return "ir";
    case Kind::kCrc:
      return "crc";
    case Kind::kDigest:
      return "digest";
    case Kind::kSignature:
      return "signature";
  }
  return "zip";
}

std::string_view to_string(IntegrityStatus status) noexcept {
  switch (status) {
    case IntegrityStatus::kAbsent:
      return "absent";
    case IntegrityStatus::kVerified:
      return "verified";
    case IntegrityStatus::kUnchecked:
      return "unchecked";
    case IntegrityStatus::kOtherKey:
      return "other_key";
    case IntegrityStatus::kFailed:
      return "failed";
  }
  return "failed";
}

std::string to_string(const VerifyFinding& finding) {
  return compose_message(finding.place, finding.message);
}

bool VerifyReport::loadable() const noexcept {
  for (const VerifyFinding& finding : findings) {
    if (finding.severity == VerifyFinding::Severity::kError) return false;
  }
  return true;
}

VerifyReport verify_bytes(ByteSpan archive_bytes, const VerifyOptions& options,
                          std::string_view source_name) {
  VerifyReport report;
  std::optional<ZipReader> zip;
  try {
    zip.emplace(archive_detail::open_zip(
        ByteSource::of_bytes(archive_bytes, kNoOwner, std::string(source_name)),
        zip_reader_options(options.limits)));
  } catch (const Error& error) {
    VerifyFinding& finding = report.findings.emplace_back();
    finding.kind = Kind::kZip;
    finding.message = error.problem();
    finding.place = error.with_context({.file = std::string(source_name)}).context();
    report.checked = "the ZIP structure, which does not read";
    return report;
  }
  Verifier(options, report).run(*zip);
  report.checked = archive_checked(report, options);
  return report;
}

VerifyReport verify(const std::filesystem::path& path, const VerifyOptions& options) {
  const std::shared_ptr<const MappedFile> mapping =
      MappedFile::open(path, whole_file_access(options.access));
  const std::string source_name = options.source_name.empty() ? path.string() : options.source_name;
  // The whole file, tail included, is read under the readers' lock, which keeps an in-place edit
  // (spec §9.6) from rewriting or truncating it meanwhile.
  return archive_detail::read_as_reader(
      *mapping, [&] { return verify_bytes(mapping->bytes(), options, source_name); });
}

}  // namespace onnxzip
