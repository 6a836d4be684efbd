// Private to the archive layer (src/archive_*.cpp): the rules that the writer, the loader, the
// verifier and the view writer share, so each is stated once. Not installed.
#ifndef ONNXZIP_ARCHIVE_INTERNAL_H_
#define ONNXZIP_ARCHIVE_INTERNAL_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "external_data.h"
#include "message_text.h"
#include "onnxzip/archive.h"
#include "onnxzip/bytes.h"
#include "onnxzip/error.h"
#include "onnxzip/internal/mapped_file.h"
#include "onnxzip/internal/zip_reader.h"
#include "onnxzip/onnx_model.h"
#include "posix_file.h"
#include "zip_writer.h"

namespace onnxzip::archive_detail {

using detail::kLengthKey;
using detail::kLocationKey;
using detail::kOffsetKey;
using detail::quote;

// Throws Error(kInvalidArgument, "entry name '<name>': <problem>") for a name breaking the
// .onnxz rule (entry_name_problem); the writers call it before ZipWriter::add.
void check_entry_name(std::string_view name, EntryNameKind kind);

// Why `location` is not a valid payload entry name (spec §6.1), in words naming the kind of path
// it is ("..", absolute, "#...", ONNX Runtime's _ORT_MEM_ADDR_ marker...), or "" when it is one.
std::string location_problem(std::string_view location);

// A metadata-only copy of `tensor` referring to entry `location` of `length` bytes, in the
// canonical form of spec §7.2: name, dims, data_type, segment, doc_string, metadata_props and
// unknown fields kept; data_location EXTERNAL; external_data exactly [location, length].
TensorProto make_reference(const TensorProto& tensor, std::string_view location,
                           std::uint64_t length);
// Whether make_reference(tensor, location, length) would equal `tensor`, for an EXTERNAL tensor
// that check_writer_reference accepted (so it carries no payload): a writer need not substitute
// a reference already in canonical form, and most models it reads back hold nothing else.
bool is_canonical_reference(const TensorProto& tensor, std::string_view location,
                            std::uint64_t length);

// The words for an external_data key that an .onnxz reference must not have (checksum,
// basepath, unknown keys): the writers' error and the readers' finding (spec §7.2 item 4).
std::string other_key(std::string_view key);

// --- Writing side ---

// The payload size of an added tensor (ArchiveWriter::add_tensor, a planned part), dims x
// element size (spec §7.3). Error(kInvalidArgument) at `label` for a type without a fixed
// element size (STRING, UNDEFINED, unknown) or dims whose size cannot be computed.
std::uint64_t added_payload_size(const std::string& label, std::int32_t data_type,
                                 std::span<const std::int64_t> dims);

// An ArchiveWriter that continues an archive whose payload entries are already in `zip` (written
// in parts, parts.h): `tensor_names` are the names they were added under, in order (so that the
// entries finish() adds are named as one writer would name them), `digests` theirs when
// options.digests. finish() then also writes `__SIGNATURE` by `key`, after `__DIGESTS`.
struct ResumedWriter {
  static ArchiveWriter make(std::filesystem::path path, ZipWriter zip, const SaveOptions& options,
                            std::span<const std::string> tensor_names,
                            std::vector<EntryDigest> digests, std::optional<PrivateKey> key);
};

// The payload entries a model about to be written may refer to: the entries an ArchiveWriter
// added, or those an archive being edited holds. Looked up by exact name.
class PayloadIndex final {
 public:
  struct Entry {
    std::string location;
    std::uint64_t size = 0;
  };

  std::size_t add(std::string location, std::uint64_t size);
  // The index of the entry named `location`, or npos.
  std::size_t find(std::string_view location) const;
  const std::vector<Entry>& entries() const noexcept { return entries_; }
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

 private:
  // Searched with a string_view, without building a std::string per lookup.
  struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view text) const noexcept {
      return std::hash<std::string_view>{}(text);
    }
  };
  std::vector<Entry> entries_;
  std::unordered_map<std::string, std::size_t, StringHash, std::equal_to<>> by_location_;
};

