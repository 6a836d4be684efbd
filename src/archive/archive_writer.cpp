// Writing .onnxz archives: save() and the streaming ArchiveWriter (spec §2 to §7).
//
// The caller's model is never modified or copied. Payload entries are written straight from each
// tensor's raw_data (a typed-field payload is converted one tensor at a time and freed), then
// `__MODEL_PROTO` is streamed by the codec with a TensorSubstitutions map that makes every
// externalized tensor serialize as its metadata-only reference.
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <utility>

#include "archive_internal.h"
#include "check.h"
#include "crc32.h"
#include "onnxzip/integrity.h"
#include "onnxzip/internal/protobuf_wire.h"
#include "onnxzip/tensor.h"
#include "progress_meter.h"
#include "zip_writer.h"

namespace onnxzip {
namespace {

using archive_detail::make_reference;
using archive_detail::quote;

// The model's bytes as the codec streams them, hashed and CRC-ed before they are written.
class DigestingByteSink final : public wire::ByteSink {
 public:
  void write(ByteSpan bytes) override {
    hasher.update(bytes);
    crc = crc32(bytes, crc);
    size += bytes.size();
  }
  Sha256 hasher;
  std::uint32_t crc = 0;
  std::uint64_t size = 0;
};

// Feeds the codec's streamed output into a ZIP entry.
class EntrySinkAdapter final : public wire::ByteSink {
 public:
  explicit EntrySinkAdapter(EntrySink& sink) noexcept : sink_(sink) {}
  void write(ByteSpan bytes) override { sink_.write(bytes); }

 private:
  EntrySink& sink_;
};

bool is_sparse_place(TensorPlace place) noexcept {
  switch (place) {
    case TensorPlace::kSparseInitializerValues:
    case TensorPlace::kSparseInitializerIndices:
    case TensorPlace::kAttributeSparseTensorValues:
    case TensorPlace::kAttributeSparseTensorIndices:
    case TensorPlace::kAttributeSparseTensorsValues:
    case TensorPlace::kAttributeSparseTensorsIndices:
      return true;
    case TensorPlace::kInitializer:
    case TensorPlace::kAttributeTensor:
    case TensorPlace::kAttributeTensors:
      break;
  }
  return false;
}

// save()'s rule before the threshold (spec §7.4): whether an inline tensor at `place` may become
// an entry. Those that may are checked whatever their size; those at or above the threshold are.
bool may_externalize(const TensorProto& tensor, TensorPlace place,
                     const SaveOptions& options) noexcept {
  if (is_sparse_place(place) && !options.externalize_sparse) return false;
  // STRING, UNDEFINED and unknown types stay inline.
  return element_bits(tensor.data_type.value_or(TensorProto::kUndefined)) != 0;
}

// A tensor finish() moves into an entry of its own (or shares, with dedupe).
struct Candidate {
  const TensorProto* tensor;
  std::uint64_t size;
};

// An entry written from a model tensor, for dedupe: its bytes are read again from the tensor.
struct WrittenPayload {
  std::string location;
  const TensorProto* tensor;
};

}  // namespace

void TensorRef::apply_to(TensorProto& tensor) const {
  tensor.data_location = TensorProto::kExternal;
  tensor.external_data.clear();
  StringStringEntryProto& where = tensor.external_data.emplace_back();
  where.key = std::string(archive_detail::kLocationKey);
  where.value = location;
  StringStringEntryProto& size = tensor.external_data.emplace_back();
  size.key = std::string(archive_detail::kLengthKey);
  size.value = std::to_string(length);
  tensor.raw_data.reset();
  clear_typed_data(tensor);
}

struct ArchiveWriter::State {
  State(const std::filesystem::path& path, const SaveOptions& save_options)
      : options(save_options),
        zip(path, ZipWriterOptions{.alignment = save_options.alignment,
                                   .output = save_options.output,
                                   .s3 = save_options.s3}),
        source(path.string()) {}
  State(const std::filesystem::path& path, const SaveOptions& save_options, ZipWriter resumed)
      : options(save_options), zip(std::move(resumed)), source(path.string()) {}

  void ensure_open(const char* operation) const {
    if (finished) {
      throw Error(ErrorCode::kBadState, {.file = source},
                  std::string(operation) + " after finish()");
    }
    if (broken) {
      throw Error(ErrorCode::kBadState, {.file = source},
                  std::string(operation) + " after a failed write; the archive is abandoned");
    }
  }

