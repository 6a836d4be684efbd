// Legacy model files: resolving external data on read, placing it on write (legacy.h).
//
// Reading walks each location component by component under the model's folder with openat and
// O_NOFOLLOW, so the file whose links and type were checked is the file mapped: the checked
// descriptor itself goes to MappedFile::adopt.
#include "onnxzip/legacy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "check.h"
#include "external_data.h"
#include "legacy_fill.h"
#include "message_text.h"
#include "onnxzip/error.h"
#include "onnxzip/internal/mapped_file.h"
#include "onnxzip/internal/protobuf_wire.h"
#include "onnxzip/tensor.h"
#include "output_file.h"
#include "posix_file.h"
#include "progress_meter.h"

namespace onnxzip {
namespace {

using detail::Fd;
using detail::kLengthKey;
using detail::kLocationKey;
using detail::kOffsetKey;
using detail::quote;

bool is_external(const TensorProto& t) {
  return t.data_location.value_or(TensorProto::kDefault) == TensorProto::kExternal;
}

// --- Reading: external references ---

// Where the data of one external tensor lies, as its external_data says (views into the tensor).
struct ExternalReference {
  std::string_view location;
  std::optional<std::uint64_t> offset{};
  std::optional<std::uint64_t> length{};
};

// Where an error about one tensor's reference is reported: the model file, the tensor, then the
// location once it is read.
struct ReferenceContext {
  ErrorContext place;

