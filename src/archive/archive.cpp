// Reading .onnxz archives: load() and the Archive view (spec §9.4).
//
// Both open the ZIP (the ZipReader checks §9.1 to §9.3; an archive read in ranges over HTTP or
// S3 opens its ZipDirectory only), find `__MODEL_PROTO` last, parse it,
// and check every EXTERNAL reference (archive_references.cpp), without touching any payload byte
// unless asked to check CRCs or the entry is deflated. load() then points each external tensor's
// raw_data at its slice of the archive.
#include <atomic>
#include <optional>
#include <utility>

#include "archive_internal.h"
#include "crc32.h"
#include "integrity_entries.h"
#include "interrupted_edit.h"
#include "onnxzip/internal/byte_source.h"
#include "onnxzip/internal/http_source.h"
#include "onnxzip/internal/s3.h"
#include "onnxzip/internal/zip_reader.h"
#include "onnxzip/tensor.h"
#include "posix_file.h"

namespace onnxzip {
namespace {

using archive_detail::entry_payload;
using archive_detail::quote;

// Keys are views of the strings in ArchiveState::tensors, which does not change once opened.
using NameIndex = std::unordered_map<std::string_view, std::size_t>;

}  // namespace

struct detail::ArchiveState {
  explicit ArchiveState(ZipDirectory directory) : zip(std::move(directory)) {}