  // Plans the model: checks its EXTERNAL tensors against the added entries (substituting their
  // canonical form), picks the inline tensors to externalize. Writes nothing, so a failure leaves
  // the writer usable.
  std::vector<Candidate> plan(const ModelProto& model, TensorSubstitutions& substitutions) const;
  // Writes one candidate's entry (or finds its twin, with dedupe); returns the location.
  std::string write_candidate(const Candidate& candidate, detail::ProgressMeter& meter);
  void check_added_tensor(std::string_view tensor_name, std::int32_t data_type,
                          std::span<const std::int64_t> dims, std::uint64_t size) const;
  TensorRef remember(const WrittenEntry& written);
  // zip.add, hashing the entry with options.digests; `check` is given the entry's CRC-32.
  const WrittenEntry& add_entry(std::string_view name, ByteSpan bytes,
                                const PayloadCrcCheck& check = nullptr);
  const WrittenEntry& add_entry(std::string_view name, std::uint64_t size,
                                const EntryProducer& producer, const PayloadCrcCheck& check);
  // What zip.add calls once an entry's CRC-32 is known: `check`, then with options.digests the
  // entry's digest, from `hasher`, which saw its bytes, is kept for `__DIGESTS`.
  EntryDone on_entry_done(std::shared_ptr<Sha256> hasher, const PayloadCrcCheck& check);

  SaveOptions options;
  ZipWriter zip;
  std::string source;
  EntryNamer namer;
  archive_detail::PayloadIndex added;
  std::map<std::pair<std::uint64_t, std::uint32_t>, std::vector<WrittenPayload>> by_content;
  std::vector<EntryDigest> digests;       // With options.digests: every entry written.
  std::optional<PrivateKey> signing_key;  // Signs `__DIGESTS` (ResumedWriter).
  bool finished = false;
  bool broken = false;
};

std::uint64_t archive_detail::added_payload_size(const std::string& label, std::int32_t data_type,
                                                 std::span<const std::int64_t> dims) {
  if (element_bits(data_type) == 0) {
    const std::string_view type_name = data_type_name(data_type);
    throw Error(ErrorCode::kInvalidArgument, {.file = label},
                "data type " + std::to_string(data_type) +
                    (type_name.empty() ? "" : " (" + std::string(type_name) + ")") +
                    " has no fixed element size, so it cannot be a payload entry (spec §7.2)");
  }
  try {
    return tensor_byte_size(dims, data_type, "dims");
  } catch (const Error& e) {
    // The caller's dims: an invalid argument, whatever code the size helper gives it.
    throw Error(ErrorCode::kInvalidArgument, {.file = label}, e.message());
  }
}

void ArchiveWriter::State::check_added_tensor(std::string_view tensor_name, std::int32_t data_type,
                                              std::span<const std::int64_t> dims,
                                              std::uint64_t size) const {
  const std::string label = source + ": add_tensor " + quote(tensor_name);
  const std::uint64_t expected = archive_detail::added_payload_size(label, data_type, dims);
  if (size != expected) {
    throw Error(ErrorCode::kInvalidArgument, {.file = label},
                std::to_string(size) + " bytes given, but dims x element size of " +
                    std::string(data_type_name(data_type)) + " is " + std::to_string(expected) +
                    " (spec §7.3)");
  }
}

EntryDone ArchiveWriter::State::on_entry_done(std::shared_ptr<Sha256> hasher,
                                              const PayloadCrcCheck& check) {
  if (!hasher && !check) return nullptr;
  return [this, hasher = std::move(hasher), check](const WrittenEntry& written) {
    if (check) check(written.crc32);
    if (hasher) digests.push_back({written.name, hasher->finish(), written.size, written.crc32});
  };
}

// With digests, the writer's CRC-32 jobs hash the bytes too, as they read them for the CRC,
// beside the copies of the entries after this one: no byte is read a second time.
const WrittenEntry& ArchiveWriter::State::add_entry(std::string_view name, ByteSpan bytes,
                                                    const PayloadCrcCheck& check) {
  std::shared_ptr<Sha256> hasher = options.digests ? std::make_shared<Sha256>() : nullptr;
  PieceObserver observer;
  if (hasher) observer = [hasher](ByteSpan piece) { hasher->update(piece); };
  return zip.add(name, bytes, observer, on_entry_done(std::move(hasher), check));
}

const WrittenEntry& ArchiveWriter::State::add_entry(std::string_view name, std::uint64_t size,
                                                    const EntryProducer& producer,
                                                    const PayloadCrcCheck& check) {
  std::shared_ptr<Sha256> hasher = options.digests ? std::make_shared<Sha256>() : nullptr;
  PieceObserver observer;
  if (hasher) observer = [hasher](ByteSpan piece) { hasher->update(piece); };
  return zip.add(name, size, producer, observer, on_entry_done(std::move(hasher), check));
}

TensorRef ArchiveWriter::State::remember(const WrittenEntry& written) {
  added.add(written.name, written.size);
  return TensorRef{.location = written.name, .length = written.size};
}

namespace {

// The initializers of one graph by name, to refuse an added tensor whose name another
// initializer of its graph already has: the archive would break the single-assignment rule
// that verify() checks (ONNX IR), so finish() says so first.
class InitializerNames final {
 public:
  explicit InitializerNames(std::string_view source) : source_(source) {}

