// Private to the zip layer: the parser that reads a ZIP archive's structure into a ZipReader.
// Its parts live by seam: zip_end_records.cpp (end of central directory and zip64 records),
// zip_central_directory.cpp (central directory records, names, order) and zip_local_headers.cpp
// (local headers, their read-ahead, data descriptors).
#ifndef ONNXZIP_SRC_ZIP_PARSER_H_
#define ONNXZIP_SRC_ZIP_PARSER_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "message_text.h"
#include "onnxzip/error.h"
#include "onnxzip/zip_reader.h"
#include "zip_records.h"

namespace onnxzip {
namespace zip {

constexpr std::uint64_t kMaxCommentLength = 0xFFFF;
// APPNOTE 4.3.16: the end record is the last record, followed only by its comment.
constexpr std::uint64_t kMaxEndRecordSearch = zip::EndOfCentralDirectory::kSize + kMaxCommentLength;
// Deflate cannot expand more than 1032:1 (a 258-byte match coded in two bits is the best case),
// so a larger claimed ratio is a lie, refused before anything is allocated for it.
constexpr std::uint64_t kMaxDeflateRatio = 1032;
constexpr std::uint64_t kMaxAlignment = 65536;
constexpr std::uint64_t kWantedAlignment = 64;
// Flag bits 0, 6 and 13 all mean some form of encryption (APPNOTE 4.4.4).
constexpr std::uint16_t kEncryptionFlags =
    zip::kFlagEncrypted | zip::kFlagStrongEncryption | zip::kFlagMaskedHeaders;
// Flag bits that change how an entry is read, so local and central headers must agree on them.
constexpr std::uint16_t kStructuralFlags = kEncryptionFlags | zip::kFlagDataDescriptor;
// Bytes read past a local header's name in one pread(), enough for a zip64 record and the
// alignment record of A = 64; a longer extra field takes a second read.
constexpr std::size_t kLocalExtraGuess = 128;
// Local headers copied by pread() in all; past this (only hostile archives get there: padding
// records of up to 64 KiB per entry), the rest are read through the mapping.
constexpr std::uint64_t kMaxLocalHeaderCopies = std::uint64_t{64} << 20;
// The local header copies are packed into buffers of this size (see local_bytes).
constexpr std::size_t kLocalHeaderChunk = std::size_t{64} << 10;
// Archives with fewer entries read their local headers on one thread: starting a second one
// costs about as much as a hundred reads.
constexpr std::size_t kPrefetchMinEntries = 256;

inline std::string_view as_chars(ByteSpan bytes) noexcept {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

// Calls f(); an Error it throws gets prefix() in front of its problem (record decoders name the
// record and offset but not the file or entry, so they give no context of their own).
// prefix() runs only on that path.
template <typename Prefix, typename F>
auto with_context(const Prefix& prefix, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error& e) {
    throw Error(e.code(), prefix() + ": " + e.message());
  }
}

}  // namespace zip

// Reads the structure into a ZipReader; one use. Every number from the file goes through fits()
// or checked_add() before it becomes an offset, and every loop is bounded by a count checked
// against the bytes that could hold it.
class ZipReader::Parser final {
 public:
  // `local_fd`, when not -1, is the archive file, open for reading (see local_bytes).
  explicit Parser(ZipReader& reader, int local_fd = -1)
      : r_(reader), file_(reader.bytes_), local_fd_(local_fd) {}

  void run() {
    locate_end_records();
    read_central_directory();
    order_entries();
    read_local_headers();
    if (!r_.comment_.empty()) {
      add_finding(ZipFindingKind::kArchiveComment, "", r_.end_record_offset_,
                  "archive comment of " + std::to_string(r_.comment_.size()) + " bytes");
    }
  }

 private:
  // What the end records say, after zip64 resolution.
  struct Directory {
    std::uint64_t entries = 0;
    std::uint64_t size = 0;
    std::uint64_t offset = 0;
  };

