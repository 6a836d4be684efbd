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
#include "bucket_tail.h"
#include "check.h"
#include "crc32.h"
#include "fast_path.h"
#include "integrity_entries.h"
#include "interrupted_edit.h"
#include "locked_archive.h"
#include "model_parts.h"
#include "onnxzip/internal/byte_source.h"
#include "onnxzip/internal/mapped_file.h"
#include "onnxzip/internal/s3.h"
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

using archive_detail::NewEntry;
using archive_detail::quote;

// Names in messages: the first few, then how many more.
constexpr std::size_t kNamesInMessage = 8;

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

  Payloads(const ZipDirectory& zip, const ZipEntry& model_entry) {
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

CheckedModel check_and_serialize(const ModelProto& model, const ZipDirectory& zip,
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

// The fast path of a property edit: the stored model split (split_model), its graph, functions
// and training_info kept as the bytes they are, their references checked in those bytes, tensor
// by tensor as the walk finds them (walk_kept_tensors), by the rule check_and_serialize applies to
// the parsed model, with its errors (the walk spells the same sites). Only references: an inline
// tensor may be large, and its payload is borrowed, not copied.
struct KeptGraph {
  detail::SplitModel split;
  std::vector<bool> referenced;  // Per zip entry index.
};

// The stored model kept as KeptGraph, or nullopt -- decided on the stored bytes alone, before any
// change -- when the kept bytes need what only the whole model gives: top-level fields the split
// does not take (parse_model reports them, offsets and all, or takes them), tensors the walk
// cannot vouch for (malformed, too deep, a singular message given twice, which protobuf merges),
// a reference to rewrite in canonical form. The plain twin, edit_properties_parsed, takes those.
std::optional<KeptGraph> keep_graph(ByteSpan stored, const ZipDirectory& zip,
                                    const ZipEntry& model_entry, const std::string& source) {
  if (!detail::splits_whole(stored)) return std::nullopt;
  KeptGraph kept{detail::split_model(stored, ParseOptions{}, source), {}};
  std::vector<std::pair<ByteSpan, std::string>> tensors;  // Bytes and site, in the bytes' order.
  const bool walked = detail::walk_kept_tensors(
      kept.split.kept, ParseOptions{}.max_depth,
      [&](ByteSpan bytes, const TensorSite& site) { tensors.emplace_back(bytes, site.path); });
  if (!walked) return std::nullopt;
  const Payloads payloads(zip, model_entry);
  kept.referenced.assign(zip.entries().size(), false);
  ParseOptions borrow;
  borrow.no_copy = true;
  borrow.raw_data_threshold = 0;
  for (const auto& [bytes, site] : tensors) {
    const TensorProto tensor = parse_message<TensorProto>(bytes, borrow, source);
    if (tensor.data_location != TensorProto::kExternal) continue;
    const std::size_t found = archive_detail::check_writer_reference(
        tensor, site, payloads.index, source, "which is not a payload entry of the archive");
    const archive_detail::PayloadIndex::Entry& entry = payloads.index.entries()[found];
    if (!archive_detail::is_canonical_reference(tensor, entry.location, entry.size)) {
      return std::nullopt;
    }
    kept.referenced[payloads.entry_of[found]] = true;
  }
  return kept;
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
std::future<DigestStatement> read_digests_ahead(const ZipDirectory& zip,
                                                const archive_detail::IntegrityPlace& place,
                                                const IntegrityLimits& limits) {
  if (place.digests == nullptr || !place.misplaced.empty()) return {};
  const auto read = [&zip, &entry = *place.digests, limits] {
    return archive_detail::read_digests(zip, entry, limits);
  };
  if (detail::default_task_threads() > 1 && detail::fast_path_on(detail::FastPath::kDigestsAhead)) {
    try {
      return std::async(std::launch::async, read);
    } catch (const std::system_error&) {
      // No thread to be had: the statement is read when it is needed.
    }
  }
  return std::async(std::launch::deferred, read);
}

// The model an edit puts in, made from the archive's ZIP (the caller's, or the stored one
// changed), checked: the three edits differ only there.
using PrepareModel = std::function<CheckedModel(const ZipDirectory&, const ZipEntry& model_entry)>;

// The payload entries no tensor of the checked model refers to.
std::vector<std::string> unreferenced_entries(const ZipDirectory& zip, const ZipEntry& model_entry,
                                              const CheckedModel& checked) {
  std::vector<std::string> unreferenced;
  for (const ZipEntry& entry : zip.entries()) {
    if (entry.index != model_entry.index && !entry.name.starts_with("__") &&
        !checked.referenced[entry.index]) {
      unreferenced.push_back(entry.name);
    }
  }
  return unreferenced;
}

[[noreturn]] void refuse_unreferenced(const std::vector<std::string>& unreferenced,
                                      const std::string& source) {
  const bool one = unreferenced.size() == 1;
  throw Error(ErrorCode::kInvalidArgument, {.file = source},
              std::string("no tensor of the new model refers to ") + (one ? "entry " : "entries ") +
                  name_list(unreferenced) +
                  " (spec §7.2: every payload entry must be referred to); refer to " +
                  (one ? "it" : "them") +
                  " (a tensor holding the same bytes inline may refer instead), or, to " +
                  "delete " + (one ? "its" : "their") + " bytes from the archive, compact it");
}

NewEntry text_entry(std::string_view name, const std::string& text) {
  const ByteSpan bytes(reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
  return {std::string(name), OwnedBytes::copy_of(bytes), crc32(bytes)};
}

// The new tail for `model`, with the integrity entries before it rewritten (spec §12.4) when the
// archive has them; `result` says what became of them.
archive_detail::NewTail tail_for_model(const ZipDirectory& zip, std::uint64_t start,
                                       const archive_detail::IntegrityPlace& place,
                                       std::future<DigestStatement>& old_statement,
                                       OwnedBytes model, const EditOptions& options,
                                       EditResult& result) {
  const std::uint32_t model_crc = crc32(model.span());
  std::vector<NewEntry> entries;
  if (place.digests != nullptr || place.signature != nullptr) {
    // In their place (checked here) the integrity entries are among the tail whose local
    // headers were read, with the entry before them.
    if (!place.misplaced.empty()) {
      throw Error(ErrorCode::kUnsupported, {.file = zip.source_name()},
                  place.misplaced + "; repack the archive to edit it");
    }
    std::optional<DigestStatement> statement;
    if (old_statement.valid()) statement = old_statement.get();
    const archive_detail::IntegrityRewrite rewrite = archive_detail::rewrite_for_model(
        zip, place, std::move(statement), model.span(), model_crc, options.signing_key);
    if (!rewrite.digests.empty()) entries.push_back(text_entry(kDigestsEntryName, rewrite.digests));
    if (!rewrite.signature.empty()) {
      entries.push_back(text_entry(kSignatureEntryName, rewrite.signature));
    }
    result.digests_updated = !rewrite.digests.empty();
    result.signed_again = !rewrite.signature.empty();
    result.signature_removed = rewrite.signature_removed;
  }
  result.model_size = model.size();
  entries.push_back({std::string(kModelEntryName), std::move(model), model_crc});
  return archive_detail::make_new_tail(zip, place.tail_start, start, std::move(entries));
}

// What an edit makes of the archive `zip` read from `size` bytes: the new tail (the model
// `prepare` makes, and the integrity entries), or -- when that model leaves entries no tensor
// refers to and the caller asked to compact -- the model alone, for a rewrite of the archive.
// Reads nothing but the tail, writes nothing.
struct EditPlan {
  std::optional<archive_detail::NewTail> tail;
  CheckedModel compacted;  // When there is no tail.
  EditResult result;
};

EditPlan plan_edit(const ZipDirectory& zip, std::uint64_t size, const EditOptions& options,
                   const PrepareModel& prepare) {
  const std::string& source = zip.source_name();
  const ZipEntry* const model_entry =
      archive_detail::find_model_entry(zip, archive_detail::throwing_sink(source));
  const archive_detail::IntegrityPlace place =
      archive_detail::find_integrity_entries(zip, *model_entry);
  // Before any work on the model: an archive whose tail cannot be replaced in place. Where the
  // tail starts is read here once (from a bucket, the header before it may cost a request).
  const std::uint64_t start = zip::entries_start(zip, place.tail_start, size);
  std::future<DigestStatement> old_statement = read_digests_ahead(zip, place, options.integrity);
  CheckedModel checked = prepare(zip, *model_entry);
  // The statement may still be on its way: time for the signature's setup.
  if (options.signing_key && old_statement.valid()) prepare_signing();

  EditPlan plan;
  const std::vector<std::string> unreferenced = unreferenced_entries(zip, *model_entry, checked);
  if (!unreferenced.empty()) {
    if (!options.compact) refuse_unreferenced(unreferenced, source);
    plan.compacted = std::move(checked);
    return plan;
  }
  plan.tail = tail_for_model(zip, start, place, old_statement, std::move(checked.bytes), options,
                             plan.result);
  return plan;
}

// The archive written anew at its path with the compacted model, without the entries no tensor
// refers to: it copies every entry it keeps, so it reads them all, checked as any reader does.
EditResult compact_in_place(const archive_detail::LockedArchive& file,
                            const std::filesystem::path& archive, const ZipDirectory& tail_zip,
                            const CheckedModel& model, const EditOptions& options) {
  const ZipReader whole =
      archive_detail::open_zip(ByteSource::of_file(file.map()), zip_reader_options(options.limits));
  const ZipEntry* const model_entry =
      archive_detail::find_model_entry(whole, archive_detail::throwing_sink(archive.string()));
  ONNXZIP_DCHECK(whole.entries().size() == tail_zip.entries().size());
  file.check_path_names_it();
  EditResult result =
      compact(archive, whole, *model_entry, model.referenced, model.bytes.span(), options);
  result.file_size = std::filesystem::file_size(archive);
  return result;
}

// Writes the new tail over the file's, crash-safe (spec §9.6).
EditResult write_in_place(const archive_detail::LockedArchive& file, const ZipDirectory& zip,
                          const archive_detail::NewTail& tail, EditResult result,
                          const EditOptions& options) {
  detail::ProgressMeter meter(options.progress, result.model_size);
  file.check_path_names_it();
  const archive_detail::TailReplacement replaced =
      archive_detail::replace_tail(zip, tail, file.fd(), file.size(), options.output.durable);
  meter.advance(result.model_size);
  meter.finish();
  result.model_offset = replaced.local_header_offset;
  result.file_size = replaced.file_size;
  return result;
}

// Writes the new tail into the object `source` was read from, after its prefix copied inside the
// store (bucket_tail.h).
EditResult write_to_bucket(const HttpSource& source, const ZipDirectory& zip,
                           const archive_detail::NewTail& tail, EditResult result,
                           const EditOptions& options) {
  detail::ProgressMeter meter(options.progress, result.model_size);
  const archive_detail::BucketReplacement replaced =
      archive_detail::replace_tail_in_bucket(source, zip, tail, options.s3);
  meter.advance(result.model_size);
  meter.finish();
  result.model_offset = replaced.local_header_offset;
  result.file_size = replaced.object_size;
  result.object_rewritten = replaced.rewritten_whole;
  return result;
}

// The ZIP of an object in a bucket, read for an edit: its directory, whose entries are located
// as the edit reads them -- the tail it rewrites and the entry before it, and no others: each
// local header outside the open's suffix read costs a request. The tail (the model and the
// integrity entries before it) comes in that read, or in one more when it does not fit.
ZipDirectory open_bucket_tail(const std::shared_ptr<const HttpSource>& source,
                              const ReadLimits& limits) {
  ZipReaderOptions options = zip_reader_options(limits);
  options.held_with_last = {std::string(kDigestsEntryName), std::string(kSignatureEntryName)};
  return archive_detail::open_zip_directory(source, options);
}

// The edit of an object in a bucket: its tail read (the open's suffix GET), the plan a local edit
// makes, and its new tail uploaded. No lock: the upload's Complete is conditional on the ETag read.
EditResult edit_in_bucket(const std::string& url, const EditOptions& options,
                          const PrepareModel& prepare) {
  const std::shared_ptr<const HttpSource> source = open_s3_source(url, {}, options.s3);
  const ZipDirectory zip = open_bucket_tail(source, options.limits);
  EditPlan plan = plan_edit(zip, source->size(), options, prepare);
  if (!plan.tail) {
    throw Error(ErrorCode::kUnsupported, {.file = url},
                "compacting an archive in a bucket rewrites every entry: download it, edit it "
                "with compact, and upload it");
  }
  return write_to_bucket(*source, zip, *plan.tail, std::move(plan.result), options);
}

// Opens and locks the archive, reads its tail once, and puts in the model `prepare` makes. An
// s3://bucket/key names an object in a bucket, edited there.
EditResult edit_archive(const std::filesystem::path& archive, const EditOptions& options,
                        const PrepareModel& prepare) {
  if (is_s3_url(archive.native())) return edit_in_bucket(archive.native(), options, prepare);
  const archive_detail::LockedArchive file(archive, options.output.follow_symlinks, options.wait);
  // The directory, read with pread, never mapped: the tail is all the edit reads (the local
  // headers of the entries it rewrites and of the one before them: zip::entries_start), and a
  // file larger than the address space is edited all the same.
  const ZipDirectory zip = archive_detail::open_zip_directory(
      ByteSource::of_file(file.map(FileAccess::kRanges)), zip_reader_options(options.limits));
  EditPlan plan = plan_edit(zip, file.size(), options, prepare);
  if (!plan.tail) return compact_in_place(file, archive, zip, plan.compacted, options);
  return write_in_place(file, zip, *plan.tail, std::move(plan.result), options);
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

// A property edit on the kept graph (keep_graph's): only the properties are parsed and written.
CheckedModel edit_properties_kept(KeptGraph& kept, const std::function<void(ModelProto&)>& change,
                                  const std::string& source) {
  ModelProto& properties = kept.split.properties;
  change(properties);
  require_no_graph_parts(properties, source);
  return CheckedModel{detail::join_model(properties, kept.split.kept), std::move(kept.referenced)};
}

// The plain twin of edit_properties_kept: the model parsed whole, the change given it without its
// graph parts, checked and written whole as edit_model writes it.
CheckedModel edit_properties_parsed(ByteSpan stored, const ZipDirectory& zip,
                                    const ZipEntry& model_entry,
                                    const std::function<void(ModelProto&)>& change,
                                    const std::string& source) {
  ModelProto model = parse_stored_model(stored, source);
  GraphParts parts = take_graph_parts(model);
  change(model);
  require_no_graph_parts(model, source);
  put_graph_parts(model, std::move(parts));
  return check_and_serialize(model, zip, model_entry, source);
}

// What signing makes of the archive `zip` read from `size` bytes (every entry readable): a
// `__DIGESTS` statement named `name` of every entry's bytes, hashed here, signed with the
// options' key or unsigned, and the model after them, as the new tail. Writes nothing.
struct SignPlan {
  archive_detail::NewTail tail;
  SignResult result;
};

SignPlan plan_sign(const ZipDirectory& zip, std::uint64_t size, const std::string& name,
                   const SignOptions& options) {
  const std::string& source = zip.source_name();
  const ZipEntry* const model_entry =
      archive_detail::find_model_entry(zip, archive_detail::throwing_sink(source));
  const archive_detail::IntegrityPlace place =
      archive_detail::find_integrity_entries(zip, *model_entry);
  if (!place.misplaced.empty()) {
    throw Error(ErrorCode::kUnsupported, {.file = source},
                place.misplaced + "; repack the archive to sign it");
  }
  const std::uint64_t start = zip::entries_start(zip, place.tail_start, size);

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
  SignPlan plan;
  plan.result.entries = digests.size();
  const std::string statement = encode_digests(name, std::move(digests));
  std::vector<NewEntry> entries{text_entry(kDigestsEntryName, statement)};
  if (options.key) {
    const ByteSpan signed_bytes(reinterpret_cast<const std::uint8_t*>(statement.data()),
                                statement.size());
    entries.push_back(
        text_entry(kSignatureEntryName, encode_signature(signed_bytes, *options.key)));
    plan.result.key_id = options.key->key_id();
  } else {
    plan.result.signature_removed = place.signature != nullptr;
  }
  // The model is written again from a copy: its new place may overlap its old bytes.
  entries.push_back({std::string(kModelEntryName),
                     OwnedBytes::copy_of(zip.data(*model_entry).view()), model_entry->crc32});
  meter.finish();
  plan.tail = archive_detail::make_new_tail(zip, place.tail_start, start, std::move(entries));
  return plan;
}

// The stored model as it is, every payload entry referred to: an edit that changes nothing but
// the integrity entries.
CheckedModel stored_model(const ZipDirectory& zip, const ZipEntry& model_entry) {
  return {OwnedBytes::copy_of(zip.data(model_entry).view()),
          std::vector<bool>(zip.entries().size(), true)};
}

// Signing an object whose `__DIGESTS` is in its place: the statement it holds signed as it
// stands, the model's digest checked again, as an edit with a key does -- hashing every entry
// would read the whole object. Without a key the signature goes.
SignResult sign_statement_in_bucket(const HttpSource& source, const ZipDirectory& zip,
                                    const ZipEntry& digests, const SignOptions& options) {
  EditOptions edit;
  edit.limits = options.limits;
  edit.signing_key = options.key;
  edit.progress = options.progress;
  edit.s3 = options.s3;
  EditPlan plan = plan_edit(zip, source.size(), edit, stored_model);
  SignResult result;
  result.entries = archive_detail::read_digests(zip, digests, edit.integrity).entries.size();
  if (options.key) result.key_id = options.key->key_id();
  result.signature_removed = plan.result.signature_removed;
  result.file_size = write_to_bucket(source, zip, *plan.tail, plan.result, edit).file_size;
  return result;
}

// Signing an object in a bucket. Without `__DIGESTS` (or with it out of place) every entry is
// hashed, read by ranged GETs (SignResult::entries_read); the new tail alone is uploaded either
// way.
SignResult sign_in_bucket(const std::string& url, const SignOptions& options) {
  const std::shared_ptr<const HttpSource> source = open_s3_source(url, {}, options.s3);
  const ZipDirectory tail = open_bucket_tail(source, options.limits);
  const ZipEntry* const model_entry =
      archive_detail::find_model_entry(tail, archive_detail::throwing_sink(url));
  const archive_detail::IntegrityPlace place =
      archive_detail::find_integrity_entries(tail, *model_entry);
  if (place.digests != nullptr && place.misplaced.empty()) {
    return sign_statement_in_bucket(*source, tail, *place.digests, options);
  }
  // The open's tail is held by the source: reading the directory again costs no request.
  const ZipReader zip = archive_detail::open_zip(source, zip_reader_options(options.limits));
  SignPlan plan =
      plan_sign(zip, source->size(), std::filesystem::path(url).stem().string(), options);
  plan.result.entries_read = true;
  EditResult written;
  written.model_size = plan.tail.entries.back().data.size();
  EditOptions upload;
  upload.s3 = options.s3;
  plan.result.file_size = write_to_bucket(*source, zip, plan.tail, written, upload).file_size;
  return plan.result;
}

}  // namespace

EditResult replace_model(const std::filesystem::path& archive, const ModelProto& model,
                         const EditOptions& options) {
  return edit_archive(archive, options, [&](const ZipDirectory& zip, const ZipEntry& model_entry) {
    return check_and_serialize(model, zip, model_entry, archive.string());
  });
}

EditResult edit_model(const std::filesystem::path& archive,
                      const std::function<void(ModelProto&)>& change, const EditOptions& options) {
  return edit_archive(archive, options, [&](const ZipDirectory& zip, const ZipEntry& model_entry) {
    ModelProto model = parse_stored_model(zip.data(model_entry).view(), archive.string());
    change(model);
    return check_and_serialize(model, zip, model_entry, archive.string());
  });
}

EditResult edit_model_properties(const std::filesystem::path& archive,
                                 const std::function<void(ModelProto&)>& change,
                                 const EditOptions& options) {
  const std::string source = archive.string();
  return edit_archive(archive, options, [&](const ZipDirectory& zip, const ZipEntry& model_entry) {
    const TensorBytes stored = zip.data(model_entry);
    if (std::optional<KeptGraph> kept = keep_graph(stored.view(), zip, model_entry, source)) {
      return edit_properties_kept(*kept, change, source);
    }
    return edit_properties_parsed(stored.view(), zip, model_entry, change, source);
  });
}

SignResult sign_archive(const std::filesystem::path& archive, const SignOptions& options) {
  if (is_s3_url(archive.native())) return sign_in_bucket(archive.native(), options);
  const archive_detail::LockedArchive file(archive, options.output.follow_symlinks, options.wait);
  // Every entry is read, so every local header is (the checked reader).
  const ZipReader zip =
      archive_detail::open_zip(ByteSource::of_file(file.map()), zip_reader_options(options.limits));
  SignPlan plan = plan_sign(zip, file.size(), archive.stem().string(), options);
  file.check_path_names_it();
  const archive_detail::TailReplacement replaced =
      archive_detail::replace_tail(zip, plan.tail, file.fd(), file.size(), options.output.durable);
  plan.result.file_size = replaced.file_size;
  return plan.result;
}

}  // namespace onnxzip