// The writers' rule for one EXTERNAL tensor of a model they write (spec §7.2): one location, a
// valid payload entry name (§6.1) naming an entry of `index`; no payload carried; a type with a
// fixed element size and dims x element size equal to the entry's size; a length, when given,
// equal to it; an offset, when given, 0; no other key. Returns the entry's index. Error
// (kInvalidArgument) naming `source`, the tensor and the entry, in the words the reader uses for
// the same fault; for a location naming no entry the problem ends with `unknown_location` (why
// the caller's index does not have it).
std::size_t check_writer_reference(const TensorProto& tensor, std::string_view site,
                                   const PayloadIndex& index, const std::string& source,
                                   std::string_view unknown_location);

// --- Reading side ---

// One problem with a reference or the model entry, for load (which throws on the first error)
// and verify (which collects them all).
struct Issue {
  VerifyFinding::Severity severity = VerifyFinding::Severity::kError;
  ErrorCode code = ErrorCode::kCorrupt;  // For errors.
  std::string entry{};                   // The entry's name, for VerifyFinding::entry.
  std::string tensor{};                  // The tensor's label, for VerifyFinding::tensor.
  std::uint64_t offset = 0;
  ErrorContext place{};  // The tensor and entry; the sink adds the file.
  std::string problem{};

  // The issue as an Error naming `source` first.
  Error error(const std::string& source) const {
    ErrorContext context = place;
    context.file = source;
    return Error(code, std::move(context), problem);
  }
};
using IssueSink = std::function<void(Issue)>;

// Spec §9.4 items 1 and 2: the entry named __MODEL_PROTO, reported as errors when it is missing
// (nullptr returned) or is not last in file or central directory order.
const ZipEntry* find_model_entry(const ZipReader& zip, const IssueSink& report);

// Spec §9.4 items 3 and 4 for one tensor whose data_location is EXTERNAL: errors for what a
// reader must reject, warnings for the findings. Returns the entry when the reference resolves,
// nullptr after an error.
const ZipEntry* check_reference(const TensorProto& tensor, std::string_view site,
                                const ZipReader& zip, const IssueSink& report);

// f()'s result, read from `file`, unless the file changed while f() read it (a write that no
// lock kept out, spec §9.6): then Error(kChanged) naming it, also in place of an Error f() threw,
// which may be what the change made of the bytes.
template <typename F>
auto unless_changed(const MappedFile& file, F&& f) {
  const auto changed = [&] {
    return Error(ErrorCode::kChanged, {.file = file.path().string()},
                 "the file changed while it was being read; reading it again may succeed");
  };
  try {
    auto result = std::forward<F>(f)();
    if (file.changed()) throw changed();
    return result;
  } catch (const Error& error) {
    if (error.code() != ErrorCode::kChanged && file.changed()) throw changed();
    throw;
  }
}

// f()'s result, f() reading `file` that a reader opened by path (spec §9.6): a file read whole
// (FileAccess::kRead) was read under the readers' lock by MappedFile::open; a mapped one is read
// under that lock now, and a change no lock kept out is Error(kChanged) (unless_changed).
template <typename F>
auto read_as_reader(const MappedFile& file, F&& f) {
  if (file.access() == FileAccess::kRead) return std::forward<F>(f)();
  const detail::SharedFileLock lock(file.descriptor(), file.path().string());
  return unless_changed(file, std::forward<F>(f));
}

// An IssueSink for loaders: throws the first error as issue.error(source), ignores warnings.
IssueSink throwing_sink(const std::string& source);

// The entry's uncompressed bytes: a stored entry borrowed with the reader's owner token, a
// deflated one inflated (CRC-32 always checked, spec §9.3 item 1; a large one into a mapped spill
// file, zip_reader.h) and borrowed with its buffer as token. With `verify_crc` a stored entry's
// CRC-32 is checked too.
TensorBytes entry_payload(const ZipReader& zip, const ZipEntry& entry, bool verify_crc);

}  // namespace onnxzip::archive_detail

#endif  // ONNXZIP_ARCHIVE_INTERNAL_H_