  [[noreturn]] void fail(ErrorCode code, const std::string& place, const std::string& what) const {
    throw Error(code, place + ": " + what);
  }
  [[noreturn]] void fail_at(ErrorCode code, const char* record, std::uint64_t offset,
                            const std::string& what) const {
    fail(code, r_.source_name_ + ": " + record + " at offset " + std::to_string(offset), what);
  }
  // The place of an entry's record, for the Errors of the record decoders (which name the
  // record and offset but not the file or entry) and, joined, for fail().
  ErrorContext central_context(std::string_view name, std::uint64_t offset) const {
    return {.file = r_.source_name_,
            .entry = "entry " + detail::quote(name) + " (central directory record at offset " +
                     std::to_string(offset) + ")"};
  }
  ErrorContext local_context(const ZipEntry& e) const {
    return {.file = r_.source_name_,
            .entry = "entry " + detail::quote(e.name) + " (local header at offset " +
                     std::to_string(e.local_header_offset) + ")"};
  }
  ErrorContext file_context() const { return {.file = r_.source_name_}; }
  static std::string joined(const ErrorContext& place) { return place.file + ": " + place.entry; }
  std::string central_place(std::string_view name, std::uint64_t offset) const {
    return joined(central_context(name, offset));
  }
  std::string local_place(const ZipEntry& e) const { return joined(local_context(e)); }
  void add_finding(ZipFindingKind kind, const std::string& entry, std::uint64_t offset,
                   std::string message) {
    r_.findings_.push_back({kind, entry, offset, std::move(message)});
  }

  void locate_end_records();
  // The end record whose comment reaches the end of file_ exactly (nullopt when none does), and
  // the candidate nearest to the end that does not, for the message.
  std::optional<std::uint64_t> find_end_record(
      std::optional<std::uint64_t>& nearest_mismatch) const;
  // spec §9.6: when file_ ends with an interrupted edit record, shrinks file_ (and the reader's
  // bytes) to the archive it points to and returns true.
  bool skip_interrupted_edit();
  Directory read_zip64_end_records(const zip::EndOfCentralDirectory& end, std::uint64_t end_offset);
  // Where the zip64 locator at `locator_offset` says the zip64 end record is.
  std::uint64_t zip64_end_record_offset(std::uint64_t locator_offset) const;
  void check_zip64_end_record(const zip::Zip64EndOfCentralDirectory& record,
                              std::uint64_t record_offset, std::uint64_t locator_offset) const;
  void check_end_agrees(const zip::EndOfCentralDirectory& end, std::uint64_t end_offset,
                        const zip::Zip64EndOfCentralDirectory& record,
                        std::uint64_t record_offset) const;
  void read_central_directory();
  // The record that locates the central directory, for messages.
  const char* end_record_name() const {
    return r_.zip64_end_record_ ? "zip64 end of central directory record"
                                : "end of central directory record";
  }
  // Checks the end records' offset, size and count of the central directory against each other
  // and the limits; returns where the directory ends.
  std::uint64_t check_directory_extent() const;
  void note_case_only_duplicates();
  // A central directory record: its fixed part and where its variable parts are.
  struct CentralRecord {
    zip::CentralDirectoryHeader header;
    std::uint64_t offset = 0;
    ByteSpan name;
    ByteSpan extra;
    std::uint64_t extra_offset = 0;
    ByteSpan comment;
    std::uint64_t end = 0;  // Where the next record starts.
  };
  // Reads the record at `position` into the next entry (central_index) and moves `position`
  // past it.
  void read_central_record(std::uint64_t& position, std::uint64_t directory_end,
                           std::size_t central_index);
  CentralRecord central_record_at(std::uint64_t offset, std::uint64_t directory_end) const;
  // `place` (a callable returning the entry's place for messages) runs only on failure.
  template <typename Place>
  void check_method(const zip::CentralDirectoryHeader& h, const Place& place) const;
  // Splits an entry's extra field (at file `offset`), notes its unknown record ids, and returns
  // its zip64 record, if any; two are corrupt. `header` tells where, for that message: "" for
  // the central directory, " in the local header".
  template <typename Place>
  std::optional<zip::ExtraRecord> read_extra_field(ByteSpan extra, std::uint64_t offset,
                                                   std::size_t central_index, const Place& place,
                                                   std::string_view header);
  ZipEntry central_entry(const CentralRecord& record, std::size_t central_index) const;
  template <typename Place>
  void apply_central_zip64(ZipEntry& e, const zip::CentralDirectoryHeader& h,
                           const std::optional<zip::ExtraRecord>& zip64, const Place& place) const;
  template <typename Place>
  void check_sizes(const ZipEntry& e, const Place& place) const;
  void note_central_findings(const ZipEntry& e, std::uint16_t flags);
  void check_name(std::string_view name, std::uint64_t offset) const;
  void order_entries();
  void read_local_headers();
  // An entry's bytes end at the next entry's local header, or at the central directory.
  std::uint64_t limit_of(const ZipEntry* next) const {
    return next != nullptr ? next->local_header_offset : r_.central_directory_offset_;
  }
  std::string limit_text(const ZipEntry* next) const {
    return next != nullptr
               ? "the local header of entry " + detail::quote(next->name) + " at offset " +
                     std::to_string(next->local_header_offset)
               : "the central directory at offset " + std::to_string(r_.central_directory_offset_);
  }
  // A local header's fixed part, and its bytes up to the end of its extra field.
  struct LocalRecord {
    zip::LocalFileHeader header;
    ByteSpan bytes;
  };
  struct LocalSizes {
    std::uint64_t compressed = 0;
    std::uint64_t uncompressed = 0;
  };
  // Checks entry e's local header against its central record and sets where its data is.
  void read_local_header(ZipEntry& e, const ZipEntry* next);
  LocalRecord local_record_of(const ZipEntry& e, const ZipEntry* next);
  void check_local_agrees(const ZipEntry& e, const zip::LocalFileHeader& h,
                          std::string_view local_name) const;
  // The local header's sizes, with the zip64 record's where they hold the sentinel.
  template <typename Place>
  LocalSizes local_sizes(const zip::LocalFileHeader& h,
                         const std::optional<zip::ExtraRecord>& zip64, const Place& place) const;
  void compare_local_sizes(const ZipEntry& e, const zip::LocalFileHeader& h,
                           const LocalSizes& sizes) const;
  void locate_entry_data(ZipEntry& e, const ZipEntry* next);
  ByteSpan local_bytes(std::uint64_t offset, std::uint64_t size);
  // The reader's buffers of local header copies, made on first use.
  std::vector<std::vector<std::uint8_t>>& header_copies() {
    if (!r_.local_header_copies_) {
      r_.local_header_copies_ = std::make_shared<std::vector<std::vector<std::uint8_t>>>();
    }
    return *r_.local_header_copies_;
  }
  // The bytes local_record_of reads first, for every entry at once (see the definition).
  void prefetch_local_headers();
  std::uint64_t first_read_size(const ZipEntry& e, const ZipEntry* next) const {
    return std::min<std::uint64_t>(
        limit_of(next) - e.local_header_offset,
        zip::LocalFileHeader::kSize + e.name.size() + zip::kLocalExtraGuess);
  }
  std::uint64_t read_data_descriptor(const ZipEntry& e, std::uint64_t at, std::uint64_t limit,
                                     const ZipEntry* next) const;
  void note_unknown_extras(const std::vector<zip::ExtraRecord>& records,
                           std::vector<std::uint16_t>& unknown) const;