  // Records an initializer at `site`; `added` when it refers to an entry added to the writer.
  void record(const TensorProto& tensor, const TensorSite& site, bool added) {
    if (site.place != TensorPlace::kInitializer || !tensor.name) return;
    // The graph is the site up to its initializer field: "graph/node[2]/then_branch".
    const std::string_view graph = site.path.substr(0, site.path.rfind("/initializer["));
    auto [found, inserted] = first_.try_emplace({std::string(graph), *tensor.name},
                                                First{std::string(site.path), added});
    if (inserted || !(added || found->second.added)) return;
    throw Error(ErrorCode::kInvalidArgument, {.file = std::string(source_)},
                "tensor " + quote(*tensor.name) + " at " + std::string(site.path) +
                    " has the name of the initializer at " + found->second.site +
                    ", and an added tensor may not share its graph's initializer names (ONNX IR: "
                    "each name is assigned once)");
  }

 private:
  struct First {
    std::string site;
    bool added;
  };
  std::string_view source_;
  std::map<std::pair<std::string, std::string>, First> first_;
};

}  // namespace

std::vector<Candidate> ArchiveWriter::State::plan(const ModelProto& model,
                                                  TensorSubstitutions& substitutions) const {
  std::vector<Candidate> candidates;
  std::vector<bool> referenced(added.entries().size(), false);
  InitializerNames names(source);
  for_each_tensor(model, [&](const TensorProto& tensor, const TensorSite& site) {
    // save() adds nothing: its model's names are the caller's business (convert keeps them).
    if (!added.entries().empty()) {
      names.record(tensor, site, tensor.data_location == TensorProto::kExternal);
    }
    // Messages are built only on failure: a model may hold very many tensors.
    const auto fail = [&](const std::string& what) {
      ErrorContext place = tensor_place(tensor, site.path);
      place.file = source;
      throw Error(ErrorCode::kInvalidArgument, std::move(place), what);
    };
    const std::int32_t data_type = tensor.data_type.value_or(TensorProto::kUndefined);

    if (tensor.data_location == TensorProto::kExternal) {
      const std::size_t found = archive_detail::check_writer_reference(
          tensor, site.path, added, source,
          "which is not an entry added to this archive (for a model with legacy external "
          "data: load its external data first, or use the converter)");
      const archive_detail::PayloadIndex::Entry& entry = added.entries()[found];
      referenced[found] = true;
      // Written in the canonical form whatever order or redundant keys the caller used.
      if (!archive_detail::is_canonical_reference(tensor, entry.location, entry.size)) {
        substitutions.insert_or_assign(&tensor, make_reference(tensor, entry.location, entry.size));
      }
      return;
    }

    // Inline tensors: externalized at or above the threshold (spec §7.4). Every tensor that
    // may be externalized is checked, whatever its size, so that whether a model saves does not
    // depend on the threshold.
    if (!may_externalize(tensor, site.place, options)) return;
    if (const std::string problem = payload_problem(tensor); !problem.empty()) {
      fail(problem + " (spec §7.3)");
    }
    ONNXZIP_DCHECK(try_tensor_byte_size(tensor.dims, data_type).has_value());
    const std::uint64_t size = tensor_byte_size(tensor.dims, data_type, "dims");
    if (size < options.threshold) return;
    candidates.push_back({&tensor, size});
  });
  for (std::size_t i = 0; i < referenced.size(); ++i) {
    if (!referenced[i]) {
      throw Error(ErrorCode::kInvalidArgument, {.file = source},
                  "entry " + quote(added.entries()[i].location) +
                      " was added but no tensor of the model refers to it (spec §7.2: every "
                      "payload entry must be referred to)");
    }
  }
  return candidates;
}

std::string ArchiveWriter::State::write_candidate(const Candidate& candidate,
                                                  detail::ProgressMeter& meter) {
  const TensorProto& tensor = *candidate.tensor;
  const RawPayload payload(tensor);
  std::optional<std::pair<std::uint64_t, std::uint32_t>> key;
  if (options.dedupe) {
    key.emplace(payload.view().size(), crc32(payload.view()));
    const auto found = by_content.find(*key);
    if (found != by_content.end()) {
      for (const WrittenPayload& twin : found->second) {
        const RawPayload other(*twin.tensor);
        if (equal_bytes(other.view(), payload.view())) {
          meter.advance(payload.view().size());
          return twin.location;
        }
      }
    }
  }
  const std::string location = namer.name_for(tensor.name.value_or(""));
  if (meter.active()) {
    // In pieces, so that the meter moves within a large tensor.
    add_entry(
        location, payload.view().size(),
        [&](EntrySink& sink) {
          detail::write_with_progress(payload.view(), meter,
                                      [&](ByteSpan piece) { sink.write(piece); });
        },
        nullptr);
  } else {
    add_entry(location, payload.view());
  }
  if (key) by_content[*key].push_back({location, &tensor});
  return location;
}

ArchiveWriter::ArchiveWriter(std::filesystem::path path, const SaveOptions& options)
    : path_(std::move(path)), state_(std::make_unique<State>(path_, options)) {}

ArchiveWriter::ArchiveWriter(std::filesystem::path path, std::unique_ptr<State> state)
    : path_(std::move(path)), state_(std::move(state)) {}

ArchiveWriter archive_detail::ResumedWriter::make(std::filesystem::path path, ZipWriter zip,
                                                  const SaveOptions& options,
                                                  std::span<const std::string> tensor_names,
                                                  std::vector<EntryDigest> digests,
                                                  std::optional<PrivateKey> key) {
  auto state = std::make_unique<ArchiveWriter::State>(path, options, std::move(zip));
  ONNXZIP_DCHECK(tensor_names.size() == state->zip.entries().size());
  for (std::size_t i = 0; i < tensor_names.size(); ++i) {
    const WrittenEntry& entry = state->zip.entries()[i];
    // The names one writer would have handed out, so that later ones continue its sequence.
    const std::string name = state->namer.name_for(tensor_names[i]);
    ONNXZIP_DCHECK(name == entry.name);
    state->added.add(entry.name, entry.size);
  }
  state->digests = std::move(digests);
  state->signing_key = std::move(key);
  return ArchiveWriter(std::move(path), std::move(state));
}

ArchiveWriter::~ArchiveWriter() = default;
ArchiveWriter::ArchiveWriter(ArchiveWriter&& other) noexcept = default;
ArchiveWriter& ArchiveWriter::operator=(ArchiveWriter&& other) noexcept = default;

TensorRef ArchiveWriter::add_tensor(std::string_view tensor_name, std::int32_t data_type,
                                    std::span<const std::int64_t> dims, ByteSpan bytes,
                                    const PayloadCrcCheck& check) {
  if (!state_) throw Error(ErrorCode::kBadState, "add_tensor on a moved-from ArchiveWriter");
  state_->ensure_open("add_tensor");
  state_->check_added_tensor(tensor_name, data_type, dims, bytes.size());
  try {
    return state_->remember(state_->add_entry(state_->namer.name_for(tensor_name), bytes, check));
  } catch (...) {
    state_->broken = true;
    throw;
  }
}

TensorRef ArchiveWriter::add_tensor(std::string_view tensor_name, std::int32_t data_type,
                                    std::span<const std::int64_t> dims,
                                    const EntryProducer& producer, const PayloadCrcCheck& check) {
  if (!state_) throw Error(ErrorCode::kBadState, "add_tensor on a moved-from ArchiveWriter");
  state_->ensure_open("add_tensor");
  if (!producer) {
    throw Error(ErrorCode::kInvalidArgument,
                state_->source + ": add_tensor " + quote(tensor_name) + ": no producer given");
  }
  // The size is known from dims before any byte is produced; check_added_tensor compares it
  // with itself, so only the type and the dims are checked here.
  const std::uint64_t size = try_tensor_byte_size(dims, data_type).value_or(0);
  state_->check_added_tensor(tensor_name, data_type, dims, size);
  try {
    return state_->remember(
        state_->add_entry(state_->namer.name_for(tensor_name), size, producer, check));
  } catch (...) {
    state_->broken = true;
    throw;
  }
}

void ArchiveWriter::finish(const ModelProto& model) {
  if (!state_) throw Error(ErrorCode::kBadState, "finish on a moved-from ArchiveWriter");
  State& state = *state_;
  state.ensure_open("finish");
  TensorSubstitutions substitutions;
  const std::vector<Candidate> candidates = state.plan(model, substitutions);
  try {
    std::uint64_t payload_bytes = 0;
    for (const Candidate& candidate : candidates) payload_bytes += candidate.size;
    detail::ProgressMeter meter(state.options.progress, payload_bytes);
    for (const Candidate& candidate : candidates) {
      const std::string location = state.write_candidate(candidate, meter);
      substitutions.insert_or_assign(candidate.tensor,
                                     make_reference(*candidate.tensor, location, candidate.size));
    }
    SerializeOptions serialize_options;
    serialize_options.substitutions = &substitutions;
    const MessageSerializer<ModelProto> serializer(model, serialize_options);
    if (state.options.digests) {
      // Every payload's digest, some still being computed beside the last copies.
      state.zip.settle();
      // spec §12.1: __DIGESTS comes before the model, so the model is hashed first (streamed
      // once more: it is small next to the payloads, and nothing is held).
      DigestingByteSink model_digest;
      serializer.write(model_digest);
      std::vector<EntryDigest> digests = state.digests;
      digests.push_back({std::string(kModelEntryName), model_digest.hasher.finish(),
                         model_digest.size, model_digest.crc});
      const std::string statement = encode_digests(path_.stem().string(), std::move(digests));
      const ByteSpan statement_bytes(reinterpret_cast<const std::uint8_t*>(statement.data()),
                                     statement.size());
      state.zip.add(kDigestsEntryName, statement_bytes);
      if (state.signing_key) {
        // spec §12.1: __SIGNATURE directly after __DIGESTS, as sign_archive places it.
        const std::string signature = encode_signature(statement_bytes, *state.signing_key);
        state.zip.add(
            kSignatureEntryName,
            ByteSpan(reinterpret_cast<const std::uint8_t*>(signature.data()), signature.size()));
      }
    }
    // spec §2.4: the model entry comes last.
    state.zip.add(kModelEntryName, serializer.size(), [&](EntrySink& sink) {
      EntrySinkAdapter adapter(sink);
      serializer.write(adapter);
    });
    meter.finish();  // Before the rename: a callback that throws still cancels the write.
    state.zip.finish();
  } catch (...) {
    state.broken = true;
    throw;
  }
  state.finished = true;
}

std::uint64_t externalized_bytes(const ModelProto& model, const SaveOptions& options) {
  std::uint64_t total = 0;
  for_each_tensor(model, [&](const TensorProto& tensor, const TensorSite& site) {
    if (tensor.data_location == TensorProto::kExternal) return;
    if (!may_externalize(tensor, site.place, options) || !payload_problem(tensor).empty()) return;
    // may_externalize and payload_problem checked the type and the dims.
    ONNXZIP_DCHECK(try_tensor_byte_size(tensor).has_value());
    const std::uint64_t size = tensor_byte_size(tensor);
    if (size >= options.threshold && __builtin_add_overflow(total, size, &total)) {
      total = std::numeric_limits<std::uint64_t>::max();  // Only a total: saturate.
    }
  });
  return total;
}

void save(const ModelProto& model, const std::filesystem::path& path, const SaveOptions& options) {
  ArchiveWriter writer(path, options);
  writer.finish(model);
}

}  // namespace onnxzip
