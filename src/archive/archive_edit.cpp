// replace_model(): a new `__MODEL_PROTO` for an existing archive, checked against its entries by
// the writers' rule (archive_references.cpp) and put in place by the crash-safe tail rewrite of
// spec §9.6 (tail_edit.cpp); or, to drop entries no tensor refers to any more, a rewrite.
#include "onnxzip/edit.h"

#include <functional>
#include <future>
#include <optional>
#include <system_error>
#include <utility>
#include <vector>

#include "archive_internal.h"
#include "crc32.h"
#include "integrity_entries.h"
#include "interrupted_edit.h"
#include "locked_archive.h"
#include "model_parts.h"
#include "onnxzip/internal/byte_source.h"
#include "onnxzip/internal/mapped_file.h"
#include "onnxzip/internal/zip_reader.h"
#include "onnxzip/onnx_codec.h"
#include "onnxzip/signing.h"
#include "onnxzip/tensor.h"
#include "progress_meter.h"
#include "tail_edit.h"
#include "task_threads.h"
#include "zip_tail.h"
#include "zip_writer.h"

namespace onnxzip {
namespace {

using archive_detail::quote;

// Names in messages: the first few, then how many more.
constexpr std::size_t kNamesInMessage = 8;

// A new integrity entry of the tail: its text, borrowed.
zip::TailEntry text_entry(std::string_view name, const std::string& text) {
  const ByteSpan bytes(reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
  return {name, bytes, crc32(bytes)};
}

std::string name_list(const std::vector<std::string>& names) {
  std::string text;
  for (std::size_t i = 0; i < names.size() && i < kNamesInMessage; ++i) {
    text += (i == 0 ? "" : ", ") + quote(names[i]);
  }
  if (names.size() > kNamesInMessage) {
    text += " and " + std::to_string(names.size() - kNamesInMessage) + " more";
  }
  return text;
}

// The archive's payload entries, for the reference rule: every entry but the model and the
// reserved names of later versions (spec §6.2, §7.2).
struct Payloads {
  archive_detail::PayloadIndex index;
  std::vector<std::size_t> entry_of;  // Payload index -> zip entry index.

  Payloads(const ZipReader& zip, const ZipEntry& model_entry) {
    for (const ZipEntry& entry : zip.entries()) {
      if (entry.index == model_entry.index || entry.name.starts_with("__")) continue;
      index.add(entry.name, entry.size);
      entry_of.push_back(entry.index);
    }
  }
};

// The new model's bytes, checked against the archive's payload entries.
struct CheckedModel {
  OwnedBytes bytes;
  std::vector<bool> referenced;  // Per zip entry index.
};

CheckedModel check_and_serialize(const ModelProto& model, const ZipReader& zip,
                                 const ZipEntry& model_entry, const std::string& source) {
  const Payloads payloads(zip, model_entry);
  CheckedModel checked;
  checked.referenced.assign(zip.entries().size(), false);
  TensorSubstitutions substitutions;  // The references not yet in their canonical form.
  for_each_tensor(model, [&](const TensorProto& tensor, const TensorSite& site) {
    if (tensor.data_location != TensorProto::kExternal) return;
    const std::size_t found = archive_detail::check_writer_reference(
        tensor, site.path, payloads.index, source, "which is not a payload entry of the archive");
    const archive_detail::PayloadIndex::Entry& entry = payloads.index.entries()[found];
    checked.referenced[payloads.entry_of[found]] = true;
    if (!archive_detail::is_canonical_reference(tensor, entry.location, entry.size)) {
      substitutions.insert_or_assign(
          &tensor, archive_detail::make_reference(tensor, entry.location, entry.size));
    }
  });
  SerializeOptions options;
  options.substitutions = &substitutions;
  const MessageSerializer<ModelProto> serializer(model, options);
  checked.bytes = OwnedBytes(static_cast<std::size_t>(serializer.size()));
  serializer.write(checked.bytes.mutable_span());
  return checked;
}

// The references inside the graph, functions and training_info bytes of a split model, checked
// by the rule check_and_serialize applies, tensor by tensor, without building the graph: the
// referenced entries, or nothing when the bytes need what only the whole model gives (a fault to
// report with its place, a reference to rewrite in canonical form, bytes the walk does not take).
std::optional<std::vector<bool>> check_kept_references(const detail::SplitModel& split,
                                                       const ZipReader& zip,
                                                       const ZipEntry& model_entry,
                                                       const std::string& source) {
  const Payloads payloads(zip, model_entry);
  std::vector<bool> referenced(zip.entries().size(), false);
  // Payloads borrowed, not copied: an inline tensor may be large, and only references matter.
  ParseOptions borrow;
  borrow.no_copy = true;
  borrow.raw_data_threshold = 0;
  bool plain = true;
  const bool walked =
      detail::walk_kept_tensors(split.kept, ParseOptions{}.max_depth, [&](ByteSpan bytes) {
        if (!plain) return;
        try {
          const TensorProto tensor = parse_message<TensorProto>(bytes, borrow, source);
          if (tensor.data_location != TensorProto::kExternal) return;
          const std::size_t found = archive_detail::check_writer_reference(
              tensor, {}, payloads.index, source, "which is not a payload entry of the archive");
          const archive_detail::PayloadIndex::Entry& entry = payloads.index.entries()[found];
          referenced[payloads.entry_of[found]] = true;
          plain = archive_detail::is_canonical_reference(tensor, entry.location, entry.size);
        } catch (const Error&) {
          plain = false;
        }
      });
  if (!walked || !plain) return std::nullopt;
  return referenced;
}

// Writes the archive anew at its path without the entries no tensor refers to.
EditResult compact(const std::filesystem::path& path, const ZipReader& zip,
                   const ZipEntry& model_entry, const std::vector<bool>& referenced,
                   ByteSpan model_bytes, const EditOptions& options) {
  EditResult result;
  result.compacted = true;
  std::uint64_t payload_bytes = 0;
  for (const ZipEntry& entry : zip.entries()) {
    if (referenced[entry.index]) payload_bytes += entry.size;
  }
  detail::ProgressMeter meter(options.progress, payload_bytes);
  // An archive reached through a symbolic link is edited where it is, like an in-place edit (the
  // open refused the link already when follow_symlinks is off).
  ZipWriter writer(
      path, ZipWriterOptions{.alignment = zip::declared_alignment(zip), .output = options.output});
  for (const ZipEntry& entry : zip.entries()) {
    if (entry.index == model_entry.index) continue;
    // Digests of the entries dropped, and a signature of them: neither stays true (spec §12.4).
    if (entry.name == kDigestsEntryName) {
      result.digests_removed = true;
      continue;
    }
    if (entry.name == kSignatureEntryName) {
      result.signature_removed = true;
      continue;
    }
    const bool reserved = entry.name.starts_with("__");
    if (!reserved && !referenced[entry.index]) {
      result.dropped_entries.push_back(entry.name);
      continue;
    }
    const TensorBytes bytes = archive_detail::entry_payload(zip, entry, true);
    archive_detail::check_entry_name(entry.name,
                                     reserved ? EntryNameKind::kReserved : EntryNameKind::kPayload);
    writer.add(entry.name, bytes.view());
    if (!reserved) meter.advance(entry.size);
  }
  const WrittenEntry& written = writer.add(kModelEntryName, model_bytes);
  result.model_offset = written.local_header_offset;
  result.model_size = written.size;
  meter.finish();
  writer.finish();
  return result;
}

// The statement of a signed archive's `__DIGESTS`, read on another core while the caller's makes
// the new model: parsing it is most of what signing adds to an edit. The caller's thread keeps
// the model (an edit's change may be the user's code, bound to its thread). The reading's error
// is rethrown by get(), where the edit used to read the statement: after the model's, as before.
// No future (valid() false) without `__DIGESTS` in its place.
std::future<DigestStatement> read_digests_ahead(const ZipReader& zip,
                                                const archive_detail::IntegrityPlace& place,
                                                const IntegrityLimits& limits) {
  if (place.digests == nullptr || !place.misplaced.empty()) return {};
  const auto read = [&zip, &entry = *place.digests, limits] {
    return archive_detail::read_digests(zip, entry, limits);
  };
  if (detail::default_task_threads() > 1) {
    try {
      return std::async(std::launch::async, read);
    } catch (const std::system_error&) {
      // No thread to be had: the statement is read when it is needed.
    }
  }
  return std::async(std::launch::deferred, read);
}

// Opens and locks the archive, reads its ZIP once, and puts in the model `prepare` makes from it
// (the caller's, or the stored one changed), checked: the three edits differ only there.
using PrepareModel = std::function<CheckedModel(const ZipReader&, const ZipEntry& model_entry)>;

EditResult edit_archive(const std::filesystem::path& archive, const EditOptions& options,
                        const PrepareModel& prepare) {
  const std::string source = archive.string();
  const archive_detail::LockedArchive file(archive, options.output.follow_symlinks, options.wait);
  // An in-place edit rewrites the model entry, which starts where the entry before it ends, and
  // keeps every other entry's bytes as they are: it needs their central records, not their local
  // headers, whose reading would be most of its cost (one read per entry). A signed archive's
  // tail is `__DIGESTS`, `__SIGNATURE` and the model (spec §12.1), and the edit rewrites it from
  // where the payload before it ends: four local headers at most.
  ZipReaderOptions tail_only = zip_reader_options(options.limits);
  tail_only.local_headers = LocalHeaderScope::kTail;
  tail_only.tail_local_headers = 4;
  // Read with pread, never mapped: the tail is all the edit reads, and a file larger than the
  // address space is edited all the same.
  const ZipReader zip =
      archive_detail::open_zip(ByteSource::of_file(file.map(FileAccess::kRanges)), tail_only);
  const ZipEntry* const model_entry =
      archive_detail::find_model_entry(zip, archive_detail::throwing_sink(source));
  // Before any work on the model: an archive whose last entry cannot be replaced in place.
  const std::uint64_t file_size = file.size();
  zip::check_last_entry_replaceable(zip, file_size);
  const archive_detail::IntegrityPlace place =
      archive_detail::find_integrity_entries(zip, *model_entry);
  std::future<DigestStatement> old_statement = read_digests_ahead(zip, place, options.integrity);
  const CheckedModel checked = prepare(zip, *model_entry);
  // The statement may still be on its way: time for the signature's setup.
  if (options.signing_key && old_statement.valid()) prepare_signing();

  std::vector<std::string> unreferenced;
  for (const ZipEntry& entry : zip.entries()) {
    if (entry.index != model_entry->index && !entry.name.starts_with("__") &&
        !checked.referenced[entry.index]) {
      unreferenced.push_back(entry.name);
    }
  }
  if (!unreferenced.empty() && !options.compact) {
    throw Error(ErrorCode::kInvalidArgument, {.file = source},
                std::string("no tensor of the new model refers to ") +
                    (unreferenced.size() == 1 ? "entry " : "entries ") + name_list(unreferenced) +
                    " (spec §7.2: every payload entry must be referred to); refer to " +
                    (unreferenced.size() == 1 ? "it" : "them") +
                    " (a tensor holding the same bytes inline may refer instead), or, to " +
                    "delete " + (unreferenced.size() == 1 ? "its" : "their") +
                    " bytes from the archive, compact it");
  }
  const OwnedBytes& bytes = checked.bytes;
  if (!unreferenced.empty()) {
    // Compacting copies every entry it keeps, so it reads them all, checked as any reader does.
    ZipReaderOptions every_header = zip_reader_options(options.limits);
    every_header.local_headers = LocalHeaderScope::kAll;
    const ZipReader whole = archive_detail::open_zip(ByteSource::of_file(file.map()), every_header);
    file.check_path_names_it();
    EditResult result = compact(archive, whole, whole.entries()[model_entry->index],
                                checked.referenced, bytes.span(), options);
    result.file_size = std::filesystem::file_size(archive);
    return result;
  }

  detail::ProgressMeter meter(options.progress, bytes.size());
  const std::uint32_t model_crc = crc32(bytes.span());
  EditResult result;
  archive_detail::TailReplacement replaced;
  file.check_path_names_it();
  if (zip.find(kDigestsEntryName) == nullptr && zip.find(kSignatureEntryName) == nullptr) {
    replaced = archive_detail::replace_last_entry(zip, bytes.span(), model_crc,
                                                  zip::declared_alignment(zip), file.fd(),
                                                  file_size, options.output.durable);
  } else {
    // spec §12.4: the integrity entries before the model are rewritten with it. In their place
    // (checked here) they are among the tail whose local headers were read, with the entry
    // before them.
    if (!place.misplaced.empty()) {
      throw Error(ErrorCode::kUnsupported, {.file = source},
                  place.misplaced + "; repack the archive to edit it");
    }
    std::optional<DigestStatement> statement;
    if (old_statement.valid()) statement = old_statement.get();
    const archive_detail::IntegrityRewrite rewrite = archive_detail::rewrite_for_model(
        zip, place, std::move(statement), bytes.span(), model_crc, options.signing_key);
    std::vector<zip::TailEntry> tail;
    if (!rewrite.digests.empty()) tail.push_back(text_entry(kDigestsEntryName, rewrite.digests));
    if (!rewrite.signature.empty()) {
      tail.push_back(text_entry(kSignatureEntryName, rewrite.signature));
    }
    tail.push_back({kModelEntryName, bytes.span(), model_crc});
    replaced = archive_detail::replace_last_entries(zip, place.tail_start, tail,
                                                    zip::declared_alignment(zip), file.fd(),
                                                    file_size, options.output.durable);
    result.digests_updated = !rewrite.digests.empty();
    result.signed_again = !rewrite.signature.empty();
    result.signature_removed = rewrite.signature_removed;
  }
  meter.advance(bytes.size());
  meter.finish();
  result.model_offset = replaced.local_header_offset;
  result.model_size = bytes.size();
  result.file_size = replaced.file_size;
  return result;
}

// The archive's own model, parsed whole into owned memory (ParseOptions{} copies): the edit
// rewrites the bytes it came from.
ModelProto parse_stored_model(ByteSpan stored, const std::string& source) {
  return parse_model(stored, ParseOptions{}, source);
}

// What edit_model_properties keeps out of the change's reach.
struct GraphParts {
  Box<GraphProto> graph;
  std::vector<TrainingInfoProto> training_info;
  std::vector<FunctionProto> functions;
};

GraphParts take_graph_parts(ModelProto& model) {
  GraphParts parts{std::move(model.graph), std::move(model.training_info),
                   std::move(model.functions)};
  model.graph.reset();
  model.training_info.clear();
  model.functions.clear();
  return parts;
}

void put_graph_parts(ModelProto& model, GraphParts parts) {
  model.graph = std::move(parts.graph);
  model.training_info = std::move(parts.training_info);
  model.functions = std::move(parts.functions);
}

void require_no_graph_parts(const ModelProto& properties, const std::string& source) {
  if (properties.graph || !properties.training_info.empty() || !properties.functions.empty()) {
    throw Error(ErrorCode::kInvalidArgument,
                source +
                    ": an edit of the model's properties gave it a graph, training_info or "
                    "functions: those are edited with edit_model");
  }
}

}  // namespace

EditResult replace_model(const std::filesystem::path& archive, const ModelProto& model,
                         const EditOptions& options) {
  return edit_archive(archive, options, [&](const ZipReader& zip, const ZipEntry& model_entry) {
    return check_and_serialize(model, zip, model_entry, archive.string());
  });
}

EditResult edit_model(const std::filesystem::path& archive,
                      const std::function<void(ModelProto&)>& change, const EditOptions& options) {
  return edit_archive(archive, options, [&](const ZipReader& zip, const ZipEntry& model_entry) {
    ModelProto model = parse_stored_model(zip.data(model_entry).view(), archive.string());
    change(model);
    return check_and_serialize(model, zip, model_entry, archive.string());
  });
}

EditResult edit_model_properties(const std::filesystem::path& archive,
                                 const std::function<void(ModelProto&)>& change,
                                 const EditOptions& options) {
  const std::string source = archive.string();
  return edit_archive(archive, options, [&](const ZipReader& zip, const ZipEntry& model_entry) {
    const TensorBytes stored = zip.data(model_entry);
    std::optional<detail::SplitModel> split;
    try {
      split = detail::split_model(stored.view(), ParseOptions{}, source);
    } catch (const Error&) {
      // Bytes the split does not take: the whole parse reports them as edit_model does, offsets
      // and all (or takes them).
    }
    if (!split) {
      ModelProto model = parse_stored_model(stored.view(), source);
      GraphParts parts = take_graph_parts(model);
      change(model);
      require_no_graph_parts(model, source);
      put_graph_parts(model, std::move(parts));
      return check_and_serialize(model, zip, model_entry, source);
    }
    ModelProto& properties = split->properties;
    change(properties);
    require_no_graph_parts(properties, source);
    if (std::optional<std::vector<bool>> referenced =
            check_kept_references(*split, zip, model_entry, source)) {
      return CheckedModel{detail::join_model(properties, split->kept), std::move(*referenced)};
    }
    // The walk cannot vouch for the references: the model is parsed whole and checked as
    // edit_model checks it, with the changed properties.
    ModelProto model = parse_stored_model(stored.view(), source);
    put_graph_parts(properties, take_graph_parts(model));
    return check_and_serialize(properties, zip, model_entry, source);
  });
}

SignResult sign_archive(const std::filesystem::path& archive, const SignOptions& options) {
  const std::string source = archive.string();
  const archive_detail::LockedArchive file(archive, options.output.follow_symlinks, options.wait);
  // Every entry is read, so every local header is: the tail rewrite needs the one before it.
  ZipReaderOptions every_header = zip_reader_options(options.limits);
  every_header.local_headers = LocalHeaderScope::kAll;
  const ZipReader zip = archive_detail::open_zip(ByteSource::of_file(file.map()), every_header);
  const ZipEntry* const model_entry =
      archive_detail::find_model_entry(zip, archive_detail::throwing_sink(source));
  const std::uint64_t file_size = file.size();
  const archive_detail::IntegrityPlace place =
      archive_detail::find_integrity_entries(zip, *model_entry);
  if (!place.misplaced.empty()) {
    throw Error(ErrorCode::kUnsupported, {.file = source},
                place.misplaced + "; repack the archive to sign it");
  }
  static_cast<void>(zip::entries_start(zip, place.tail_start, file_size));

  std::uint64_t total = 0;
  for (const ZipEntry& entry : zip.entries()) {
    if (!archive_detail::is_integrity_entry(entry.name)) total += entry.size;
  }
  detail::ProgressMeter meter(options.progress, total);
  std::vector<EntryDigest> digests;
  for (const ZipEntry& entry : zip.entries()) {
    if (archive_detail::is_integrity_entry(entry.name)) continue;
    digests.push_back(archive_detail::digest_entry(zip, entry, &meter));
  }
  SignResult result;
  result.entries = digests.size();
  const std::string statement = encode_digests(archive.stem().string(), std::move(digests));
  std::string signature;
  if (options.key) {
    signature = encode_signature(
        ByteSpan(reinterpret_cast<const std::uint8_t*>(statement.data()), statement.size()),
        *options.key);
    result.key_id = options.key->key_id();
  } else {
    result.signature_removed = place.signature != nullptr;
  }
  // The model is written again from a copy: its new place may overlap its old bytes.
  const TensorBytes stored_model = zip.data(*model_entry);
  const OwnedBytes model = OwnedBytes::copy_of(stored_model.view());
  std::vector<zip::TailEntry> tail{text_entry(kDigestsEntryName, statement)};
  if (!signature.empty()) tail.push_back(text_entry(kSignatureEntryName, signature));
  tail.push_back({kModelEntryName, model.span(), model_entry->crc32});
  meter.finish();
  file.check_path_names_it();
  const archive_detail::TailReplacement replaced = archive_detail::replace_last_entries(
      zip, place.tail_start, tail, zip::declared_alignment(zip), file.fd(), file_size,
      options.output.durable);
  result.file_size = replaced.file_size;
  return result;
}

}  // namespace onnxzip