  ZipReader& r_;
  // The archive's bytes: all of reader.bytes_, or its first bytes when an interrupted edit's
  // bytes follow them (spec §9.6; locate_end_records shrinks both).
  ByteSpan file_;
  const int local_fd_;
  std::uint64_t local_copied_ = 0;
  // Per entry (file order), its local header's first bytes from prefetch_local_headers(), or an
  // empty span when they were not fetched.
  std::vector<ByteSpan> prefetched_;
  Directory directory_;
  // Per entry (central order during parsing): unknown extra field ids seen in either header.
  std::vector<std::vector<std::uint16_t>> unknown_extras_;
};

template <typename Place>
std::optional<zip::ExtraRecord> ZipReader::Parser::read_extra_field(ByteSpan extra,
                                                                    std::uint64_t offset,
                                                                    std::size_t central_index,
                                                                    const Place& place,
                                                                    std::string_view header) {
  const std::vector<zip::ExtraRecord> records = zip::with_context(
      place, [&] { return zip::split_extra_field(extra, offset, "extra field"); });
  std::optional<zip::ExtraRecord> zip64;
  for (const zip::ExtraRecord& record : records) {
    if (record.id != zip::kExtraZip64) continue;
    if (zip64) {
      fail(ErrorCode::kCorrupt, place(),
           "two zip64 extra fields" + std::string(header) + " (offsets " +
               std::to_string(zip64->offset) + " and " + std::to_string(record.offset) + ")");
    }
    zip64 = record;
  }
  note_unknown_extras(records, unknown_extras_[central_index]);
  return zip64;
}

}  // namespace onnxzip

#endif  // ONNXZIP_SRC_ZIP_PARSER_H_