  // A ZipReader's for a local archive or bytes in memory (every entry located), a ZipDirectory's
  // for a remote one.
  ZipDirectory zip;
  TensorBytes model_bytes;
  ModelProto model;
  std::vector<Archive::TensorInfo> tensors;
  // The payload of tensors[i], borrowed with the token that keeps it alive; empty for every
  // tensor of an archive read in ranges (on_demand), whose payloads are read when asked for.
  std::vector<TensorBytes> payloads;
  bool on_demand = false;
  bool verify_crc = false;
  std::vector<const ZipEntry*> entries;  // The payload entry of tensors[i]; null when inline.
  // The TensorProto of each inline tensors[i] (in `model`), which payload() reads; else null
  // (also once drop_model kept the inline payloads in `payloads`).
  std::vector<const TensorProto*> inline_tensors;
  NameIndex by_name;
  NameIndex by_entry;
  // LoadOptions::check_digests: what `__DIGESTS` lists for each ZIP entry (by its index; null
  // for entries no tensor refers to), and whether the entry's bytes were found to match. Two
  // threads may both hash an entry not yet marked: the same outcome, and no lock.
  bool check_digests = false;
  DigestStatement digests;
  std::vector<const EntryDigest*> expected;
  std::unique_ptr<std::atomic<bool>[]> checked;
};

namespace {

ErrorContext entry_context(const ZipDirectory& zip, std::string_view name) {
  return {
      .file = zip.source_name(), .entry = "entry " + quote(name), .entry_name = std::string(name)};
}

// Throws unless `bytes` are what `__DIGESTS` lists for `entry` (spec §12.5).
void check_digest(const detail::ArchiveState& state, const ZipEntry& entry, ByteSpan bytes) {
  const EntryDigest& expected = *state.expected[entry.index];
  const Sha256Digest actual = Sha256::of(bytes);
  if (bytes.size() != expected.size || actual != expected.sha256) {
    throw Error(ErrorCode::kCorrupt, entry_context(state.zip, entry.name),
                "its SHA-256 is " + to_hex(actual) + ", __DIGESTS says " + to_hex(expected.sha256) +
                    ": its bytes are not those that were digested (spec §12.5)");
  }
}

// check_digest once per entry of an archive whose bytes do not change (mapped or in memory).
void check_digest_once(const detail::ArchiveState& state, const ZipEntry& entry, ByteSpan bytes) {
  std::atomic<bool>& checked = state.checked[entry.index];
  if (checked.load(std::memory_order_acquire)) return;
  check_digest(state, entry, bytes);
  checked.store(true, std::memory_order_release);
}

// LoadOptions::check_digests at open: `__DIGESTS` read and parsed, the model checked, the
// signature with a public key.
void open_digests(detail::ArchiveState& state, const ZipEntry& model_entry,
                  const LoadOptions& options) {
  const ZipDirectory& zip = state.zip;
  const archive_detail::IntegrityPlace place =
      archive_detail::find_integrity_entries(zip, model_entry);
  if (place.digests == nullptr) {
    throw Error(ErrorCode::kCorrupt, ErrorContext{.file = zip.source_name()},
                "has no __DIGESTS entry, so its bytes cannot be checked as was asked (" +
                    options.check_digests_name + "; `onnxzip sign` adds one)");
  }
  const TensorBytes digests_bytes = archive_detail::integrity_entry_bytes(
      zip, *place.digests, options.integrity.max_digests_size, "IntegrityLimits::max_digests_size");
  state.digests = decode_digests(digests_bytes.view(), options.integrity, zip.source_name());
  if (options.public_key) {
    if (place.signature == nullptr) {
      throw Error(ErrorCode::kCorrupt, ErrorContext{.file = zip.source_name()},
                  "has no __SIGNATURE entry, and a signature by key " +
                      options.public_key->key_id() + " was asked for");
    }
    const TensorBytes bytes = archive_detail::integrity_entry_bytes(
        zip, *place.signature, options.integrity.max_signature_size,
        "IntegrityLimits::max_signature_size");
    const SignatureBundle bundle =
        decode_signature(bytes.view(), options.integrity, zip.source_name());
    const std::string problem =
        signature_problem(bundle, digests_bytes.view(), *options.public_key);
    if (!problem.empty()) {
      throw Error(ErrorCode::kCorrupt, entry_context(zip, kSignatureEntryName),
                  problem + " (spec §12.5)");
    }
  }
  std::unordered_map<std::string_view, const EntryDigest*> listed;
  for (const EntryDigest& entry : state.digests.entries) listed.emplace(entry.name, &entry);
  state.expected.assign(zip.entries().size(), nullptr);
  state.checked = std::make_unique<std::atomic<bool>[]>(zip.entries().size());
  const auto expect = [&](const ZipEntry& entry) {
    const auto found = listed.find(entry.name);
    if (found == listed.end()) {
      throw Error(ErrorCode::kCorrupt, entry_context(zip, entry.name),
                  "not listed in __DIGESTS (spec §12.2), so its bytes cannot be checked");
    }
    if (found->second->size != entry.size) {
      throw Error(ErrorCode::kCorrupt, entry_context(zip, entry.name),
                  std::to_string(entry.size) + " bytes, __DIGESTS says " +
                      std::to_string(found->second->size) + " (spec §12.5)");
    }
    state.expected[entry.index] = found->second;
  };
  expect(model_entry);
  // The model is handed out now (model(), model_bytes()), so it is checked now.
  check_digest_once(state, model_entry, state.model_bytes.view());
  for (const ZipEntry* entry : state.entries) {
    if (entry != nullptr) expect(*entry);  // Null for an inline tensor.
  }
}

// The model's bytes, CRC-32 checked whatever LoadOptions::verify_crc says (a model that mixes two
// edits' bytes must not parse), in memory of their own: an in-place edit rewrites the tail of the
// file (spec §9.6), so bytes still in a mapping could change or vanish under the parsed model.
// The zip reader holds a mapped file's tail in memory already, unless the model is very large.
TensorBytes model_bytes_of(const ZipDirectory& zip, const ZipEntry& model_entry) {
  TensorBytes bytes = entry_payload(zip, model_entry, true);
  const ByteSpan mapped =
      zip.source().access() == ByteSource::Access::kMapped ? zip.bytes() : ByteSpan();
  const std::uint8_t* const first = bytes.view().data();
  if (!mapped.empty() && first >= mapped.data() && first < mapped.data() + mapped.size()) {
    return TensorBytes::copy_of(bytes.view());
  }
  return bytes;
}

// The model entry's bytes, checked and parsed (the payloads it refers to are borrowed).
const ZipEntry& open_model(detail::ArchiveState& state, const LoadOptions& options,
                           const archive_detail::IssueSink& fail) {
  const ZipDirectory& reader = state.zip;
  const ZipEntry* model_entry = archive_detail::find_model_entry(reader, fail);
  state.model_bytes = model_bytes_of(reader, *model_entry);
  state.model = with_error_context(
      [] {
        return ErrorContext{.entry = "entry " + quote(kModelEntryName),
                            .entry_name = std::string(kModelEntryName)};
      },
      [&] {
        return parse_message<ModelProto>(state.model_bytes.view(), state.model_bytes.owner(),
                                         options.parse, reader.source_name());
      });
  return *model_entry;
}

// An inline tensor that holds data, as a TensorInfo (spec/names.md): no entry, no offset, and
// `data` empty, since a typed field's payload has no raw bytes to lend (payload() converts it).
// Tensors without a fixed element size (STRING, UNDEFINED) and those whose payload breaks the
// payload rule (verify reports them) hold no payload to read and are left out.
void add_inline_tensor(detail::ArchiveState& state, const TensorProto& tensor,
                       const TensorSite& site) {
  const std::int32_t data_type = tensor.data_type.value_or(TensorProto::kUndefined);
  if (element_bits(data_type) == 0 || !payload_problem(tensor).empty()) return;
  Archive::TensorInfo& info = state.tensors.emplace_back();
  info.name = tensor.name.value_or("");
  info.site = std::string(site.path);
  info.data_type = data_type;
  info.dims = tensor.dims;
  info.size = tensor_byte_size(tensor);  // payload_problem found none of its errors.
  info.is_inline = true;
  info.zero_copy = false;
  state.entries.push_back(nullptr);
  state.payloads.emplace_back();
  state.inline_tensors.push_back(&tensor);
}

// Each tensor of the model that holds data, as a TensorInfo: an EXTERNAL one with its reference
// checked and its payload, an inline one as add_inline_tensor makes it. Returns whether each has
// a name (an empty one counts).
std::vector<bool> open_tensors(detail::ArchiveState& state, const LoadOptions& options,
                               const archive_detail::IssueSink& fail) {
  const ZipDirectory& reader = state.zip;
  // Each entry's payload is fetched once, however many tensors share it: the first tensor that
  // refers to entry e is first_tensor[e.index].
  constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  std::vector<std::size_t> first_tensor(reader.entries().size(), kNone);
  std::vector<bool> named;
  for_each_tensor(state.model, [&](const TensorProto& tensor, const TensorSite& site) {
    if (tensor.data_location != TensorProto::kExternal) {
      const std::size_t before = state.tensors.size();
      add_inline_tensor(state, tensor, site);
      if (state.tensors.size() != before) named.push_back(tensor.name.has_value());
      return;
    }
    const ZipEntry* entry = archive_detail::check_reference(tensor, site.path, reader, fail);
    const std::size_t index = state.tensors.size();
    std::size_t& first = first_tensor[entry->index];
    state.entries.push_back(entry);
    if (first == kNone) {
      const bool skip = state.on_demand || (entry->is_deflated() && !options.inflate_payloads);
      state.payloads.push_back(skip ? TensorBytes()
                                    : entry_payload(reader, *entry, options.verify_crc));
      first = index;
    } else {
      state.payloads.push_back(state.payloads[first]);
    }
    Archive::TensorInfo& info = state.tensors.emplace_back();
    info.name = tensor.name.value_or("");
    info.site = std::string(site.path);
    info.entry = entry->name;
    info.data_type = tensor.data_type.value_or(TensorProto::kUndefined);
    info.dims = tensor.dims;
    info.size = entry->size;
    // With check_digests no unchecked byte is handed out: payload() is the way to them.
    if (!state.check_digests) info.data = state.payloads.back().view();
    // Known for every entry a ZipReader read; of a directory's, for those the tail read holds
    // (their local headers checked now, at no cost).
    if (entry->local) {
      info.offset = entry->local->data_offset;
      info.alignment = entry->local->alignment();
    } else if (const std::optional<ZipEntry> located = reader.locate_held(*entry)) {
      info.offset = located->local->data_offset;
      info.alignment = located->local->alignment();
    }
    info.zero_copy = entry->zero_copy();
    state.inline_tensors.push_back(nullptr);
    named.push_back(tensor.name.has_value());
  });
  return named;
}

// Indexed once every TensorInfo is in place, since the keys are views of their strings.
void index_tensors(detail::ArchiveState& state, const std::vector<bool>& named) {
  state.by_name.reserve(state.tensors.size());
  state.by_entry.reserve(state.tensors.size());
  for (std::size_t i = 0; i < state.tensors.size(); ++i) {
    const Archive::TensorInfo& info = state.tensors[i];
    if (named[i]) state.by_name.try_emplace(info.name, i);
    if (!info.is_inline) state.by_entry.try_emplace(info.entry, i);
  }
}

// LoadOptions::keep_model false: each inline tensor's payload kept apart (raw_data shares its
// bytes, a typed field is converted once), then the parsed model let go.
void drop_model(detail::ArchiveState& state) {
  for (std::size_t i = 0; i < state.tensors.size(); ++i) {
    const TensorProto* const tensor = state.inline_tensors[i];
    if (tensor == nullptr) continue;
    state.payloads[i] =
        tensor->raw_data ? *tensor->raw_data : TensorBytes::owned(typed_data_to_raw(*tensor));
    state.inline_tensors[i] = nullptr;
  }
  state.model = ModelProto();
}

std::unique_ptr<detail::ArchiveState> open_state(ZipDirectory zip, const LoadOptions& options) {
  auto state = std::make_unique<detail::ArchiveState>(std::move(zip));
  state->on_demand = state->zip.source().access() == ByteSource::Access::kRanges;
  state->verify_crc = options.verify_crc;
  state->check_digests = options.check_digests || options.public_key.has_value();
  const archive_detail::IssueSink fail = archive_detail::throwing_sink(state->zip.source_name());
  const ZipEntry& model_entry = open_model(*state, options, fail);
  const std::vector<bool> named = open_tensors(*state, options, fail);
  if (state->check_digests) open_digests(*state, model_entry, options);
  index_tensors(*state, named);
  if (!options.keep_model) drop_model(*state);
  return state;
}

// An archive in a local file, opened so that an in-place edit overlapping the open (spec §9.6)
// gives the old archive, the new one, or Error(kChanged), never a false kCorrupt nor a model of
// neither: the tail is read under the readers' lock (kRead reads the whole file under it), and
// a mapped file that changed all the same while it was read is Error(kChanged) whatever the
// read found. Only the payloads stay in the mapping, below the bytes an edit rewrites.
std::unique_ptr<detail::ArchiveState> open_file_state(const std::filesystem::path& path,
                                                      const LoadOptions& options) {
  const std::shared_ptr<const MappedFile> file = MappedFile::open(path, options.access);
  return archive_detail::read_as_reader(*file, [&] {
    return open_state(
        archive_detail::open_zip(ByteSource::of_file(file), zip_reader_options(options.limits)),
        options);
  });
}

ZipReader open_zip(ByteSpan bytes, OwnerToken owner, const LoadOptions& options,
                   std::string source_name) {
  return archive_detail::open_zip(
      ByteSource::of_bytes(bytes, std::move(owner), std::move(source_name)),
      zip_reader_options(options.limits));
}

}  // namespace

Archive::Archive(std::unique_ptr<detail::ArchiveState> state) noexcept : state_(std::move(state)) {}
Archive::~Archive() = default;
Archive::Archive(Archive&& other) noexcept = default;
Archive& Archive::operator=(Archive&& other) noexcept = default;

Archive Archive::open(const std::filesystem::path& path, const LoadOptions& options) {
  return Archive(open_file_state(path, options));
}

Archive Archive::from_bytes(ByteSpan bytes, OwnerToken owner, const LoadOptions& options,
                            std::string source_name) {
  return Archive(
      open_state(open_zip(bytes, std::move(owner), options, std::move(source_name)), options));
}

ByteSpan Archive::model_bytes() const noexcept { return state_->model_bytes.view(); }
const ModelProto& Archive::model() const noexcept { return state_->model; }
const std::vector<Archive::TensorInfo>& Archive::tensors() const noexcept {
  return state_->tensors;
}

const Archive::TensorInfo* Archive::find_tensor(std::string_view name) const noexcept {
  const auto found = state_->by_name.find(name);
  return found == state_->by_name.end() ? nullptr : &state_->tensors[found->second];
}

const Archive::TensorInfo* Archive::find_entry(std::string_view entry) const noexcept {
  const auto found = state_->by_entry.find(entry);
  return found == state_->by_entry.end() ? nullptr : &state_->tensors[found->second];
}

Archive Archive::open(std::shared_ptr<const ByteSource> source, const LoadOptions& options) {
  if (source == nullptr) throw Error(ErrorCode::kInvalidArgument, "Archive::open: no source");
  ZipReaderOptions zip = zip_reader_options(options.limits);
  // What the source's open brought of the end is what the first read takes, and no more.
  if (source->tail_size_held() != 0) zip.tail_read_size = source->tail_size_held();
  // A source that reads ranges opens the directory only: nothing but the tail is read at open
  // (the local headers it holds checked, they cost no read); every other payload's local header
  // is read with its data.
  if (source->access() == ByteSource::Access::kRanges) {
    return Archive(open_state(archive_detail::open_zip_directory(std::move(source), zip), options));
  }
  return Archive(open_state(archive_detail::open_zip(std::move(source), zip), options));
}

Archive Archive::open_url(const std::string& url, const LoadOptions& options,
                          const HttpOptions& http) {
  return open(is_s3_url(url) ? open_s3_source(url, http, options.s3) : HttpSource::open(url, http),
              options);
}

TensorBytes Archive::payload(const TensorInfo& info) const {
  const TensorInfo* const tensors[] = {&info};
  return std::move(payloads(tensors).front());
}

std::vector<TensorBytes> Archive::payloads(std::span<const TensorInfo* const> infos) const {
  const detail::ArchiveState& state = *state_;
  std::vector<TensorBytes> out(infos.size());
  std::vector<const ZipEntry*> to_read;
  std::vector<std::size_t> read_for;
  for (std::size_t i = 0; i < infos.size(); ++i) {
    const TensorInfo* info = infos[i];
    if (info < state.tensors.data() || info >= state.tensors.data() + state.tensors.size()) {
      throw Error(ErrorCode::kInvalidArgument,
                  state.zip.source_name() + ": Archive::payloads: a TensorInfo of another archive");
    }
    const std::size_t index = static_cast<std::size_t>(info - state.tensors.data());
    if (info->is_inline) {
      // Owned: the model's raw_data may borrow from the archive, a typed field has no raw bytes.
      // Without the model (LoadOptions::keep_model), the payload open kept.
      const TensorProto* const tensor = state.inline_tensors[index];
      out[i] = tensor != nullptr ? TensorBytes::copy_of(RawPayload(*tensor).view())
                                 : state.payloads[index];
      continue;
    }
    const ZipEntry& entry = *state.entries[index];
    if (!state.on_demand) {
      // Empty only for a deflated entry left alone (LoadOptions::inflate_payloads).
      const bool left = state.payloads[index].empty() && entry.is_deflated();
      out[i] = left ? archive_detail::entry_payload(state.zip, entry, state.verify_crc)
                    : state.payloads[index];
      if (state.check_digests) check_digest_once(state, entry, out[i].view());
    } else {
      to_read.push_back(&entry);
      read_for.push_back(i);
    }
  }
  std::vector<TensorBytes> read = state.zip.data(to_read);
  for (std::size_t k = 0; k < read.size(); ++k) {
    const ZipEntry& entry = *to_read[k];
    if (state.verify_crc || entry.is_deflated()) {
      // Deflated entries were inflated by data(), whose CRC-32 check is spec §9.3 item 1's.
      state.zip.check_crc(entry, onnxzip::crc32(read[k].view()));
    }
    if (state.check_digests) check_digest(state, entry, read[k].view());
    out[read_for[k]] = std::move(read[k]);
  }
  return out;
}

const ZipDirectory& Archive::zip() const noexcept { return state_->zip; }
const OwnerToken& Archive::owner() const noexcept { return state_->zip.owner(); }

namespace {

// The payloads of an archive read in ranges (FileAccess::kRanges), whose open read none: read
// now, as Archive::payloads reads them.
void read_payloads(detail::ArchiveState& state) {
  std::vector<TensorBytes> read = state.zip.data(state.entries);
  for (std::size_t k = 0; k < read.size(); ++k) {
    const ZipEntry& entry = *state.entries[k];
    if (state.verify_crc || entry.is_deflated()) {
      state.zip.check_crc(entry, onnxzip::crc32(read[k].view()));
    }
    state.payloads[k] = std::move(read[k]);
  }
}

// Turns the references of `state`'s model into inline payloads, in the order open_state found
// them (for_each_tensor visits in the same order every time).
ModelProto resolve(detail::ArchiveState& state, const LoadOptions& options) {
  if (state.on_demand) read_payloads(state);
  ModelProto model = std::move(state.model);
  std::size_t next = 0;
  for_each_tensor(model, [&](TensorProto& tensor, const TensorSite&) {
    if (tensor.data_location != TensorProto::kExternal) return;
    while (state.tensors[next].is_inline) ++next;  // Inline tensors keep their payload.
    if (state.check_digests) {
      check_digest_once(state, *state.entries[next], state.payloads[next].view());
    }
    const TensorBytes& payload = state.payloads[next++];
    tensor.raw_data = options.parse.no_copy ? payload : TensorBytes::copy_of(payload.view());
    tensor.external_data.clear();
    tensor.data_location.reset();
  });
  return model;
}

// load() resolves every payload, so it inflates whatever inflate_payloads says.
LoadOptions inflating(LoadOptions options) {
  options.inflate_payloads = true;
  options.keep_model = true;  // resolve() turns it into the loaded model.
  return options;
}

}  // namespace

ModelProto load(const std::filesystem::path& path, const LoadOptions& options) {
  const LoadOptions resolving = inflating(options);
  const std::unique_ptr<detail::ArchiveState> state = open_file_state(path, resolving);
  return resolve(*state, resolving);
}

ModelProto load_bytes(ByteSpan archive_bytes, OwnerToken owner, const LoadOptions& options,
                      std::string_view source_name) {
  const LoadOptions resolving = inflating(options);
  const std::unique_ptr<detail::ArchiveState> state = open_state(
      open_zip(archive_bytes, std::move(owner), resolving, std::string(source_name)), resolving);
  return resolve(*state, resolving);
}

}  // namespace onnxzip
