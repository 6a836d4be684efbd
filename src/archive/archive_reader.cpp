// Reading .onnxz archives: load() and the Archive view (spec §9.4).
//
// Both open the ZIP (the ZipReader checks §9.1 to §9.3), find `__MODEL_PROTO` last, parse it,
// and check every EXTERNAL reference (archive_references.cpp), without touching any payload byte
// unless asked to check CRCs or the entry is deflated. load() then points each external tensor's
// raw_data at its slice of the archive.
#include <optional>
#include <utility>

#include "archive_internal.h"
#include "interrupted_edit.h"
#include "onnxzip/byte_source.h"
#include "onnxzip/tensor.h"

namespace onnxzip {
namespace {

using archive_detail::entry_payload;
using archive_detail::quote;

// Keys are views of the strings in ArchiveState::tensors, which does not change once opened.
using NameIndex = std::unordered_map<std::string_view, std::size_t>;

}  // namespace

struct detail::ArchiveState {
  explicit ArchiveState(ZipReader reader) : zip(std::move(reader)) {}

  ZipReader zip;
  TensorBytes model_bytes;
  ModelProto model;
  std::vector<Archive::TensorInfo> tensors;
  // The payload of tensors[i], borrowed with the token that keeps it alive.
  std::vector<TensorBytes> payloads;
  NameIndex by_name;
  NameIndex by_location;
};

namespace {

std::unique_ptr<detail::ArchiveState> open_state(ZipReader zip, const LoadOptions& options) {
  auto state = std::make_unique<detail::ArchiveState>(std::move(zip));
  const ZipReader& reader = state->zip;
  const std::string& source = reader.source_name();
  const archive_detail::IssueSink fail = archive_detail::throwing_sink(source);

  const ZipEntry* model_entry = archive_detail::find_model_entry(reader, fail);
  state->model_bytes = entry_payload(reader, *model_entry, options.verify_crc);
  state->model = with_error_context(
      [] { return ErrorContext{.entry = "entry " + quote(kModelEntryName)}; },
      [&] {
        return parse_message<ModelProto>(state->model_bytes.view(), state->model_bytes.owner(),
                                         options.parse, source);
      });

  // Each entry's payload is fetched once, however many tensors share it: the first tensor that
  // refers to entry e is first_tensor[e.index].
  constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  std::vector<std::size_t> first_tensor(reader.entries().size(), kNone);
  std::vector<bool> named;  // Whether tensors[i] has a name (an empty one counts).
  for_each_tensor(state->model, [&](const TensorProto& tensor, const TensorSite& site) {
    if (tensor.data_location != TensorProto::kExternal) return;
    const ZipEntry* entry = archive_detail::check_reference(tensor, site.path, reader, fail);
    const std::size_t index = state->tensors.size();
    std::size_t& first = first_tensor[entry->index];
    if (first == kNone) {
      const bool skip = entry->is_deflated() && !options.inflate_payloads;
      state->payloads.push_back(skip ? TensorBytes()
                                     : entry_payload(reader, *entry, options.verify_crc));
      first = index;
    } else {
      state->payloads.push_back(state->payloads[first]);
    }
    Archive::TensorInfo& info = state->tensors.emplace_back();
    info.tensor_name = tensor.name.value_or("");
    info.site = std::string(site.path);
    info.location = entry->name;
    info.data_type = tensor.data_type.value_or(TensorProto::kUndefined);
    info.dims = tensor.dims;
    info.data = state->payloads.back().view();
    info.file_offset = entry->data_offset;
    info.alignment = entry->alignment();
    info.zero_copy = entry->zero_copy();
    named.push_back(tensor.name.has_value());
  });
  // Indexed once every TensorInfo is in place, since the keys are views of their strings.
  state->by_name.reserve(state->tensors.size());
  state->by_location.reserve(state->tensors.size());
  for (std::size_t i = 0; i < state->tensors.size(); ++i) {
    const Archive::TensorInfo& info = state->tensors[i];
    if (named[i]) state->by_name.try_emplace(info.tensor_name, i);
    state->by_location.try_emplace(info.location, i);
  }
  return state;
}

ZipReader open_zip(const std::filesystem::path& path, const LoadOptions& options) {
  return archive_detail::open_zip(path, options.zip, options.access);
}

ZipReader open_zip(ByteSpan bytes, OwnerToken owner, const LoadOptions& options,
                   std::string source_name) {
  return archive_detail::open_zip(
      ByteSource::of_bytes(bytes, std::move(owner), std::move(source_name)), options.zip);
}

}  // namespace

Archive::Archive(std::unique_ptr<detail::ArchiveState> state) noexcept : state_(std::move(state)) {}
Archive::~Archive() = default;
Archive::Archive(Archive&& other) noexcept = default;
Archive& Archive::operator=(Archive&& other) noexcept = default;

Archive Archive::open(const std::filesystem::path& path, const LoadOptions& options) {
  return Archive(open_state(open_zip(path, options), options));
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

const Archive::TensorInfo* Archive::find_tensor(std::string_view tensor_name) const noexcept {
  const auto found = state_->by_name.find(tensor_name);
  return found == state_->by_name.end() ? nullptr : &state_->tensors[found->second];
}

const Archive::TensorInfo* Archive::find_location(std::string_view location) const noexcept {
  const auto found = state_->by_location.find(location);
  return found == state_->by_location.end() ? nullptr : &state_->tensors[found->second];
}

const ZipReader& Archive::zip() const noexcept { return state_->zip; }
const OwnerToken& Archive::owner() const noexcept { return state_->zip.owner(); }

namespace {

// Turns the references of `state`'s model into inline payloads, in the order open_state found
// them (for_each_tensor visits in the same order every time).
ModelProto resolve(detail::ArchiveState& state, const LoadOptions& options) {
  ModelProto model = std::move(state.model);
  std::size_t next = 0;
  for_each_tensor(model, [&](TensorProto& tensor, const TensorSite&) {
    if (tensor.data_location != TensorProto::kExternal) return;
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
  return options;
}

}  // namespace

ModelProto load(const std::filesystem::path& path, const LoadOptions& options) {
  const LoadOptions resolving = inflating(options);
  const std::unique_ptr<detail::ArchiveState> state =
      open_state(open_zip(path, resolving), resolving);
  return resolve(*state, resolving);
}

ModelProto load(ByteSpan archive_bytes, OwnerToken owner, const LoadOptions& options,
                std::string_view source_name) {
  const LoadOptions resolving = inflating(options);
  const std::unique_ptr<detail::ArchiveState> state = open_state(
      open_zip(archive_bytes, std::move(owner), resolving, std::string(source_name)), resolving);
  return resolve(*state, resolving);
}

}  // namespace onnxzip
