// Private to the archive layer (src/archive_*.cpp): the rules that the writer, the loader, the
// verifier and the view writer share, so each is stated once. Not installed.
#ifndef ONNXZIP_ARCHIVE_INTERNAL_H_
#define ONNXZIP_ARCHIVE_INTERNAL_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "message_text.h"
#include "onnxzip/archive.h"
#include "onnxzip/bytes.h"
#include "onnxzip/error.h"
#include "onnxzip/onnx_model.h"
#include "onnxzip/zip_reader.h"

namespace onnxzip::archive_detail {

inline constexpr std::string_view kLocationKey = "location";
inline constexpr std::string_view kLengthKey = "length";
inline constexpr std::string_view kOffsetKey = "offset";

using detail::quote;
// Decimal digits only (no sign, no space, at least one digit), no overflow.
bool parse_decimal(std::string_view text, std::uint64_t& value) noexcept;

// Why `location` is not a valid payload entry name (spec §6.1), in words naming the kind of path
// it is ("..", absolute, "#...", ONNX Runtime's _ORT_MEM_ADDR_ marker...), or "" when it is one.
std::string location_problem(std::string_view location);

// A metadata-only copy of `tensor` referring to entry `location` of `length` bytes, in the
// canonical form of spec §7.2: name, dims, data_type, segment, doc_string, metadata_props and
// unknown fields kept; data_location EXTERNAL; external_data exactly [location, length].
TensorProto make_reference(const TensorProto& tensor, std::string_view location,
                           std::uint64_t length);

// The value of the first external_data entry with key `key`, or nullptr.
const Text* external_value(const TensorProto& tensor, std::string_view key) noexcept;

// --- Writing side ---

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
  std::vector<Entry> entries_;
  std::unordered_map<std::string, std::size_t> by_location_;
};

// The writers' rule for one EXTERNAL tensor of a model they write (spec §7.2): its location is a
// valid payload entry name (§6.1) naming an entry of `index`; it carries no payload; its type has
// a fixed element size and dims x element size equals the entry's size; a length, when given,
// equals it; an offset, when given, is 0; there is no other key. Returns the entry's index.
// Error(kInvalidArgument) "<source>: <tensor label>: <problem>"; for a location naming no entry
// the problem ends with `unknown_location` (why the caller's index does not have it).
std::size_t check_writer_reference(const TensorProto& tensor, std::string_view site,
                                   const PayloadIndex& index, const std::string& source,
                                   std::string_view unknown_location);

// --- Reading side ---

// One problem with a reference or the model entry, for load (which throws on the first error)
// and verify (which collects them all).
struct Issue {
  VerifyFinding::Severity severity = VerifyFinding::Severity::kError;
  ErrorCode code = ErrorCode::kCorrupt;  // For errors.
  std::string entry;
  std::string tensor;
  std::uint64_t offset = 0;
  std::string message;  // Complete: names the tensor and the entry itself.
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

// An IssueSink for loaders: throws the first error as Error(code, "<source>: <message>"),
// ignores warnings.
IssueSink throwing_sink(const std::string& source);

// The entry's uncompressed bytes: a stored entry borrowed with the reader's owner token, a
// deflated one inflated (CRC-32 always checked, spec §9.3 item 1; a large one into a mapped spill
// file, zip_reader.h) and borrowed with its buffer as token. With `verify_crc` a stored entry's
// CRC-32 is checked too.
TensorBytes entry_payload(const ZipReader& zip, const ZipEntry& entry, bool verify_crc);

}  // namespace onnxzip::archive_detail

#endif  // ONNXZIP_ARCHIVE_INTERNAL_H_