  [[noreturn]] void fail(ErrorCode code, const std::string& problem) const {
    throw Error(code, place, problem);
  }
};

// legacy.h's rules for the keys: one location, offset and length at most once each and decimal
// numbers; checksum, basepath and other keys ignored (the reference never uses them to find or
// check the data).
ExternalReference parse_reference(const TensorProto& tensor, ReferenceContext& ctx) {
  const detail::ExternalData data = detail::read_external_data(tensor);
  if (data.location) {
    ctx.place.entry = "location " + quote(*data.location);
    ctx.place.entry_name = std::string(*data.location);  // A data file: a legacy model's entry.
  }
  if (const std::string fault = detail::reference_fault(data); !fault.empty()) {
    ctx.fail(ErrorCode::kCorrupt, fault);
  }
  ExternalReference ref{.location = *data.location};
  if (data.offset) ref.offset = data.offset->value;
  if (data.length) ref.length = data.length->value;
  return ref;
}

// The lexical rules: relative, no NUL, no `..` component. Returns the components that name
// something ("" and "." dropped).
std::vector<std::string_view> location_components(const std::string& location,
                                                  const ReferenceContext& ctx) {
  if (location.empty()) ctx.fail(ErrorCode::kCorrupt, "the location is empty");
  if (location.find('\0') != std::string::npos) {
    ctx.fail(ErrorCode::kCorrupt, "the location contains a NUL byte");
  }
  if (location.front() == '/') {
    ctx.fail(ErrorCode::kCorrupt,
             "the location is an absolute path; it must be relative to the "
             "model's folder");
  }
  std::vector<std::string_view> components;
  std::string_view rest = location;
  while (true) {
    const std::size_t slash = rest.find('/');
    const std::string_view component = rest.substr(0, slash);
    if (component == "..") {
      ctx.fail(ErrorCode::kCorrupt,
               "the location has a '..' component; it must stay inside the model's folder");
    }
    if (!component.empty() && component != ".") components.push_back(component);
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  if (components.empty()) ctx.fail(ErrorCode::kCorrupt, "the location names no file");
  return components;
}

std::string errno_text(int error) { return std::strerror(error); }

// True when `inner` is `outer` or lies below it (both canonical).
bool is_within(const std::filesystem::path& inner, const std::filesystem::path& outer) {
  auto i = inner.begin();
  for (auto o = outer.begin(); o != outer.end(); ++o, ++i) {
    if (o->empty() && std::next(o) == outer.end()) break;  // Trailing separator.
    if (i == inner.end() || *i != *o) return false;
  }
  return true;
}

// The data files of one model, each opened, checked and mapped once.
class DataFiles final {
 public:
  DataFiles(const std::filesystem::path& model_path, const LegacyReadOptions& options)
      : options_(options) {
    folder_ = model_path.parent_path();
    if (folder_.empty()) folder_ = ".";
  }

  // Every location resolved so far and its mapping.
  const std::unordered_map<std::string, std::shared_ptr<const MappedFile>>& files() const noexcept {
    return by_location_;
  }

  std::shared_ptr<const MappedFile> map(const std::string& location, const ReferenceContext& ctx) {
    const auto known = by_location_.find(location);
    if (known != by_location_.end()) return known->second;
    const std::vector<std::string_view> components = location_components(location, ctx);
    Fd file =
        options_.allow_symlinks ? open_following(location, ctx) : open_strict(components, ctx);

    struct stat st {};
    if (::fstat(file.get(), &st) != 0) ctx.fail(ErrorCode::kIo, "fstat: " + errno_text(errno));
    if (!S_ISREG(st.st_mode)) ctx.fail(ErrorCode::kCorrupt, "not a regular file");
    if (st.st_nlink > 1 && !options_.allow_hard_links) {
      ctx.fail(ErrorCode::kCorrupt,
               "the file has " + std::to_string(st.st_nlink) +
                   " hard links; a hard-linked data file could expose any file of the file system "
                   "(allow_hard_links accepts it)");
    }
    const detail::FileIdentity identity = detail::identity_of(st);
    std::shared_ptr<const MappedFile> mapping;
    if (const auto same = by_identity_.find(identity); same != by_identity_.end()) {
      mapping = same->second;
    } else {
      mapping = map_descriptor(file, st, location, ctx);
      by_identity_.emplace(identity, mapping);
    }
    by_location_.emplace(location, mapping);
    return mapping;
  }

 private:
  const Fd& folder_fd(const ReferenceContext& ctx) {
    if (folder_fd_.get() < 0) {
      folder_fd_ = Fd(::open(folder_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (folder_fd_.get() < 0) {
        ctx.fail(ErrorCode::kIo,
                 "cannot open the model's folder " + folder_.string() + ": " + errno_text(errno));
      }
    }
    return folder_fd_;
  }

  // Component by component, never following a link: what is checked is what is opened.
  Fd open_strict(const std::vector<std::string_view>& components, const ReferenceContext& ctx) {
    ONNXZIP_DCHECK(!components.empty());  // The location's checks refused an empty one.
    int dir = folder_fd(ctx).get();
    Fd current;  // The folder opened last (the model's folder is not owned here).
    for (std::size_t i = 0; i < components.size(); ++i) {
      const std::string name(components[i]);
      const bool last = i + 1 == components.size();
      const std::string what = last ? "the file" : "the folder " + quote(name);
      struct stat st {};
      if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        const int error = errno;
        if (error == ENOENT) ctx.fail(ErrorCode::kNotFound, what + " does not exist");
        ctx.fail(ErrorCode::kIo, "cannot examine " + what + ": " + errno_text(error));
      }
      if (S_ISLNK(st.st_mode)) {
        ctx.fail(ErrorCode::kCorrupt,
                 what +
                     " is a symbolic link; links could lead outside the model's folder "
                     "(allow_symlinks accepts links that stay inside)");
      }
      if (!last && !S_ISDIR(st.st_mode)) ctx.fail(ErrorCode::kCorrupt, what + " is not a folder");
      if (last && !S_ISREG(st.st_mode)) ctx.fail(ErrorCode::kCorrupt, "not a regular file");
      // O_NONBLOCK: should the file be swapped for a FIFO after fstatat, open must not hang.
      const int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | (last ? O_NONBLOCK : O_DIRECTORY);
      Fd next(::openat(dir, name.c_str(), flags));
      if (next.get() < 0) {
        const int error = errno;
        if (error == ELOOP) ctx.fail(ErrorCode::kCorrupt, what + " is a symbolic link");
        if (error == ENOENT) ctx.fail(ErrorCode::kNotFound, what + " does not exist");
        ctx.fail(ErrorCode::kIo, "cannot open " + what + ": " + errno_text(error));
      }
      if (last) return next;
      current = std::move(next);
      dir = current.get();
    }
    return {};  // Not reached: the last component returned above.
  }

  // allow_symlinks: the path as the system resolves it, then the containment check.
  Fd open_following(const std::string& location, const ReferenceContext& ctx) {
    const std::filesystem::path path = folder_ / location;
    Fd file(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    if (file.get() < 0) {
      const int error = errno;
      if (error == ENOENT) ctx.fail(ErrorCode::kNotFound, "the file does not exist");
      ctx.fail(ErrorCode::kIo, "cannot open " + path.string() + ": " + errno_text(error));
    }
    std::error_code ec;
    if (canonical_folder_.empty()) {
      canonical_folder_ = std::filesystem::canonical(folder_, ec);
      if (ec) ctx.fail(ErrorCode::kIo, "cannot resolve the model's folder: " + ec.message());
    }
    const std::filesystem::path resolved = std::filesystem::canonical(path, ec);
    if (ec) ctx.fail(ErrorCode::kIo, "cannot resolve " + path.string() + ": " + ec.message());
    if (!is_within(resolved, canonical_folder_)) {
      ctx.fail(ErrorCode::kCorrupt, "the file resolves to " + resolved.string() +
                                        ", outside the model's folder " +
                                        canonical_folder_.string());
    }
    // The containment check was of the resolved path: it must be the file that was opened.
    if (!detail::path_names_file_of(resolved, file.get())) {
      ctx.fail(ErrorCode::kIo, "the file changed while it was being opened");
    }
    return file;
  }

  // Maps (or reads, options_.access) the checked descriptor's file: MappedFile maps the very
  // file the descriptor is open on.
  std::shared_ptr<const MappedFile> map_descriptor(Fd& file, const struct stat& checked,
                                                   const std::string& location,
                                                   const ReferenceContext& ctx) {
    std::shared_ptr<const MappedFile> mapping;
    try {
      mapping = MappedFile::adopt(file.release(), folder_ / location, options_.access);
    } catch (const Error& e) {
      throw e.with_context(ctx.place);  // It names the data file's path and the system's reason.
    }
    if (mapping->bytes().size() != static_cast<std::uint64_t>(checked.st_size)) {
      ctx.fail(ErrorCode::kIo, "the file changed size while it was being mapped");
    }
    return mapping;
  }

  const LegacyReadOptions& options_;
  std::filesystem::path folder_;
  std::filesystem::path canonical_folder_;
  Fd folder_fd_;
  std::unordered_map<std::string, std::shared_ptr<const MappedFile>> by_location_;
  std::map<detail::FileIdentity, std::shared_ptr<const MappedFile>> by_identity_;
};

void resolve_external(TensorProto& tensor, const TensorSite& site, const std::string& model,
                      DataFiles& files) {
  ReferenceContext ctx{.place = tensor_place(tensor, site.path)};
  ctx.place.file = model;
  const ExternalReference ref = parse_reference(tensor, ctx);
  if (tensor.raw_data || !present_typed_field(tensor).empty()) {
    ctx.fail(ErrorCode::kCorrupt,
             "data_location is EXTERNAL but the tensor also holds its data inline");
  }
  const std::uint64_t expected = with_error_context(
      [&] { return ctx.place; },
      [&] {
        return tensor_byte_size(tensor.dims, tensor.data_type.value_or(TensorProto::kUndefined),
                                "dims");
      });
  const std::shared_ptr<const MappedFile> mapping = files.map(std::string(ref.location), ctx);
  const ByteSpan bytes = mapping->bytes();
  const std::uint64_t size = bytes.size();
  const std::uint64_t offset = ref.offset.value_or(0);
  if (offset > size) {
    ctx.fail(ErrorCode::kCorrupt, "offset " + std::to_string(offset) +
                                      " is past the end of the file (" + std::to_string(size) +
                                      " bytes)");
  }
  const std::uint64_t length = ref.length.value_or(size - offset);
  if (!fits(offset, length, size)) {
    ctx.fail(ErrorCode::kCorrupt, "offset " + std::to_string(offset) + " + length " +
                                      std::to_string(length) + " is past the end of the file (" +
                                      std::to_string(size) + " bytes)");
  }
  if (length != expected) {
    const std::string got = ref.length
                                ? "length " + std::to_string(length)
                                : "the rest of the file from offset " + std::to_string(offset) +
                                      " (" + std::to_string(length) + " bytes)";
    ctx.fail(ErrorCode::kCorrupt,
             got + " differs from dims x element size (" + std::to_string(expected) + " bytes)");
  }
  tensor.raw_data = TensorBytes::borrowed(
      bytes.subspan(static_cast<std::size_t>(offset), static_cast<std::size_t>(length)), mapping);
  tensor.external_data.clear();
  tensor.data_location.reset();
}

// --- Writing ---

// The serializer's output into a file; with a meter, every byte counts as progress.
class FileSink final : public wire::ByteSink {
 public:
  explicit FileSink(AtomicOutputFile& file, detail::ProgressMeter* meter = nullptr) noexcept
      : file_(file), meter_(meter) {}
  void write(ByteSpan bytes) override {
    if (meter_ == nullptr) {
      file_.write(bytes);
      return;
    }
    detail::write_with_progress(bytes, *meter_, [&](ByteSpan piece) { file_.write(piece); });
  }

 private:
  AtomicOutputFile& file_;
  detail::ProgressMeter* meter_;
};

bool is_plain_file_name(std::string_view name) {
  return !name.empty() && name != "." && name != ".." &&
         name.find_first_of(std::string_view("/\0", 2)) == std::string_view::npos;
}

// Why a tensor at `site` may not go to a data file, nullopt when it may. Only those of the main
// graph and its subgraphs may: the reference loader resolves external data nowhere else (not in
// functions, not in training graphs, never for sparse tensors, which therefore need the caller's
// explicit request).
std::optional<KeptInline::Reason> unselected_site(const TensorSite& site,
                                                  const LegacyWriteOptions& options) {
  using Reason = KeptInline::Reason;
  if (!site.path.starts_with("graph/")) return Reason::kOutside;
  switch (site.place) {
    case TensorPlace::kInitializer:
      return std::nullopt;
    case TensorPlace::kAttributeTensor:
    case TensorPlace::kAttributeTensors:
      if (options.externalize_attributes) return std::nullopt;
      return Reason::kAttribute;
    case TensorPlace::kSparseInitializerValues:
    case TensorPlace::kSparseInitializerIndices:
      if (options.externalize_sparse) return std::nullopt;
      return Reason::kSparse;
    case TensorPlace::kAttributeSparseTensorValues:
    case TensorPlace::kAttributeSparseTensorIndices:
    case TensorPlace::kAttributeSparseTensorsValues:
    case TensorPlace::kAttributeSparseTensorsIndices:
      if (!options.externalize_sparse) return Reason::kSparse;
      if (!options.externalize_attributes) return Reason::kAttribute;
      return std::nullopt;
  }
  return Reason::kOutside;
}

// One payload placed in a data file.
struct Placement {
  const TensorProto* tensor;
  std::string label;  // For messages.
  std::uint64_t size;
  std::size_t file;
  std::uint64_t offset;
};

// The tensor written in place of an externalized one: everything but its data, plus the
// reference. external_data keys in the reference's order (set_external_data).
TensorProto external_substitute(const TensorProto& tensor, const std::string& location,
                                std::uint64_t offset, std::uint64_t length) {
  TensorProto out = tensor_without_data(tensor);
  const std::pair<std::string_view, std::string> entries[] = {
      {kLocationKey, location},
      {kOffsetKey, std::to_string(offset)},
      {kLengthKey, std::to_string(length)},
  };
  for (const auto& [key, value] : entries) {
    StringStringEntryProto& entry = out.external_data.emplace_back();
    entry.key = std::string(key);
    entry.value = value;
  }
  out.data_location = TensorProto::kExternal;
  return out;
}

constexpr std::uint8_t kZeroByte[1] = {0};

// The bytes a tensor that stays inline holds (raw_data, its typed field, or its strings).
std::uint64_t inline_size(const TensorProto& tensor) {
  if (tensor.raw_data) return tensor.raw_data->size();
  if (tensor.data_type.value_or(TensorProto::kUndefined) == TensorProto::kString) {
    std::uint64_t total = 0;
    for (const Text& text : tensor.string_data) total += text.size();
    return total;
  }
  return try_tensor_byte_size(tensor).value_or(0);
}

std::string data_file_name(const std::string& base, std::size_t index) {
  return index == 0 ? base : base + "." + std::to_string(index);
}

// --- Writing ---

// One write_legacy_model call: the request, checked when constructed, then its steps in order.
class LegacyWriter final {
 public:
  // With `fill`, the payloads are written by it (legacy_fill.h), always in external mode.
  LegacyWriter(const ModelProto& model, const std::filesystem::path& out,
               const LegacyWriteOptions& options,
               const detail::LegacyPayloadFiller* fill = nullptr);
  LegacyWriteResult write() const;
  // With `kept`, each tensor holding data that stays inline is added to it.
  std::vector<Placement> place_payloads(std::vector<KeptInline>* kept = nullptr) const;

 private:
  // The model with its payloads inline, when the mode allows it and it fits protobuf's limit;
  // false when it must be written with external data.
  bool write_inline(LegacyWriteResult& result) const;
  // The bytes the tensor's payload takes in a data file, or why it stays inline.
  std::variant<std::uint64_t, KeptInline::Reason> external_size(const TensorProto& tensor,
                                                                const TensorSite& site) const;
  void check_data_file_names(std::size_t file_count) const;
  // The data files of an earlier write under this set's names from `file_count` on (regular
  // files, up to the first name that is none): they go with the old set.
  std::vector<std::filesystem::path> retired_data_files(std::size_t file_count) const;
  // Each data file written in full but unnamed: its payloads at their offsets.
  std::vector<std::unique_ptr<AtomicOutputFile>> write_data_files(
      const std::vector<Placement>& placements, std::size_t file_count,
      detail::ProgressMeter& meter) const;

  const ModelProto& model_;
  const std::filesystem::path& out_;
  const LegacyWriteOptions& options_;
  const detail::LegacyPayloadFiller* fill_;
  const std::string target_;  // The model file, for messages.
  const std::string model_name_;
  std::string base_name_;  // Of the first data file (see data_file_name).
};

// The serializer buffers already: a small file buffer passes its writes straight through.
constexpr std::size_t kModelFileBufferSize = std::size_t{1} << 16;

LegacyWriter::LegacyWriter(const ModelProto& model, const std::filesystem::path& out,
                           const LegacyWriteOptions& options,
                           const detail::LegacyPayloadFiller* fill)
    : model_(model),
      out_(out),
      options_(options),
      fill_(fill),
      target_(out.string()),
      model_name_(out.filename().string()) {
  if (model_name_.empty() || !is_plain_file_name(model_name_)) {
    throw Error(ErrorCode::kInvalidArgument, {.file = target_}, "not a file name");
  }
  if (options.alignment > 1 && !is_power_of_two(options.alignment)) {
    throw Error(
        ErrorCode::kInvalidArgument,
        target_ + ": alignment " + std::to_string(options.alignment) + " is not a power of two");
  }
  base_name_ = options.data_file_name.empty() ? model_name_ + ".data" : options.data_file_name;
  if (!is_plain_file_name(base_name_)) {
    throw Error(ErrorCode::kInvalidArgument, {.file = target_},
                "data file name " + quote(base_name_) + " is not a plain file name");
  }
  for_each_tensor(model, [&](const TensorProto& tensor, const TensorSite& site) {
    if (is_external(tensor)) {
      throw Error(ErrorCode::kInvalidArgument, {.file = target_},
                  tensor_label(tensor, site.path) +
                      " refers to external data; read the model with read_legacy_model, which "
                      "resolves it");
    }
    // A payload that disagrees with its dims would be written with a reference whose length
    // readers refuse (or, inline, a model they misread).
    if (const std::string problem = payload_problem(tensor); !problem.empty()) {
      ErrorContext at = tensor_place(tensor, site.path);
      at.file = target_;
      throw Error(ErrorCode::kInvalidArgument, std::move(at), problem);
    }
  });
}

LegacyWriteResult LegacyWriter::write() const {
  LegacyWriteResult result;
  if (fill_ == nullptr && write_inline(result)) return result;
  const std::vector<Placement> placements = place_payloads(&result.kept_inline);
  // The model as written: the placed tensors replaced by references.
  TensorSubstitutions substitute_of;
  substitute_of.reserve(placements.size());
  for (const Placement& p : placements) {
    substitute_of.emplace(
        p.tensor,
        external_substitute(*p.tensor, data_file_name(base_name_, p.file), p.offset, p.size));
  }
  SerializeOptions serialize_options;
  serialize_options.substitutions = &substitute_of;
  std::optional<MessageSerializer<ModelProto>> external_model(std::in_place, model_,
                                                              serialize_options);
  if (external_model->size() > kMaxProtobufBytes) {
    throw Error(ErrorCode::kLimitExceeded, {.file = target_},
                "the model still serializes to " + std::to_string(external_model->size()) +
                    " bytes with its initializers external, more than protobuf's limit of " +
                    std::to_string(kMaxProtobufBytes) +
                    "; lower the threshold or externalize attributes and sparse tensors");
  }
  const std::size_t file_count = placements.empty() ? 0 : placements.back().file + 1;
  check_data_file_names(file_count);

  // Every file is written in full (unnamed until the end), then they appear as one set
  // (commit_together): a crash at any instant leaves the old set, the new set or no model.
  std::uint64_t payload_bytes = 0;
  for (const Placement& p : placements) payload_bytes += p.size;
  static const ProgressCallback kNoProgress;
  detail::ProgressMeter meter(fill_ == nullptr ? options_.progress : kNoProgress, payload_bytes);
  const std::vector<std::unique_ptr<AtomicOutputFile>> data_files =
      write_data_files(placements, file_count, meter);
  // The serializer copied small payloads when it was made: those a filler has just written (the
  // ones that stay inline) are copied again.
  if (fill_ != nullptr) external_model.emplace(model_, serialize_options);
  AtomicOutputFile model_file(out_, options_.output, kModelFileBufferSize);
  FileSink sink(model_file);
  external_model->write(sink);
  meter.finish();  // Before the renames: a callback that throws still cancels the write.
  std::vector<AtomicOutputFile*> others;
  for (const auto& file : data_files) others.push_back(file.get());
  const std::vector<std::filesystem::path> retired = retired_data_files(file_count);
  commit_together(others, model_file, retired);
  for (std::size_t i = 0; i < file_count; ++i) {
    result.data_files.push_back(data_file_name(base_name_, i));
  }
  for (const std::filesystem::path& file : retired) {
    result.removed_data_files.push_back(file.filename().string());
  }
  return result;
}

std::vector<std::filesystem::path> LegacyWriter::retired_data_files(std::size_t file_count) const {
  std::vector<std::filesystem::path> retired;
  for (std::size_t i = file_count;; ++i) {
    const std::string name = data_file_name(base_name_, i);
    if (name == model_name_) break;
    const std::filesystem::path file = out_.parent_path() / name;
    struct stat status {};
    if (::lstat(file.c_str(), &status) != 0 || !S_ISREG(status.st_mode)) break;
    retired.push_back(file);
  }
  return retired;
}

bool LegacyWriter::write_inline(LegacyWriteResult& result) const {
  using Mode = LegacyWriteOptions::Mode;
  if (options_.mode == Mode::kExternal) return false;
  const MessageSerializer<ModelProto> inline_model(model_);
  if (inline_model.size() <= kMaxProtobufBytes) {
    AtomicOutputFile file(out_, options_.output, kModelFileBufferSize);
    detail::ProgressMeter meter(options_.progress, inline_model.size());
    FileSink sink(file, &meter);
    inline_model.write(sink);
    meter.finish();  // Before the rename: a callback that throws still cancels the write.
    // A data file an earlier external write left under this set's names goes with it.
    const std::vector<std::filesystem::path> retired = retired_data_files(0);
    commit_together({}, file, retired);
    for (const std::filesystem::path& retired_file : retired) {
      result.removed_data_files.push_back(retired_file.filename().string());
    }
    return true;
  }
  if (options_.mode == Mode::kInline) {
    throw Error(ErrorCode::kLimitExceeded, {.file = target_},
                "the model serializes to " + std::to_string(inline_model.size()) +
                    " bytes with its data inline, more than protobuf's limit of " +
                    std::to_string(kMaxProtobufBytes) + "; write it with external data");
  }
  return false;
}

// In for_each_tensor order, files filled one after the other; each payload at an aligned offset.
std::vector<Placement> LegacyWriter::place_payloads(std::vector<KeptInline>* kept) const {
  std::vector<Placement> placements;
  std::size_t file_index = 0;
  std::uint64_t file_end = 0;
  bool file_used = false;
  for_each_tensor(model_, [&](const TensorProto& tensor, const TensorSite& site) {
    const auto placed = external_size(tensor, site);
    if (const auto* reason = std::get_if<KeptInline::Reason>(&placed)) {
      const std::uint64_t bytes = inline_size(tensor);
      if (kept != nullptr && bytes > 0) {
        kept->push_back({tensor_label(tensor, site.path), bytes, *reason});
      }
      return;
    }
    const std::uint64_t* size = std::get_if<std::uint64_t>(&placed);
    std::uint64_t offset =
        options_.alignment > 1 ? align_up(file_end, options_.alignment) : file_end;
    if (offset < file_end) {
      throw Error(ErrorCode::kLimitExceeded, {.file = target_}, "data file offset overflows");
    }
    if (options_.max_file_size != 0 && file_used && !fits(offset, *size, options_.max_file_size)) {
      ++file_index;
      offset = 0;
    }
    placements.push_back({&tensor, tensor_label(tensor, site.path), *size, file_index, offset});
    file_end = checked_add(offset, *size, target_ + ": data file size");
    file_used = true;
  });
  return placements;
}

std::variant<std::uint64_t, KeptInline::Reason> LegacyWriter::external_size(
    const TensorProto& tensor, const TensorSite& site) const {
  using Reason = KeptInline::Reason;
  if (const std::optional<Reason> reason = unselected_site(site, options_)) return *reason;
  if (tensor.data_type.value_or(TensorProto::kUndefined) == TensorProto::kString) {
    return Reason::kString;
  }
  std::uint64_t size = 0;
  if (tensor.raw_data) {
    size = tensor.raw_data->size();
  } else {
    const TypedField field = typed_field_for(tensor.data_type.value_or(TensorProto::kUndefined));
    if (field == TypedField::kNone || field == TypedField::kStringData) return Reason::kSmall;
    try {
      size = typed_data_to_raw(tensor).size();  // Converted again, one at a time, when written.
    } catch (const Error& e) {
      throw e.with_context({.file = target_});  // The converter names the tensor.
    }
  }
  if (size < options_.threshold) return Reason::kSmall;
  return size;
}

void LegacyWriter::check_data_file_names(std::size_t file_count) const {
  for (std::size_t i = 0; i < file_count; ++i) {
    if (data_file_name(base_name_, i) == model_name_) {
      throw Error(
          ErrorCode::kInvalidArgument, {.file = target_},
          "data file name " + quote(data_file_name(base_name_, i)) + " is the model's own name");
    }
  }
}

std::vector<std::unique_ptr<AtomicOutputFile>> LegacyWriter::write_data_files(
    const std::vector<Placement>& placements, std::size_t file_count,
    detail::ProgressMeter& meter) const {
  std::vector<std::unique_ptr<AtomicOutputFile>> data_files;
  if (fill_ != nullptr) {
    std::vector<std::uint64_t> file_end(file_count, 0);
    std::vector<detail::LegacyPlacement> placed;
    placed.reserve(placements.size());
    for (const Placement& p : placements) {
      file_end[p.file] = p.offset + p.size;  // Each file ends with its last payload.
      placed.push_back({p.tensor, p.file, p.offset, p.size});
    }
    std::vector<AtomicOutputFile*> files;
    for (std::size_t i = 0; i < file_count; ++i) {
      AtomicOutputFile& file = *data_files.emplace_back(std::make_unique<AtomicOutputFile>(
          out_.parent_path() / data_file_name(base_name_, i), options_.output));
      file.reserve(file_end[i]);
      // The file's size even when its last payload is empty; the filler overwrites a payload
      // byte here.
      if (file_end[i] > 0) file.write_at(file_end[i] - 1, ByteSpan(kZeroByte));
      files.push_back(&file);
    }
    (*fill_)(placed, files);
    return data_files;
  }
  auto next = placements.begin();
  for (std::size_t i = 0; i < file_count; ++i) {
    AtomicOutputFile& file = *data_files.emplace_back(std::make_unique<AtomicOutputFile>(
        out_.parent_path() / data_file_name(base_name_, i), options_.output));
    for (; next != placements.end() && next->file == i; ++next) {
      file.write_zeros(next->offset - file.position());
      const RawPayload raw_payload(*next->tensor);
      const ByteSpan payload = raw_payload.view();
      if (payload.size() != next->size) {
        throw Error(ErrorCode::kBadState, {.file = target_},
                    next->label + " changed while the model was being written");
      }
      detail::write_with_progress(payload, meter, [&](ByteSpan piece) { file.write(piece); });
    }
  }
  return data_files;
}

}  // namespace

ModelFormat detect_format(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw Error(ErrorCode::kInvalidArgument, {.file = path.string()},
                "is a folder, not a model file");
  }
  // Opened without blocking and checked to be a regular file before a byte is read: a FIFO
  // would otherwise wait for a writer forever.
  const detail::RegularFile file = detail::open_regular_file(path);
  std::array<char, 4> head{};
  std::size_t got = 0;
  while (got < head.size()) {
    const ssize_t n =
        ::pread(file.fd.get(), head.data() + got, head.size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      throw Error(ErrorCode::kIo, {.file = path.string()},
                  std::string("cannot read: ") + errno_text(errno));
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  const std::string_view bytes(head.data(), got);
  // Local file header, or the end record of an empty archive (so the archive reader, not the
  // protobuf parser, explains what is wrong with it).
  if (bytes == std::string_view("PK\x03\x04", 4) || bytes == std::string_view("PK\x05\x06", 4)) {
    return ModelFormat::kOnnxz;
  }
  return ModelFormat::kLegacy;
}

std::optional<ModelFormat> format_named_by(const std::filesystem::path& path) {
  const std::string extension = detail::ascii_lower(path.extension().string());
  if (extension == ".onnxz") return ModelFormat::kOnnxz;
  if (extension == ".onnx") return ModelFormat::kLegacy;
  return std::nullopt;
}

void check_output_name(const std::filesystem::path& path, ModelFormat format) {
  const std::optional<ModelFormat> named = format_named_by(path);
  if (!named || *named == format) return;
  const bool archive = format == ModelFormat::kOnnxz;
  std::filesystem::path fixed = path;
  fixed.replace_extension(archive ? ".onnxz" : ".onnx");
  throw Error(ErrorCode::kInvalidArgument, {.file = path.string()},
              std::string("the output would be ") +
                  (archive ? "an .onnxz archive" : "a legacy .onnx model") +
                  ", but its name says " + (archive ? "legacy .onnx" : ".onnxz archive") +
                  " (.onnxz names an archive, .onnx a legacy model): name it " +
                  detail::quote(fixed.string()) + " or use another extension");
}

ModelProto read_legacy_model(const std::filesystem::path& onnx_path,
                             const LegacyReadOptions& options) {
  const std::string source = options.source_name.empty() ? onnx_path.string() : options.source_name;
  std::shared_ptr<const MappedFile> mapping = MappedFile::open(onnx_path, options.access);
  const ByteSpan bytes = mapping->bytes();
  ModelProto model = parse_message<ModelProto>(bytes, std::move(mapping), options.parse, source);
  if (!options.load_external_data) return model;
  DataFiles files(onnx_path, options);
  for_each_tensor(model, [&](TensorProto& tensor, const TensorSite& site) {
    if (is_external(tensor)) resolve_external(tensor, site, source, files);
  });
  return model;
}

LegacyWriteResult write_legacy_model(const ModelProto& model, const std::filesystem::path& out,
                                     const LegacyWriteOptions& options) {
  return LegacyWriter(model, out, options).write();
}

namespace detail {

std::vector<LegacyPlacement> plan_legacy_data_files(const ModelProto& model,
                                                    const std::filesystem::path& out,
                                                    const LegacyWriteOptions& options) {
  std::vector<LegacyPlacement> placed;
  for (const Placement& p : LegacyWriter(model, out, options).place_payloads()) {
    placed.push_back({p.tensor, p.file, p.offset, p.size});
  }
  return placed;
}

LegacyWriteResult write_legacy_model_filled(const ModelProto& model,
                                            const std::filesystem::path& out,
                                            const LegacyWriteOptions& options,
                                            const LegacyPayloadFiller& fill) {
  return LegacyWriter(model, out, options, &fill).write();
}

}  // namespace detail

}  // namespace onnxzip
