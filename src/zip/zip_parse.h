// Private to the zip layer: what the parts of ZipReader's parser share -- its limits, how its
// messages name places, and the reading of extra fields, which both headers of an entry have.
// The parts: zip_end_records.cpp (end records), zip_central_directory.cpp (central directory),
// zip_local_headers.cpp (local headers and data descriptors). Every number from the file goes
// through fits() or an overflow check before it becomes an offset, and every loop is bounded by
// a count checked against the bytes that could hold it.
#ifndef ONNXZIP_SRC_ZIP_PARSE_H_
#define ONNXZIP_SRC_ZIP_PARSE_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "message_text.h"
#include "onnxzip/error.h"
#include "onnxzip/internal/zip_reader.h"
#include "zip_records.h"

namespace onnxzip::zip {

constexpr std::uint64_t kMaxCommentLength = 0xFFFF;
// APPNOTE 4.3.16: the end record is the last record, followed only by its comment.
constexpr std::uint64_t kMaxEndRecordSearch = EndOfCentralDirectory::kSize + kMaxCommentLength;
// Deflate cannot expand more than 1032:1 (a 258-byte match coded in two bits is the best case),
// so a larger claimed ratio is a lie, refused before anything is allocated for it.
constexpr std::uint64_t kMaxDeflateRatio = 1032;
constexpr std::uint64_t kMaxAlignment = 65536;
constexpr std::uint64_t kWantedAlignment = 64;
// Flag bits 0, 6 and 13 all mean some form of encryption (APPNOTE 4.4.4).
constexpr std::uint16_t kEncryptionFlags =
    kFlagEncrypted | kFlagStrongEncryption | kFlagMaskedHeaders;
// Flag bits that change how an entry is read, so local and central headers must agree on them.
constexpr std::uint16_t kStructuralFlags = kEncryptionFlags | kFlagDataDescriptor;
// The most a data descriptor takes: signature, CRC-32 and two 8-byte sizes (APPNOTE 4.3.9).
constexpr std::uint64_t kMaxDataDescriptorSize = 24;

inline std::string_view as_chars(ByteSpan bytes) noexcept {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

// How the parser's messages name the places of problems in the archive `source`: the file and
// entry as the Error's context, so that a caller can tell them from the problem. Record decoders
// (zip_records.h) name the record and offset but not the file or entry; their Errors get the
// place with with_error_context (error.h).
class ZipPlaces final {
 public:
  explicit ZipPlaces(std::string source) : source_(std::move(source)) {}

  const std::string& source() const noexcept { return source_; }
  [[noreturn]] void fail(ErrorCode code, ErrorContext place, std::string what) const {
    throw Error(code, std::move(place), std::move(what));
  }
  // A problem of a record that is not an entry's: the record and its offset open the problem.
  [[noreturn]] void fail_at(ErrorCode code, std::string_view record, std::uint64_t offset,
                            const std::string& what) const {
    fail(code, file_place(),
         std::string(record) + " at offset " + std::to_string(offset) + ": " + what);
  }
  ErrorContext file_place() const { return {.file = source_}; }
  ErrorContext central_place(std::string_view name, std::uint64_t offset) const {
    return {.file = source_,
            .entry = "entry " + detail::quote(name) + " (central directory record at offset " +
                     std::to_string(offset) + ")",
            .entry_name = std::string(name),
            .offset = offset};
  }
  ErrorContext local_place(const ZipEntry& e) const {
    return {.file = source_,
            .entry = "entry " + detail::quote(e.name) + " (local header at offset " +
                     std::to_string(e.local_header_offset) + ")",
            .entry_name = e.name,
            .offset = e.local_header_offset};
  }

 private:
  std::string source_;
};

// Per entry (by central_index): the extra field ids of either header that the reader ignores,
// each once, for the kUnknownExtraField finding.
using UnknownExtras = std::vector<std::vector<std::uint16_t>>;

inline void note_unknown_extras(const std::vector<ExtraRecord>& records,
                                std::vector<std::uint16_t>& unknown) {
  for (const ExtraRecord& record : records) {
    if (record.id == kExtraZip64 || record.id == kExtraAlignment) continue;
    if (std::find(unknown.begin(), unknown.end(), record.id) == unknown.end()) {
      unknown.push_back(record.id);
    }
  }
}

// Splits an entry's extra field (at file `offset`), notes its unknown record ids in `unknown`
// (when not null), and returns its zip64 record, if any; two are corrupt. `header` tells where,
// for that message: "" for the central directory, " in the local header". `place` (a callable
// returning the entry's place for messages) runs only on failure.
template <typename Place>
std::optional<ExtraRecord> read_extra_field(const ZipPlaces& places, ByteSpan extra,
                                            std::uint64_t offset, const Place& place,
                                            std::string_view header,
                                            std::vector<std::uint16_t>* unknown) {
  const std::vector<ExtraRecord> records =
      with_error_context(place, [&] { return split_extra_field(extra, offset, "extra field"); });
  std::optional<ExtraRecord> zip64;
  for (const ExtraRecord& record : records) {
    if (record.id != kExtraZip64) continue;
    if (zip64) {
      places.fail(ErrorCode::kCorrupt, place(),
                  "two zip64 extra fields" + std::string(header) + " (offsets " +
                      std::to_string(zip64->offset) + " and " + std::to_string(record.offset) +
                      ")");
    }
    zip64 = record;
  }
  if (unknown != nullptr) note_unknown_extras(records, *unknown);
  return zip64;
}

}  // namespace onnxzip::zip

#endif  // ONNXZIP_SRC_ZIP_PARSE_H_
