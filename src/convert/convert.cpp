// convert() and repack(): the conversions between legacy model files and .onnxz archives, built
// on the public archive, legacy and ZIP headers only.
#include "onnxzip/convert.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stop_token>
#include <string_view>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "convert_internal.h"
#include "crc_worker.h"
#include "external_data.h"
#include "interrupted_edit.h"
#include "message_text.h"
#include "onnxzip/error.h"
#include "onnxzip/internal/s3.h"
#include "onnxzip/internal/zip_reader.h"
#include "onnxzip/onnx_codec.h"
#include "onnxzip/tensor.h"
#include "progress_meter.h"
#include "zip_writer.h"

namespace onnxzip {
namespace {

using detail::quote;

namespace fs = std::filesystem;

// True when `a` and `b` name the same existing file (hard and symbolic links included).
bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  return fs::equivalent(a, b, ec) && !ec;
}

[[noreturn]] void refuse_overwrite(const fs::path& in, const fs::path& victim,
                                   std::string_view what) {
  throw Error(ErrorCode::kInvalidArgument, {.file = in.string()},
              "the output " + quote(victim.string()) + " would replace " + std::string(what) +
                  "; the input is never written to");
}

fs::path folder_of(const fs::path& file) {
  return file.has_parent_path() ? file.parent_path() : fs::path(".");
}

// legacy -> .onnxz: `out` must not be the model file or one of its external data files. Only an
// existing `out` can be one, so the model is looked at only then (its references, not its data).
void check_archive_output(const fs::path& in, const fs::path& out, const LegacyReadOptions& read) {
  std::error_code ec;
  if (!fs::exists(out, ec)) return;
  if (same_file(in, out)) refuse_overwrite(in, out, "the input model");
  LegacyReadOptions references_only = read;
  references_only.load_external_data = false;
  const ModelProto model = read_legacy_model(in, references_only);
  const fs::path folder = folder_of(in);
  for_each_tensor(model, [&](const TensorProto& tensor, const TensorSite&) {
    if (tensor.data_location != TensorProto::kExternal) return;
    const std::optional<std::string_view> location = detail::read_external_data(tensor).location;
    if (location && same_file(folder / *location, out)) {
      refuse_overwrite(in, out, "the input's external data file " + quote(*location));
    }
  });
}

// .onnxz -> legacy: neither the model file nor any data file the writer may create ("<base>",
// "<base>.1", "<base>.2"...) may be the archive.
void check_legacy_output(const fs::path& in, const fs::path& out,
                         const LegacyWriteOptions& legacy) {
  if (same_file(in, out)) refuse_overwrite(in, out, "the input archive");
  const std::string base =
      legacy.data_file_name.empty() ? out.filename().string() + ".data" : legacy.data_file_name;
  const auto is_data_file_name = [&](const std::string& name) {
    if (name == base) return true;
    if (!name.starts_with(base + ".") || name.size() == base.size() + 1) return false;
    return std::all_of(name.begin() + static_cast<std::ptrdiff_t>(base.size() + 1), name.end(),
                       [](char c) { return c >= '0' && c <= '9'; });
  };
  std::error_code ec;
  for (fs::directory_iterator it(folder_of(out), ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (is_data_file_name(name) && same_file(in, it->path())) {
      refuse_overwrite(in, it->path(), "the input archive (as a data file of the output)");
    }
  }
}

// --- .onnxz -> legacy ---

// The archive's model as load() returns it: each external tensor holding its payload, borrowed
// from `archive` (which must outlive the model), its reference gone.
ModelProto model_with_payloads(const Archive& archive) {
  ModelProto model = archive.model();
  auto info = archive.tensors().begin();  // In for_each_tensor order, as the walk below.
  for_each_tensor(model, [&](TensorProto& tensor, const TensorSite&) {
    if (tensor.data_location != TensorProto::kExternal) return;
    while (info->is_inline) ++info;  // An inline tensor keeps its payload where it is.
    tensor.raw_data = TensorBytes::borrowed((info++)->data, kNoOwner);
    tensor.external_data.clear();
    tensor.data_location.reset();
  });
  return model;
}

// The CRC-32 of every stored payload entry an archive's model refers to, checked on a thread of
// its own from the moment it is made, reading the file with pread (crc32_of), not the mapping,
// while the caller copies the same bytes. (Deflated entries were checked as they were inflated.)
class PayloadCrcCheck final {
 public:
  explicit PayloadCrcCheck(const Archive& archive) : archive_(archive) {
    try {
      thread_ = std::jthread([this](const std::stop_token& stop) { run(stop); });
    } catch (const std::system_error&) {
      run({});  // No thread to be had: the check runs now, before the write.
    }
  }

  // Waits for the check to end; throws the first error it found (kCorrupt for a CRC-32
  // mismatch, naming the archive and the entry; kIo for a file that could not be read).
  void finish() {
    if (thread_.joinable()) thread_.join();
    if (error_) std::rethrow_exception(error_);
  }
  // Throws the error found so far, if any, without waiting.
  void throw_if_failed() const {
    if (failed_.load()) std::rethrow_exception(error_);
  }

 private:
  void run(const std::stop_token& stop) {
    try {
      const ZipDirectory& zip = archive_.zip();
      std::vector<bool> checked(zip.entries().size(), false);
      OwnedBytes buffer;
      for (const Archive::TensorInfo& info : archive_.tensors()) {
        if (stop.stop_requested()) return;
        const ZipEntry* entry = zip.find(info.entry);
        if (entry == nullptr || !entry->is_stored() || checked[entry->index]) continue;
        checked[entry->index] = true;
        const std::uint32_t crc = with_error_context(
            [&] {
              return ErrorContext{.file = zip.source_name(),
                                  .entry = "entry " + quote(entry->name),
                                  .entry_name = entry->name};
            },
            [&] { return detail::crc32_of(info.data, 0, buffer); });
        zip.check_crc(*entry, crc);
      }
    } catch (...) {
      error_ = std::current_exception();
      failed_.store(true);
    }
  }

  const Archive& archive_;
  std::exception_ptr error_;
  std::atomic<bool> failed_{false};  // error_ is set (read by throw_if_failed without a join).
  std::jthread thread_;              // Last: stopped and joined before the members it uses go.
};

// load() and write_legacy_model(), with load.verify_crc (the CLI's) checked beside the write
// instead of before it: the write's progress callback throws the check's error as soon as it is
// known, and its last call, which comes before any output is renamed into place, waits for the
// check to end (progress.h: a callback that throws cancels the write and leaves no output).
LegacyWriteResult archive_to_legacy(const fs::path& in, const fs::path& out,
                                    const ConvertOptions& options) {
  LoadOptions load_options = options.load;
  load_options.verify_crc = false;
  load_options.inflate_payloads = true;  // load()'s rule: every payload is resolved.
  const Archive archive = Archive::open(in, load_options);
  const ModelProto model = model_with_payloads(archive);
  detail::check_input_model(in, model);
  LegacyWriteOptions write_options = options.legacy;
  std::optional<PayloadCrcCheck> crc_check;
  if (options.load.verify_crc) {
    crc_check.emplace(archive);
    write_options.progress = [&crc_check, caller = std::move(write_options.progress),
                              started = false](std::uint64_t done, std::uint64_t total) mutable {
      // The first call may have done == total too (nothing to write).
      if (started && done == total) {
        crc_check->finish();
      } else {
        crc_check->throw_if_failed();
      }
      started = true;
      if (caller) caller(done, total);
    };
  }
  return write_legacy_model(model, out, write_options);
}

// --- repack ---

// One external reference of the model, as a byte range of an entry.
struct Reference {
  TensorProto* tensor;
  const ZipEntry* entry;
  std::string location;
  std::uint64_t offset;
  std::uint64_t length;
};

bool valid_entry_name(std::string_view name) {
  return entry_name_problem(name, EntryNameKind::kPayload).empty();
}

class Repacker final {
 public:
  Repacker(const fs::path& in, const fs::path& out, const SaveOptions& options,
           const ZipReaderOptions& zip_options, FileAccess access)
      : in_(in),
        out_(out),
        options_(options),
        zip_(archive_detail::open_zip(in, zip_options, access)) {}

  RepackResult run();

 private:
  [[noreturn]] void fail(const std::string& message) const {
    throw Error(ErrorCode::kCorrupt, {.file = in_.string()}, message);
  }
  const ZipEntry& find_model_entry() const;
  ModelProto parse_model(const ZipEntry& model_entry);
  Reference resolve(TensorProto& tensor, std::string_view site, std::string_view prefix) const;
  void resolve_references(ModelProto& model, std::string_view prefix);
  void keep_or_unpack();
  // The entry's bytes with its CRC-32 checked, shared by every tensor that borrows from them.
  std::shared_ptr<const TensorBytes> entry_bytes(const ZipEntry& entry);
  std::uint64_t kept_bytes() const;
  std::string copy_kept_entry(ArchiveWriter& writer, const std::vector<const Reference*>& tensors);
  TensorRef copy_stored_entry(ArchiveWriter& writer, const Reference& first);
  TensorRef copy_deflated_entry(ArchiveWriter& writer, const Reference& first);
  void write_in_steps(EntrySink& sink, ByteSpan bytes);
  void list_other_entries(const ZipEntry& model_entry, RepackResult& result) const;

  fs::path in_;
  fs::path out_;
  SaveOptions options_;
  ZipReader zip_;
  std::unordered_map<std::size_t, std::shared_ptr<const TensorBytes>> cached_entries_;
  std::vector<Reference> references_;  // Every external reference of the model.
  // Entries used whole under a valid name: entry index -> the references to it, in input order.
  std::map<std::size_t, std::vector<const Reference*>> kept_;
  // Entries referred to by range or under an invalid name, whose bytes the tensors now hold.
  // An entry used whole by some tensors and by range by others is kept and unpacked both.
  std::set<std::size_t> unpacked_;
  // The whole write's progress: the kept entries, then what finish() externalizes.
  std::optional<detail::ProgressMeter> meter_;
};

const ZipEntry& Repacker::find_model_entry() const {
  const ZipEntry* found = nullptr;
  for (const ZipEntry& entry : zip_.entries()) {
    const std::string_view name = entry.name;
    if (name != kModelEntryName && !(name.ends_with(kModelEntryName) &&
                                     name[name.size() - kModelEntryName.size() - 1] == '/')) {
      continue;
    }
    if (found != nullptr) {
      fail("holds several models: entries " + quote(found->name) + " and " + quote(entry.name));
    }
    found = &entry;
  }
  if (found == nullptr) {
    fail("no entry named " + std::string(kModelEntryName) +
         ", so this ZIP archive holds no ONNX model to repack");
  }
  return *found;
}

Reference Repacker::resolve(TensorProto& tensor, std::string_view site,
                            std::string_view prefix) const {
  ErrorContext place;  // Filled only on failure: a model may hold very many tensors.
  const auto fail_tensor = [&](const std::string& problem) {
    ErrorContext at = tensor_place(tensor, site);
    at.file = in_.string();
    at.entry = std::move(place.entry);
    at.entry_name = std::move(place.entry_name);
    throw Error(ErrorCode::kCorrupt, std::move(at), problem);
  };
  // Any key but location, offset and length locates nothing: checksum, basepath and unknown
  // keys are ignored, as the legacy reader does.
  const detail::ExternalData data = detail::read_external_data(tensor);
  if (const std::string fault = detail::reference_fault(data); !fault.empty()) fail_tensor(fault);
  if (tensor.raw_data || !present_typed_field(tensor).empty()) {
    fail_tensor("data_location is EXTERNAL but the tensor also holds its data inline");
  }
  const std::string_view location = *data.location;
  const std::string name = std::string(prefix) + std::string(location);
  const ZipEntry* entry = zip_.find(name);
  if (entry == nullptr || entry->is_directory()) {
    fail_tensor("refers to " + quote(location) + ", which is no file of the archive");
  }
  const auto fail_in_entry = [&](const std::string& problem) {
    place.entry = "entry " + quote(entry->name);
    place.entry_name = entry->name;
    fail_tensor(problem);
  };
  const std::uint64_t expected = with_error_context(
      [&] {
        ErrorContext at = tensor_place(tensor, site);
        at.file = in_.string();
        return at;
      },
      [&] {
        return tensor_byte_size(tensor.dims, tensor.data_type.value_or(TensorProto::kUndefined),
                                "dims");
      });
  const std::uint64_t start = data.offset ? *data.offset->value : 0;
  if (start > entry->size) {
    fail_in_entry("offset " + std::to_string(start) + " is past the end of the entry (" +
                  std::to_string(entry->size) + " bytes)");
  }
  const std::uint64_t count = data.length ? *data.length->value : entry->size - start;
  if (!fits(start, count, entry->size)) {
    fail_in_entry("offset " + std::to_string(start) + " + length " + std::to_string(count) +
                  " is past the end of the entry (" + std::to_string(entry->size) + " bytes)");
  }
  if (count != expected) {
    fail_in_entry("its " + std::to_string(count) + " bytes differ from dims x element size (" +
                  std::to_string(expected) + " bytes)");
  }
  return {&tensor, entry, std::string(location), start, count};
}

std::shared_ptr<const TensorBytes> Repacker::entry_bytes(const ZipEntry& entry) {
  auto& slot = cached_entries_[entry.index];
  if (!slot) slot = std::make_shared<const TensorBytes>(zip_.verified_data(entry));
  return slot;
}

ModelProto Repacker::parse_model(const ZipEntry& model_entry) {
  const std::shared_ptr<const TensorBytes> model_bytes = entry_bytes(model_entry);
  ParseOptions parse;
  parse.no_copy = true;  // Inline payloads borrow from the model entry's bytes.
  return parse_message<ModelProto>(model_bytes->view(), model_bytes, parse,
                                   in_.string() + ": entry " + quote(model_entry.name));
}

void Repacker::resolve_references(ModelProto& model, std::string_view prefix) {
  std::vector<std::pair<TensorProto*, std::string>> sites;
  for_each_tensor(model, [&](TensorProto& tensor, const TensorSite& site) {
    if (tensor.data_location == TensorProto::kExternal) {
      sites.emplace_back(&tensor, std::string(site.path));
    }
  });
  references_.reserve(sites.size());
  for (const auto& [tensor, site] : sites) {
    references_.push_back(resolve(*tensor, site, prefix));
  }
}

// Whole entries under a valid name are kept; a tensor referring to anything else gets its bytes
// inline, borrowed from the entry's.
void Repacker::keep_or_unpack() {
  for (const Reference& ref : references_) {
    if (ref.offset == 0 && ref.length == ref.entry->size && valid_entry_name(ref.location)) {
      kept_[ref.entry->index].push_back(&ref);
      continue;
    }
    unpacked_.insert(ref.entry->index);
    const std::shared_ptr<const TensorBytes> bytes = entry_bytes(*ref.entry);
    ref.tensor->raw_data =
        TensorBytes::borrowed(bytes->view().subspan(static_cast<std::size_t>(ref.offset),
                                                    static_cast<std::size_t>(ref.length)),
                              bytes);
    ref.tensor->external_data.clear();
    ref.tensor->data_location.reset();
  }
}

std::uint64_t Repacker::kept_bytes() const {
  std::uint64_t bytes = 0;
  for (const auto& [index, tensors] : kept_) bytes += zip_.entries()[index].size;
  return bytes;
}

// Copies one kept entry, points its tensors at the copy and returns the copy's name.
std::string Repacker::copy_kept_entry(ArchiveWriter& writer,
                                      const std::vector<const Reference*>& tensors) {
  const Reference& first = *tensors.front();
  const TensorRef ref = first.entry->is_stored() ? copy_stored_entry(writer, first)
                                                 : copy_deflated_entry(writer, first);
  for (const Reference* tensor_ref : tensors) ref.apply_to(*tensor_ref->tensor);
  return ref.location;
}

// Copied by the writer from the archive file (the kernel copies the bytes of a mapping); the
// CRC-32 the writer computes of the copy, beside the copies of later entries, checks the entry:
// a damaged input entry is the input's error (kCorrupt naming it), and the write leaves nothing.
TensorRef Repacker::copy_stored_entry(ArchiveWriter& writer, const Reference& first) {
  const ZipEntry& entry = *first.entry;
  const std::int32_t data_type = first.tensor->data_type.value_or(TensorProto::kUndefined);
  const ByteSpan data = zip_.stored_data(entry);
  // zip_ and its entries outlive the writer.
  const ArchiveWriter::PayloadCrcCheck check = [this, &entry](std::uint32_t crc) {
    zip_.check_crc(entry, crc);
  };
  if (meter_->active() && data.size() > kProgressStepBytes) {
    return writer.add_tensor(
        first.location, data_type, first.tensor->dims,
        [&](EntrySink& sink) { write_in_steps(sink, data); }, check);
  }
  const TensorRef ref =
      writer.add_tensor(first.location, data_type, first.tensor->dims, data, check);
  meter_->advance(data.size());
  return ref;
}

TensorRef Repacker::copy_deflated_entry(ArchiveWriter& writer, const Reference& first) {
  const ZipEntry& entry = *first.entry;
  const std::int32_t data_type = first.tensor->data_type.value_or(TensorProto::kUndefined);
  return writer.add_tensor(first.location, data_type, first.tensor->dims, [&](EntrySink& sink) {
    if (unpacked_.contains(entry.index)) {
      write_in_steps(sink, entry_bytes(entry)->view());  // Inflated already for other tensors.
    } else {
      // Straight from the inflater into the output, in bounded memory. A CRC-32 mismatch comes
      // after the last piece; the writer then leaves no output.
      zip_.stream(entry, [&](ByteSpan piece) { write_in_steps(sink, piece); });
    }
  });
}

// In pieces, so that progress is reported as they go.
void Repacker::write_in_steps(EntrySink& sink, ByteSpan bytes) {
  detail::write_with_progress(bytes, *meter_, [&](ByteSpan piece) { sink.write(piece); });
}

void Repacker::list_other_entries(const ZipEntry& model_entry, RepackResult& result) const {
  for (const ZipEntry& entry : zip_.entries()) {
    if (&entry == &model_entry || kept_.contains(entry.index)) continue;
    (unpacked_.contains(entry.index) ? result.unpacked_entries : result.dropped_entries)
        .push_back(entry.name);
  }
}

RepackResult Repacker::run() {
  const ZipEntry& model_entry = find_model_entry();
  ModelProto model = parse_model(model_entry);
  resolve_references(model, std::string_view(model_entry.name)
                                .substr(0, model_entry.name.size() - kModelEntryName.size()));
  keep_or_unpack();
  meter_.emplace(options_.progress,
                 options_.progress ? kept_bytes() + externalized_bytes(model, options_) : 0);

  RepackResult result;
  SaveOptions save_options = options_;
  save_options.progress = meter_->last_part();
  ArchiveWriter writer(out_, save_options);
  for (const auto& [index, tensors] : kept_) {
    result.kept_entries.push_back(copy_kept_entry(writer, tensors));
  }
  writer.finish(model);
  list_other_entries(model_entry, result);
  return result;
}

}  // namespace

namespace detail {

void check_input_model(const fs::path& in, const ModelProto& model, const std::string& shown) {
  const std::string name = shown.empty() ? in.string() : shown;
  if (!model.ir_version && !model.graph) {
    std::error_code ec;
    const bool empty_file = fs::file_size(in, ec) == 0 && !ec;
    const std::string what =
        empty_file ? "the file is empty" : "the model has neither an ir_version nor a graph";
    throw Error(ErrorCode::kCorrupt, {.file = name},
                std::string(what) + ", so it is not an ONNX model");
  }
  for_each_tensor(model, [&](const TensorProto& tensor, const TensorSite& site) {
    if (const std::string problem = payload_problem(tensor); !problem.empty()) {
      ErrorContext at = tensor_place(tensor, site.path);
      at.file = name;
      throw Error(ErrorCode::kCorrupt, std::move(at), problem);
    }
  });
}

}  // namespace detail

ConvertResult convert(const fs::path& in, const fs::path& out, const ConvertOptions& options) {
  ConvertResult result;
  result.from = detect_format(in);
  // The input is never written to (the more precise refusal first), then the name rule.
  if (result.from == ModelFormat::kLegacy) {
    check_archive_output(in, out, options.read);
    check_output_name(out, ModelFormat::kOnnxz);
    const ModelProto model = read_legacy_model(in, options.read);
    detail::check_input_model(in, model, options.read.source_name);
    save(model, out, options.archive);
  } else {
    if (is_s3_url(out.native())) {
      throw Error(ErrorCode::kUnsupported, {.file = out.string()},
                  "a legacy .onnx model (and its data files) cannot be written to object "
                  "storage; write an .onnxz archive there");
    }
    check_legacy_output(in, out, options.legacy);
    check_output_name(out, ModelFormat::kLegacy);
    result.legacy = archive_to_legacy(in, out, options);
  }
  return result;
}

RepackResult repack(const fs::path& in_zip, const fs::path& out, const RepackOptions& options) {
  if (same_file(in_zip, out)) refuse_overwrite(in_zip, out, "the input archive");
  check_output_name(out, ModelFormat::kOnnxz);
  return Repacker(in_zip, out, options.save, zip_reader_options(options.limits), options.access)
      .run();
}

}  // namespace onnxzip
