#include "onnxzip/zip_reader.h"

#include <fcntl.h>
#include <libdeflate.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>

#include "little_endian.h"
#include "message_text.h"
#include "onnxzip/crc32.h"
#include "onnxzip/error.h"
#include "onnxzip/mapped_file.h"
#include "posix_file.h"
#include "zip_records.h"

namespace onnxzip {
namespace {

using detail::ascii_lower;
using detail::hex;
using detail::is_ascii_letter;
using detail::quote;
using detail::utf8_sequence_length;

using detail::load_le16;
using detail::load_le32;
using detail::load_le64;

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

bool is_valid_utf8(std::string_view text) noexcept {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = utf8_sequence_length(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

bool is_ascii(std::string_view text) noexcept {
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

std::string_view as_chars(ByteSpan bytes) noexcept {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

// Hashing and equality of names under ASCII lower-casing, without copying them.
struct AsciiCaseHash {
  std::size_t operator()(std::string_view text) const noexcept {
    std::uint64_t hash = 0xcbf29ce484222325u;  // FNV-1a.
    for (const char c : text) {
      hash = (hash ^ static_cast<unsigned char>(ascii_lower(c))) * 0x100000001b3u;
    }
    return static_cast<std::size_t>(hash);
  }
};
struct AsciiCaseEqual {
  bool operator()(std::string_view a, std::string_view b) const noexcept {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
             return ascii_lower(x) == ascii_lower(y);
           });
  }
};

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

struct LibdeflateDecompressorDelete {
  void operator()(libdeflate_decompressor* d) const noexcept { libdeflate_free_decompressor(d); }
};

// The messages of a deflate stream that disagrees with its entry, the same whichever inflater
// found it.
[[noreturn]] void throw_longer_stream(const std::string& place, std::uint64_t size) {
  throw Error(ErrorCode::kCorrupt, place + ": the deflate stream inflates to more than the " +
                                       std::to_string(size) + " bytes recorded");
}
[[noreturn]] void throw_invalid_stream(const std::string& place, std::uint64_t compressed_size,
                                       std::uint64_t data_offset) {
  throw Error(ErrorCode::kCorrupt, place + ": invalid deflate stream in the " +
                                       std::to_string(compressed_size) + " bytes at offset " +
                                       std::to_string(data_offset));
}
void check_stream_end(const std::string& place, const ZipEntry& e, std::uint64_t produced,
                      std::uint64_t consumed) {
  if (produced != e.size) {
    throw Error(ErrorCode::kCorrupt, place + ": the deflate stream inflates to " +
                                         std::to_string(produced) + " bytes, not the " +
                                         std::to_string(e.size) + " recorded");
  }
  if (consumed != e.compressed_size) {
    throw Error(ErrorCode::kCorrupt, place + ": the deflate stream ends at offset " +
                                         std::to_string(e.data_offset + consumed) + ", " +
                                         std::to_string(e.compressed_size - consumed) +
                                         " bytes before the entry's compressed data does");
  }
}

// zlib's inflater, freed on scope exit.
class ZlibInflater final {
 public:
  ZlibInflater() : ok_(inflateInit2(&stream_, -MAX_WBITS) == Z_OK) {}  // Raw deflate.
  ~ZlibInflater() {
    if (ok_) inflateEnd(&stream_);
  }
  ZlibInflater(const ZlibInflater&) = delete;
  ZlibInflater& operator=(const ZlibInflater&) = delete;
  bool ok() const noexcept { return ok_; }
  z_stream& stream() noexcept { return stream_; }

 private:
  z_stream stream_{};
  bool ok_;
};

// Inflates the entry's deflate stream `raw` with zlib, handing the output to `consumer` in
// pieces of at most ZipReader::kStreamPieceBytes: memory stays bounded whatever the entry's size
// (libdeflate, faster, inflates only whole buffers). The stream must produce exactly e.size
// bytes -- no piece past them is handed on -- and end exactly at the end of `raw`. Returns the
// CRC-32 of the output.
std::uint32_t inflate_in_pieces(ByteSpan raw, const ZipEntry& e, const std::string& place,
                                const std::function<void(ByteSpan)>& consumer) {
  // zlib counts in 32-bit unsigned ints.
  constexpr std::size_t kMaxInput = std::size_t{1} << 30;
  ZlibInflater inflater;
  const auto buffer = std::make_unique_for_overwrite<std::uint8_t[]>(ZipReader::kStreamPieceBytes);
  if (!inflater.ok() || buffer == nullptr) {
    throw Error(ErrorCode::kLimitExceeded, place + ": cannot allocate an inflater");
  }
  z_stream& z = inflater.stream();
  ByteSpan input = raw;
  std::uint64_t produced = 0;
  std::uint32_t crc = 0;
  for (;;) {
    if (z.avail_in == 0 && !input.empty()) {
      const std::size_t n = std::min(input.size(), kMaxInput);
      z.next_in = const_cast<Bytef*>(input.data());  // zlib never writes through it.
      z.avail_in = static_cast<uInt>(n);
      input = input.subspan(n);
    }
    z.next_out = buffer.get();
    z.avail_out = static_cast<uInt>(ZipReader::kStreamPieceBytes);
    const int result = inflate(&z, Z_NO_FLUSH);
    const std::size_t count = ZipReader::kStreamPieceBytes - z.avail_out;
    if (count > e.size - produced) throw_longer_stream(place, e.size);
    if (count != 0) {
      const ByteSpan piece(buffer.get(), count);
      produced += count;
      crc = onnxzip::crc32(piece, crc);
      consumer(piece);
    }
    if (result == Z_STREAM_END) break;
    if (result == Z_OK || (result == Z_BUF_ERROR && (z.avail_in != 0 || !input.empty()))) {
      continue;
    }
    if (result == Z_MEM_ERROR) {
      throw Error(ErrorCode::kLimitExceeded, place + ": out of memory while inflating");
    }
    // Z_DATA_ERROR, or Z_BUF_ERROR with all input used: a bad or truncated stream.
    throw_invalid_stream(place, raw.size(), e.data_offset);
  }
  check_stream_end(place, e, produced, raw.size() - input.size() - z.avail_in);
  return crc;
}

// An unlinked temporary file in `directory`, open for reading and writing, or -1 (errno set).
// O_TMPFILE never gives the file a name, so nothing is left behind whatever happens to the
// process; file systems without it get a named file that is removed at once.
int open_spill_file(const std::filesystem::path& directory) {
  const int fd = ::open(directory.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)) return fd;
  std::string name = (directory / ".onnxzip-spill.XXXXXX").string();
  const int named = ::mkostemp(name.data(), O_CLOEXEC);
  if (named >= 0) ::unlink(name.c_str());
  return named;
}

// Writes all of `bytes` to `fd`; false (errno set) on failure.
bool write_all(int fd, ByteSpan bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (n == 0) {
      errno = ENOSPC;
      return false;
    }
    bytes = bytes.subspan(static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace

std::uint64_t ZipEntry::alignment() const noexcept {
  if (data_offset == 0) return kMaxAlignment;
  return std::min(data_offset & (~data_offset + 1), kMaxAlignment);
}

std::string_view to_string(ZipFindingKind kind) noexcept {
  switch (kind) {
    case ZipFindingKind::kDeflated:
      return "deflated";
    case ZipFindingKind::kDataDescriptor:
      return "data_descriptor";
    case ZipFindingKind::kUnaligned:
      return "unaligned";
    case ZipFindingKind::kDirectory:
      return "directory";
    case ZipFindingKind::kNameEncoding:
      return "name_encoding";
    case ZipFindingKind::kArchiveComment:
      return "archive_comment";
    case ZipFindingKind::kEntryComment:
      return "entry_comment";
    case ZipFindingKind::kUnknownExtraField:
      return "unknown_extra_field";
    case ZipFindingKind::kCaseOnlyDuplicate:
      return "case_only_duplicate";
    case ZipFindingKind::kGap:
      return "gap";
    case ZipFindingKind::kHeaderMismatch:
      return "header_mismatch";
    case ZipFindingKind::kInterruptedEdit:
      return "interrupted_edit";
  }
  return "unknown";
}

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
            .entry = "entry " + quote(name) + " (central directory record at offset " +
                     std::to_string(offset) + ")"};
  }
  ErrorContext local_context(const ZipEntry& e) const {
    return {.file = r_.source_name_,
            .entry = "entry " + quote(e.name) + " (local header at offset " +
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
               ? "the local header of entry " + quote(next->name) + " at offset " +
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
    return std::min<std::uint64_t>(limit_of(next) - e.local_header_offset,
                                   zip::LocalFileHeader::kSize + e.name.size() + kLocalExtraGuess);
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

void ZipReader::Parser::locate_end_records() {
  using End = zip::EndOfCentralDirectory;
  const std::uint64_t size = file_.size();
  if (size < End::kSize) {
    fail(ErrorCode::kCorrupt, r_.source_name_,
         "not a ZIP archive: " + std::to_string(size) +
             " bytes cannot hold an end of central directory record (22 bytes)");
  }
  std::optional<std::uint64_t> nearest_mismatch;
  std::optional<std::uint64_t> chosen = find_end_record(nearest_mismatch);
  if (!chosen && skip_interrupted_edit()) {
    chosen = find_end_record(nearest_mismatch);
    if (!chosen) {
      fail_at(ErrorCode::kCorrupt, "interrupted edit record", r_.findings_.back().offset,
              "the archive it points to ends at offset " + std::to_string(file_.size()) +
                  ", but no end of central directory record ends there");
    }
  }
  if (!chosen) {
    if (nearest_mismatch) {
      const std::uint64_t comment_end =
          *nearest_mismatch + End::kSize + load_le16(file_.data() + *nearest_mismatch + 20);
      fail_at(ErrorCode::kCorrupt, "end of central directory record", *nearest_mismatch,
              "its comment ends at offset " + std::to_string(comment_end) + " but the file has " +
                  std::to_string(size) + " bytes (bytes after the archive, or a truncated file)");
    }
    fail(ErrorCode::kCorrupt, r_.source_name_,
         "not a ZIP archive: no end of central directory record in the last " +
             std::to_string(std::min(size, kMaxEndRecordSearch)) + " bytes");
  }

  const std::uint64_t end_offset = *chosen;
  const End end = End::decode(file_, end_offset);
  r_.end_record_offset_ = end_offset;
  r_.comment_ = file_.subspan(end_offset + End::kSize, end.comment_length);

  const std::uint64_t locator_offset = end_offset - std::min<std::uint64_t>(end_offset, 20);
  const bool has_locator =
      end_offset >= zip::Zip64EndLocator::kSize &&
      load_le32(file_.data() + locator_offset) == zip::Zip64EndLocator::kSignature;
  if (has_locator) {
    directory_ = read_zip64_end_records(end, end_offset);
  } else {
    // Without zip64 records a sentinel value is taken literally (65535 entries is legal there).
    if (end.disk_number != 0 || end.central_directory_disk != 0) {
      fail_at(ErrorCode::kUnsupported, "end of central directory record", end_offset,
              "multi-disk archive (this is disk " + std::to_string(end.disk_number) +
                  ", the central directory starts on disk " +
                  std::to_string(end.central_directory_disk) + ")");
    }
    if (end.entries_on_disk != end.entries_total) {
      fail_at(ErrorCode::kCorrupt, "end of central directory record", end_offset,
              "counts " + std::to_string(end.entries_on_disk) + " entries on this disk but " +
                  std::to_string(end.entries_total) + " in total, on a single-disk archive");
    }
    directory_ = {end.entries_total, end.central_directory_size, end.central_directory_offset};
    r_.tail_offset_ = end_offset;
  }
}

std::optional<std::uint64_t> ZipReader::Parser::find_end_record(
    std::optional<std::uint64_t>& nearest_mismatch) const {
  using End = zip::EndOfCentralDirectory;
  const std::uint64_t size = file_.size();
  if (size < End::kSize) return std::nullopt;
  // Scan back from the end. Several candidates may reach the end exactly when the archive
  // comment holds a ZIP of its own; the farthest from the end wins (the others lie inside its
  // comment).
  const std::uint64_t lowest = size - std::min(size, kMaxEndRecordSearch);
  std::optional<std::uint64_t> chosen;
  nearest_mismatch.reset();
  for (std::uint64_t pos = size - End::kSize + 1; pos-- > lowest;) {
    const std::uint8_t* p = file_.data() + pos;
    if (load_le32(p) != End::kSignature) continue;
    const std::uint64_t comment_length = load_le16(p + 20);
    if (pos + End::kSize + comment_length == size) {
      chosen = pos;
    } else if (!nearest_mismatch) {
      nearest_mismatch = pos;
    }
  }
  return chosen;
}

bool ZipReader::Parser::skip_interrupted_edit() {
  using Record = zip::InterruptedEditRecord;
  const std::uint64_t size = file_.size();
  if (size < Record::kSize ||
      load_le64(file_.data() + size - Record::kSize) != Record::kSignature) {
    return false;
  }
  const std::uint64_t record_offset = size - Record::kSize;
  const Record record = Record::decode(file_, record_offset);
  // Strict: the record says where it is, and both archives it names lie before it, the new tail
  // past the old archive.
  if (record.record_offset != record_offset || record.old_end > record.new_start ||
      record.new_start > record.new_end || record.new_end > record_offset) {
    fail_at(ErrorCode::kCorrupt, "interrupted edit record", record_offset,
            "says it is at offset " + std::to_string(record.record_offset) +
                ", the old archive ends at offset " + std::to_string(record.old_end) +
                " and the new tail spans offsets " + std::to_string(record.new_start) + " to " +
                std::to_string(record.new_end) + "; a file of " + std::to_string(size) +
                " bytes cannot hold that in that order (spec §9.6)");
  }
  // The new tail is the archive's once it was written whole; until then the old archive is.
  const ByteSpan new_tail =
      file_.subspan(static_cast<std::size_t>(record.new_start),
                    static_cast<std::size_t>(record.new_end - record.new_start));
  const bool switched = crc32(new_tail) == record.new_crc32;
  const std::uint64_t archive_end = switched ? record.new_end : record.old_end;
  file_ = file_.first(static_cast<std::size_t>(archive_end));
  r_.bytes_ = file_;
  add_finding(ZipFindingKind::kInterruptedEdit, "", record_offset,
              "an interrupted edit left " + std::to_string(size - archive_end) +
                  " bytes after the archive's end at offset " + std::to_string(archive_end) +
                  " (up to its record at offset " + std::to_string(record_offset) +
                  "); the archive is " +
                  (switched ? "the edit's new one, written whole" : "the one the edit began from") +
                  "; editing the archive again or repacking it removes them (spec §9.6)");
  return true;
}

ZipReader::Parser::Directory ZipReader::Parser::read_zip64_end_records(
    const zip::EndOfCentralDirectory& end, std::uint64_t end_offset) {
  using End64 = zip::Zip64EndOfCentralDirectory;
  const std::uint64_t locator_offset = end_offset - zip::Zip64EndLocator::kSize;
  const std::uint64_t record_offset = zip64_end_record_offset(locator_offset);
  const End64 record = with_context([&] { return r_.source_name_; },
                                    [&] { return End64::decode(file_, record_offset); });
  check_zip64_end_record(record, record_offset, locator_offset);
  check_end_agrees(end, end_offset, record, record_offset);
  r_.zip64_end_record_ = true;
  r_.tail_offset_ = record_offset;
  return {record.entries_total, record.central_directory_size, record.central_directory_offset};
}

std::uint64_t ZipReader::Parser::zip64_end_record_offset(std::uint64_t locator_offset) const {
  using Locator = zip::Zip64EndLocator;
  const Locator locator = Locator::decode(file_, locator_offset);
  if (locator.zip64_end_disk != 0 || locator.total_disks > 1) {
    fail_at(ErrorCode::kUnsupported, "zip64 end of central directory locator", locator_offset,
            "multi-disk archive (" + std::to_string(locator.total_disks) +
                " disks, zip64 end record on disk " + std::to_string(locator.zip64_end_disk) + ")");
  }
  const std::uint64_t record_offset = locator.zip64_end_offset;
  if (!fits(record_offset, zip::Zip64EndOfCentralDirectory::kSize, locator_offset)) {
    fail_at(ErrorCode::kCorrupt, "zip64 end of central directory locator", locator_offset,
            "points to a zip64 end record at offset " + std::to_string(record_offset) +
                ", which has no room before the locator");
  }
  return record_offset;
}

void ZipReader::Parser::check_zip64_end_record(const zip::Zip64EndOfCentralDirectory& record,
                                               std::uint64_t record_offset,
                                               std::uint64_t locator_offset) const {
  using End64 = zip::Zip64EndOfCentralDirectory;
  const char* const name = "zip64 end of central directory record";
  if (record.record_size < End64::kMinRecordSize) {
    fail_at(ErrorCode::kCorrupt, name, record_offset,
            "record size " + std::to_string(record.record_size) + " is below the minimum " +
                std::to_string(End64::kMinRecordSize));
  }
  // The record may carry an extensible data sector, but nothing may sit between it and the
  // locator.
  if (record.record_size - End64::kMinRecordSize != locator_offset - record_offset - End64::kSize) {
    fail_at(ErrorCode::kCorrupt, name, record_offset,
            "record of " + std::to_string(record.record_size) + " bytes (after its first 12) " +
                "does not end where the zip64 locator starts (offset " +
                std::to_string(locator_offset) + ")");
  }
  if (record.disk_number != 0 || record.central_directory_disk != 0) {
    fail_at(ErrorCode::kUnsupported, name, record_offset,
            "multi-disk archive (this is disk " + std::to_string(record.disk_number) +
                ", the central directory starts on disk " +
                std::to_string(record.central_directory_disk) + ")");
  }
}

// Where the end record holds a real value (not the sentinel), it must agree with zip64.
void ZipReader::Parser::check_end_agrees(const zip::EndOfCentralDirectory& end,
                                         std::uint64_t end_offset,
                                         const zip::Zip64EndOfCentralDirectory& record,
                                         std::uint64_t record_offset) const {
  const auto agree = [&](const char* field, std::uint64_t small, std::uint64_t sentinel,
                         std::uint64_t wide) {
    if (small != sentinel && small != wide) {
      fail_at(ErrorCode::kCorrupt, "end of central directory record", end_offset,
              std::string(field) + " is " + std::to_string(small) +
                  " but the zip64 end record at offset " + std::to_string(record_offset) +
                  " says " + std::to_string(wide));
    }
  };
  agree("the disk number", end.disk_number, zip::kSentinel16, record.disk_number);
  agree("the central directory disk", end.central_directory_disk, zip::kSentinel16,
        record.central_directory_disk);
  agree("the entry count on this disk", end.entries_on_disk, zip::kSentinel16,
        record.entries_on_disk);
  agree("the entry count", end.entries_total, zip::kSentinel16, record.entries_total);
  agree("the central directory size", end.central_directory_size, zip::kSentinel32,
        record.central_directory_size);
  agree("the central directory offset", end.central_directory_offset, zip::kSentinel32,
        record.central_directory_offset);
  if (record.entries_on_disk != record.entries_total) {
    fail_at(ErrorCode::kCorrupt, "zip64 end of central directory record", record_offset,
            "counts " + std::to_string(record.entries_on_disk) + " entries on this disk but " +
                std::to_string(record.entries_total) + " in total, on a single-disk archive");
  }
}

void ZipReader::Parser::read_central_directory() {
  const Directory& d = directory_;
  const std::uint64_t directory_end = check_directory_extent();
  r_.central_directory_offset_ = d.offset;
  r_.central_directory_size_ = d.size;
  const auto count = static_cast<std::size_t>(d.entries);
  r_.entries_.reserve(count);
  r_.by_name_.reserve(count);
  unknown_extras_.resize(count);

  std::uint64_t position = d.offset;
  for (std::size_t i = 0; i < count; ++i) {
    if (position == directory_end) {
      fail_at(ErrorCode::kCorrupt, end_record_name(), r_.tail_offset_,
              "counts " + std::to_string(count) + " entries but the central directory ends after " +
                  std::to_string(i) + " records (offset " + std::to_string(position) + ")");
    }
    read_central_record(position, directory_end, i);
  }
  if (position != directory_end) {
    fail_at(ErrorCode::kCorrupt, end_record_name(), r_.tail_offset_,
            "counts " + std::to_string(count) + " entries but " +
                std::to_string(directory_end - position) +
                " bytes of the central directory follow the last of them (offset " +
                std::to_string(position) + ")");
  }
  note_case_only_duplicates();
}

std::uint64_t ZipReader::Parser::check_directory_extent() const {
  const Directory& d = directory_;
  const char* const record = end_record_name();
  const std::uint64_t record_offset = r_.tail_offset_;
  std::uint64_t directory_end = 0;
  if (__builtin_add_overflow(d.offset, d.size, &directory_end) ||
      directory_end != r_.tail_offset_) {
    fail_at(ErrorCode::kCorrupt, record, record_offset,
            "the central directory at offset " + std::to_string(d.offset) + " of " +
                std::to_string(d.size) +
                " bytes does not end where the end records start (offset " +
                std::to_string(r_.tail_offset_) + ")");
  }
  // Never reserve from an unchecked count: each record is at least 46 bytes.
  const std::uint64_t most = d.size / zip::CentralDirectoryHeader::kSize;
  if (d.entries > most) {
    fail_at(ErrorCode::kCorrupt, record, record_offset,
            "counts " + std::to_string(d.entries) + " entries but a central directory of " +
                std::to_string(d.size) + " bytes holds at most " + std::to_string(most));
  }
  if (d.entries > r_.options_.max_entries) {
    fail_at(ErrorCode::kLimitExceeded, record, record_offset,
            std::to_string(d.entries) + " entries exceed the limit of " +
                std::to_string(r_.options_.max_entries) + " (ZipReaderOptions::max_entries)");
  }
  return directory_end;
}

// Case-only duplicates (a problem on case-insensitive file systems, not for ZIP).
void ZipReader::Parser::note_case_only_duplicates() {
  const std::vector<ZipEntry>& entries = r_.entries_;
  std::unordered_map<std::string_view, std::size_t, AsciiCaseHash, AsciiCaseEqual> lowered;
  lowered.reserve(entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const ZipEntry& e = entries[i];
    const auto [it, inserted] = lowered.emplace(e.name, i);
    if (!inserted) {
      const ZipEntry& other = entries[it->second];
      add_finding(ZipFindingKind::kCaseOnlyDuplicate, e.name, e.local_header_offset,
                  "name " + quote(e.name) + " differs only in case from " + quote(other.name) +
                      " (local header at offset " + std::to_string(other.local_header_offset) +
                      ")");
    }
  }
}

void ZipReader::Parser::read_central_record(std::uint64_t& position, std::uint64_t directory_end,
                                            std::size_t central_index) {
  const CentralRecord record = central_record_at(position, directory_end);
  position = record.end;
  const std::string_view name = as_chars(record.name);
  // Messages are built only when needed: open must stay cheap for millions of entries.
  const auto place = [&] { return central_place(name, record.offset); };
  check_name(name, record.offset);
  check_method(record.header, place);
  const std::optional<zip::ExtraRecord> zip64 =
      read_extra_field(record.extra, record.extra_offset, central_index, place, "");
  ZipEntry e = central_entry(record, central_index);
  apply_central_zip64(e, record.header, zip64, place);
  check_sizes(e, place);
  const auto [it, inserted] = r_.by_name_.emplace(name, central_index);
  if (!inserted) {
    fail(ErrorCode::kCorrupt, place(),
         "duplicate name: the central directory record at offset " +
             std::to_string(r_.entries_[it->second].central_header_offset) + " has the same name");
  }
  note_central_findings(e, record.header.flags);
  r_.entries_.push_back(std::move(e));
}

ZipReader::Parser::CentralRecord ZipReader::Parser::central_record_at(
    std::uint64_t offset, std::uint64_t directory_end) const {
  using Central = zip::CentralDirectoryHeader;
  const ByteSpan directory = file_.first(static_cast<std::size_t>(directory_end));
  const Central h = with_context([&] { return r_.source_name_; },
                                 [&] { return Central::decode(directory, offset); });
  const std::uint64_t variable = std::uint64_t{h.name_length} + h.extra_length + h.comment_length;
  if (!fits(offset + Central::kSize, variable, directory_end)) {
    fail_at(ErrorCode::kCorrupt, "central directory record", offset,
            "its name, extra field and comment (" + std::to_string(h.name_length) + " + " +
                std::to_string(h.extra_length) + " + " + std::to_string(h.comment_length) +
                " bytes) run past the end of the central directory at offset " +
                std::to_string(directory_end));
  }
  const std::uint64_t name_offset = offset + Central::kSize;
  const std::uint64_t extra_offset = name_offset + h.name_length;
  return {h,
          offset,
          file_.subspan(name_offset, h.name_length),
          file_.subspan(extra_offset, h.extra_length),
          extra_offset,
          file_.subspan(extra_offset + h.extra_length, h.comment_length),
          name_offset + variable};
}

template <typename Place>
void ZipReader::Parser::check_method(const zip::CentralDirectoryHeader& h,
                                     const Place& place) const {
  if ((h.flags & kEncryptionFlags) != 0 || h.method == zip::kMethodAesEncrypted) {
    fail(
        ErrorCode::kUnsupported, place(),
        "encrypted entry (flags " + hex(h.flags, 4) + ", method " + std::to_string(h.method) + ")");
  }
  if (h.method != zip::kMethodStored && h.method != zip::kMethodDeflated) {
    fail(ErrorCode::kUnsupported, place(),
         "compression method " + std::to_string(h.method) +
             " (only stored (0) and deflate (8) are supported)");
  }
}

template <typename Place>
std::optional<zip::ExtraRecord> ZipReader::Parser::read_extra_field(ByteSpan extra,
                                                                    std::uint64_t offset,
                                                                    std::size_t central_index,
                                                                    const Place& place,
                                                                    std::string_view header) {
  const std::vector<zip::ExtraRecord> records =
      with_context(place, [&] { return zip::split_extra_field(extra, offset, "extra field"); });
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

// The entry as the central directory record says, before zip64 values replace sentinels.
ZipEntry ZipReader::Parser::central_entry(const CentralRecord& record,
                                          std::size_t central_index) const {
  const zip::CentralDirectoryHeader& h = record.header;
  ZipEntry e;
  e.name = std::string(as_chars(record.name));
  e.central_index = central_index;
  e.central_header_offset = record.offset;
  e.compressed_size = h.compressed_size;
  e.size = h.uncompressed_size;
  e.local_header_offset = h.local_header_offset;
  e.crc32 = h.crc32;
  e.method = h.method;
  e.flags = h.flags;
  e.version_made_by = h.version_made_by;
  e.version_needed = h.version_needed;
  e.modified_time = h.modified_time;
  e.modified_date = h.modified_date;
  e.internal_attributes = h.internal_attributes;
  e.external_attributes = h.external_attributes;
  e.has_data_descriptor = (h.flags & zip::kFlagDataDescriptor) != 0;
  e.central_extra = record.extra;
  e.comment = record.comment;
  return e;
}

// The zip64 record holds exactly the values whose 32-bit (16-bit for the disk) field is the
// sentinel (APPNOTE 4.5.3).
template <typename Place>
void ZipReader::Parser::apply_central_zip64(ZipEntry& e, const zip::CentralDirectoryHeader& h,
                                            const std::optional<zip::ExtraRecord>& zip64,
                                            const Place& place) const {
  std::uint64_t disk = h.disk_number_start;
  const bool need_size = h.uncompressed_size == zip::kSentinel32;
  const bool need_compressed = h.compressed_size == zip::kSentinel32;
  const bool need_offset = h.local_header_offset == zip::kSentinel32;
  const bool need_disk = h.disk_number_start == zip::kSentinel16;
  if (zip64) {
    e.zip64 = true;
    const zip::Zip64Extra z = with_context(place, [&] {
      return zip::Zip64Extra::decode(zip64->data, need_size, need_compressed, need_offset,
                                     need_disk, "extra field");
    });
    if (z.uncompressed_size) e.size = *z.uncompressed_size;
    if (z.compressed_size) e.compressed_size = *z.compressed_size;
    if (z.local_header_offset) e.local_header_offset = *z.local_header_offset;
    if (z.disk_number_start) disk = *z.disk_number_start;
  } else if (need_size || need_compressed || need_offset) {
    fail(ErrorCode::kCorrupt, place(),
         "a size or offset holds the zip64 sentinel 0xffffffff but there is no zip64 extra field");
  }
  if (disk != 0) {
    fail(ErrorCode::kUnsupported, place(),
         "multi-disk archive (the entry starts on disk " + std::to_string(disk) + ")");
  }
}

template <typename Place>
void ZipReader::Parser::check_sizes(const ZipEntry& e, const Place& place) const {
  if (e.is_stored() && e.compressed_size != e.size) {
    fail(ErrorCode::kCorrupt, place(),
         "stored entry with compressed size " + std::to_string(e.compressed_size) +
             " but uncompressed size " + std::to_string(e.size));
  }
  if (e.is_deflated() && e.size / kMaxDeflateRatio > e.compressed_size) {
    fail(ErrorCode::kCorrupt, place(),
         "deflated entry claims " + std::to_string(e.size) + " bytes from " +
             std::to_string(e.compressed_size) +
             " compressed bytes, beyond deflate's 1032:1 limit");
  }
}

void ZipReader::Parser::note_central_findings(const ZipEntry& e, std::uint16_t flags) {
  const std::uint64_t offset = e.central_header_offset;
  if ((flags & zip::kFlagUtf8) == 0 && !is_ascii(e.name)) {
    add_finding(ZipFindingKind::kNameEncoding, e.name, offset,
                "non-ASCII name without the UTF-8 flag (bit 11)");
  } else if ((flags & zip::kFlagUtf8) != 0 && !is_valid_utf8(e.name)) {
    add_finding(ZipFindingKind::kNameEncoding, e.name, offset,
                "name is not valid UTF-8 despite the UTF-8 flag (bit 11)");
  }
  if (e.is_directory()) {
    add_finding(ZipFindingKind::kDirectory, e.name, offset, "directory entry");
  }
  if (!e.comment.empty()) {
    add_finding(ZipFindingKind::kEntryComment, e.name, offset,
                "entry comment of " + std::to_string(e.comment.size()) + " bytes");
  }
}

// Names that could escape the extraction folder, or that no file system can hold, are refused.
void ZipReader::Parser::check_name(std::string_view name, std::uint64_t offset) const {
  const auto place = [&] { return central_place(name, offset); };
  if (name.empty()) fail(ErrorCode::kCorrupt, place(), "empty entry name");
  if (name.find('\0') != std::string_view::npos) {
    fail(ErrorCode::kCorrupt, place(), "entry name contains a NUL byte");
  }
  if (name.find('\\') != std::string_view::npos) {
    fail(ErrorCode::kCorrupt, place(), "entry name contains a backslash");
  }
  if (name.front() == '/') fail(ErrorCode::kCorrupt, place(), "absolute entry name");
  const char first = name.front();
  if (name.size() >= 2 && name[1] == ':' && is_ascii_letter(first)) {
    fail(ErrorCode::kCorrupt, place(), "entry name starts with a drive letter");
  }
  std::size_t start = 0;
  while (start <= name.size()) {
    const std::size_t slash = std::min(name.find('/', start), name.size());
    if (name.substr(start, slash - start) == "..") {
      fail(ErrorCode::kCorrupt, place(), "entry name has a '..' path component");
    }
    start = slash + 1;
  }
}

void ZipReader::Parser::note_unknown_extras(const std::vector<zip::ExtraRecord>& records,
                                            std::vector<std::uint16_t>& unknown) const {
  for (const zip::ExtraRecord& record : records) {
    if (record.id == zip::kExtraZip64 || record.id == zip::kExtraAlignment) continue;
    if (std::find(unknown.begin(), unknown.end(), record.id) == unknown.end()) {
      unknown.push_back(record.id);
    }
  }
}

void ZipReader::Parser::order_entries() {
  std::vector<ZipEntry>& entries = r_.entries_;
  const auto file_order = [](const ZipEntry& a, const ZipEntry& b) {
    return a.local_header_offset != b.local_header_offset
               ? a.local_header_offset < b.local_header_offset
               : a.central_index < b.central_index;
  };
  // Writers usually list the central directory in file order already.
  if (!std::is_sorted(entries.begin(), entries.end(), file_order)) {
    std::sort(entries.begin(), entries.end(), file_order);
  }
  std::vector<std::size_t> file_index(entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    entries[i].index = i;
    file_index[entries[i].central_index] = i;
  }
  for (auto& [name, index] : r_.by_name_) index = file_index[index];
}

void ZipReader::Parser::read_local_headers() {
  std::vector<ZipEntry>& entries = r_.entries_;
  const std::uint64_t directory = r_.central_directory_offset_;
  if (entries.empty()) {
    if (directory > 0) {
      add_finding(ZipFindingKind::kGap, "", 0,
                  std::to_string(directory) +
                      " bytes before the central directory belong to no "
                      "entry");
    }
    return;
  }
  const ZipEntry& last = entries.back();
  if (last.local_header_offset >= directory) {
    fail(ErrorCode::kCorrupt, central_place(last.name, last.central_header_offset),
         "local header offset " + std::to_string(last.local_header_offset) +
             " is not before the central directory at offset " + std::to_string(directory));
  }
  if (entries.front().local_header_offset > 0) {
    add_finding(ZipFindingKind::kGap, "", 0,
                std::to_string(entries.front().local_header_offset) +
                    " bytes before the first local header belong to no entry");
  }
  // The entries before `first` keep what their central records say (LocalHeaderScope::kTail).
  const std::size_t first =
      r_.options_.local_headers == LocalHeaderScope::kTail && entries.size() > 2
          ? entries.size() - 2
          : 0;
  if (first == 0) prefetch_local_headers();
  for (std::size_t i = 0; i < entries.size(); ++i) {
    ZipEntry& e = entries[i];
    const ZipEntry* const next = i + 1 < entries.size() ? &entries[i + 1] : nullptr;
    if (next != nullptr && next->local_header_offset == e.local_header_offset) {
      fail(ErrorCode::kCorrupt, local_place(e),
           "shares its local header with entry " + quote(next->name) + " (overlapping entries)");
    }
    if (i >= first) read_local_header(e, next);
  }
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto& unknown = unknown_extras_[entries[i].central_index];
    if (unknown.empty()) continue;
    std::string ids;
    for (const std::uint16_t id : unknown) ids += (ids.empty() ? "" : ", ") + hex(id, 4);
    add_finding(ZipFindingKind::kUnknownExtraField, entries[i].name, entries[i].local_header_offset,
                "extra fields this reader ignores: " + ids);
  }
}

void ZipReader::Parser::read_local_header(ZipEntry& e, const ZipEntry* next) {
  using Local = zip::LocalFileHeader;
  const auto place = [&] { return local_place(e); };
  const LocalRecord record = local_record_of(e, next);
  const Local& h = record.header;
  check_local_agrees(e, h, as_chars(record.bytes.subspan(Local::kSize, h.name_length)));
  const std::uint64_t extra_offset = e.local_header_offset + Local::kSize + h.name_length;
  e.local_extra = record.bytes.subspan(Local::kSize + h.name_length, h.extra_length);
  const std::optional<zip::ExtraRecord> zip64 =
      read_extra_field(e.local_extra, extra_offset, e.central_index, place, " in the local header");
  if (zip64) e.zip64 = true;
  compare_local_sizes(e, h, local_sizes(h, zip64, place));
  if (h.modified_time != e.modified_time || h.modified_date != e.modified_date) {
    add_finding(ZipFindingKind::kHeaderMismatch, e.name, e.local_header_offset,
                "local and central modification time/date differ (" + hex(h.modified_date, 4) +
                    "/" + hex(h.modified_time, 4) + " vs " + hex(e.modified_date, 4) + "/" +
                    hex(e.modified_time, 4) + ")");
  }
  e.data_offset = e.local_header_offset + record.bytes.size();
  locate_entry_data(e, next);
  e.local_header_read = true;
}

ZipReader::Parser::LocalRecord ZipReader::Parser::local_record_of(const ZipEntry& e,
                                                                  const ZipEntry* next) {
  using Local = zip::LocalFileHeader;
  const std::uint64_t limit = limit_of(next);
  const auto place = [&] { return local_place(e); };
  const std::uint64_t offset = e.local_header_offset;
  if (!fits(offset, Local::kSize, limit)) {
    fail(ErrorCode::kCorrupt, place(), "the 30-byte local header runs into " + limit_text(next));
  }
  // The fixed part, the name and (usually) the whole extra field in one read.
  ByteSpan header = e.index < prefetched_.size() && !prefetched_[e.index].empty()
                        ? prefetched_[e.index]
                        : local_bytes(offset, first_read_size(e, next));
  if (load_le32(header.data()) != Local::kSignature) {
    fail(ErrorCode::kCorrupt, place(),
         "local file header at offset " + std::to_string(offset) + ": bad signature " +
             hex(load_le32(header.data()), 8));
  }
  const Local h = Local::decode(header, 0);
  const std::uint64_t header_size = Local::kSize + h.name_length + h.extra_length;
  if (offset + header_size > limit) {
    fail(ErrorCode::kCorrupt, place(),
         "the local name and extra field (" + std::to_string(h.name_length) + " + " +
             std::to_string(h.extra_length) + " bytes) run into " + limit_text(next));
  }
  if (header.size() < header_size) header = local_bytes(offset, header_size);
  return {h, header.first(static_cast<std::size_t>(header_size))};
}

// Name, method and the flags that change how the entry is read must match the central record.
void ZipReader::Parser::check_local_agrees(const ZipEntry& e, const zip::LocalFileHeader& h,
                                           std::string_view local_name) const {
  if (local_name != e.name) {
    fail(ErrorCode::kCorrupt, local_place(e),
         "the local header names the entry " + quote(local_name) + ", the central directory " +
             quote(e.name));
  }
  if (h.method != e.method) {
    fail(ErrorCode::kCorrupt, local_place(e),
         "the local header says compression method " + std::to_string(h.method) +
             ", the central directory " + std::to_string(e.method));
  }
  if ((h.flags & kStructuralFlags) != (e.flags & kStructuralFlags)) {
    fail(ErrorCode::kCorrupt, local_place(e),
         "the local header flags " + hex(h.flags, 4) + " and the central directory flags " +
             hex(e.flags, 4) + " disagree on bits 0, 3, 6 or 13");
  }
}

template <typename Place>
ZipReader::Parser::LocalSizes ZipReader::Parser::local_sizes(
    const zip::LocalFileHeader& h, const std::optional<zip::ExtraRecord>& zip64,
    const Place& place) const {
  LocalSizes sizes{h.compressed_size, h.uncompressed_size};
  std::uint64_t& compressed = sizes.compressed;
  std::uint64_t& size = sizes.uncompressed;
  if (compressed != zip::kSentinel32 && size != zip::kSentinel32) return sizes;
  if (!zip64) {
    fail(ErrorCode::kCorrupt, place(),
         "a local size holds the zip64 sentinel 0xffffffff but there is no zip64 extra field");
  }
  // APPNOTE 4.5.3 wants both sizes in the local zip64 field; some writers store only the
  // one whose 32-bit field overflowed, which is unambiguous when just one is the sentinel.
  const ByteSpan data = zip64->data;
  if (data.size() >= 16) {
    if (size == zip::kSentinel32) size = load_le64(data.data());
    if (compressed == zip::kSentinel32) compressed = load_le64(data.data() + 8);
  } else if (data.size() >= 8 && (size != zip::kSentinel32 || compressed != zip::kSentinel32)) {
    (size == zip::kSentinel32 ? size : compressed) = load_le64(data.data());
  } else {
    fail(ErrorCode::kCorrupt, place(),
         "the local zip64 extra field of " + std::to_string(data.size()) +
             " bytes is too short for the sizes");
  }
  return sizes;
}

void ZipReader::Parser::compare_local_sizes(const ZipEntry& e, const zip::LocalFileHeader& h,
                                            const LocalSizes& sizes) const {
  const auto compare = [&](const char* field, std::uint64_t local, std::uint64_t central,
                           bool as_hex) {
    if (local == central) return;
    // With a data descriptor, the local header may hold zeros instead (APPNOTE 4.4.4 bit 3).
    if (e.has_data_descriptor && local == 0) return;
    const auto show = [&](std::uint64_t v) {
      return as_hex ? hex(static_cast<std::uint32_t>(v), 8) : std::to_string(v);
    };
    fail(ErrorCode::kCorrupt, local_place(e),
         std::string("the local header says ") + field + " " + show(local) +
             ", the central directory " + show(central));
  };
  compare("CRC-32", h.crc32, e.crc32, true);
  compare("compressed size", sizes.compressed, e.compressed_size, false);
  compare("uncompressed size", sizes.uncompressed, e.size, false);
}

// Sets e.end_offset (after the data and its descriptor, if any) and notes what a reader of the
// entry's data should know.
void ZipReader::Parser::locate_entry_data(ZipEntry& e, const ZipEntry* next) {
  const std::uint64_t limit = limit_of(next);
  std::uint64_t data_end = 0;
  if (__builtin_add_overflow(e.data_offset, e.compressed_size, &data_end) || data_end > limit) {
    fail(ErrorCode::kCorrupt, local_place(e),
         "the data at offset " + std::to_string(e.data_offset) + " of " +
             std::to_string(e.compressed_size) + " bytes overlaps " + limit_text(next));
  }
  e.end_offset = e.has_data_descriptor ? read_data_descriptor(e, data_end, limit, next) : data_end;
  if (e.end_offset < limit) {
    add_finding(ZipFindingKind::kGap, e.name, e.end_offset,
                std::to_string(limit - e.end_offset) +
                    " bytes after the entry belong to no "
                    "entry");
  }
  if (e.is_deflated()) {
    add_finding(ZipFindingKind::kDeflated, e.name, e.local_header_offset,
                "deflated; not zero-copy");
  } else if (!e.is_directory() && e.alignment() < kWantedAlignment) {
    add_finding(ZipFindingKind::kUnaligned, e.name, e.data_offset,
                "data at offset " + std::to_string(e.data_offset) + " is aligned to only " +
                    std::to_string(e.alignment()) + " bytes");
  }
  if (e.has_data_descriptor) {
    add_finding(ZipFindingKind::kDataDescriptor, e.name, data_end,
                "data descriptor at offset " + std::to_string(data_end));
  }
}

// Bytes [offset, offset + size) of the archive (within it: the caller checked the limit). When
// the archive was opened from a path they are read with pread() into a copy the reader keeps,
// not through the mapping: touching one page per entry of a mapping costs a page fault that also
// maps the pages around it and a page table per 2 MiB of archive, all torn down again when the
// mapping goes. That made opening an archive of the same entries cost more the more bytes lay
// between them (1,000 entries: about 6 ms for 1 GiB, 8 ms for 4 GiB, against under 1 ms of
// pread). A failed or short read falls back to the mapping, which then reports what it finds.
ByteSpan ZipReader::Parser::local_bytes(std::uint64_t offset, std::uint64_t size) {
  const ByteSpan mapped =
      file_.subspan(static_cast<std::size_t>(offset), static_cast<std::size_t>(size));
  if (local_fd_ < 0 || local_copied_ + size > kMaxLocalHeaderCopies) return mapped;
  // Copies are packed into chunks that never grow past their reserved capacity, so a span into
  // one stays valid, and a thousand headers cost a few allocations rather than a thousand.
  std::vector<std::vector<std::uint8_t>>& chunks = header_copies();
  const std::size_t wanted = static_cast<std::size_t>(size);
  if (chunks.empty() || chunks.back().capacity() - chunks.back().size() < wanted) {
    chunks.emplace_back().reserve(std::max(wanted, kLocalHeaderChunk));
  }
  std::vector<std::uint8_t>& chunk = chunks.back();
  const std::size_t start = chunk.size();
  chunk.resize(start + wanted);
  const ssize_t n = ::pread(local_fd_, chunk.data() + start, wanted, static_cast<off_t>(offset));
  if (n < 0 || static_cast<std::uint64_t>(n) != size) {
    chunk.resize(start);
    return mapped;
  }
  local_copied_ += size;
  return ByteSpan(chunk.data() + start, wanted);
}

// Each local header costs a pread() of its own, about 1 us of system call, which made the reads
// the largest part of opening an archive of many tensors. So a second thread reads half of them:
// the entries' first reads (the sizes local_record_of asks for) go into one buffer before any is
// checked. A read that fails or comes up short is left to local_bytes, which then reports what
// it finds.
void ZipReader::Parser::prefetch_local_headers() {
  const std::vector<ZipEntry>& entries = r_.entries_;
  if (local_fd_ < 0 || entries.size() < kPrefetchMinEntries) return;
  struct Read {
    std::uint64_t offset = 0;
    std::size_t size = 0;  // 0: not fetched ahead.
    std::size_t at = 0;    // Where in the buffer.
  };
  std::vector<Read> reads(entries.size());
  std::size_t total = 0;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const ZipEntry& e = entries[i];
    const ZipEntry* const next = i + 1 < entries.size() ? &entries[i + 1] : nullptr;
    if (!fits(e.local_header_offset, zip::LocalFileHeader::kSize, limit_of(next))) continue;
    const std::uint64_t size = first_read_size(e, next);
    if (local_copied_ + total + size > kMaxLocalHeaderCopies) break;
    reads[i] = {e.local_header_offset, static_cast<std::size_t>(size), total};
    total += static_cast<std::size_t>(size);
  }
  std::vector<std::uint8_t>& buffer = header_copies().emplace_back(total);
  std::vector<std::uint8_t> complete(reads.size(), 0);  // Bytes, not bits: two threads write.
  const auto fetch = [&](std::size_t begin, std::size_t end) noexcept {
    for (std::size_t k = begin; k < end; ++k) {
      const Read& read = reads[k];
      if (read.size == 0) continue;
      const ssize_t n =
          ::pread(local_fd_, buffer.data() + read.at, read.size, static_cast<off_t>(read.offset));
      complete[k] = n >= 0 && static_cast<std::size_t>(n) == read.size;
    }
  };
  const std::size_t half = reads.size() / 2;
  try {
    const std::jthread helper(fetch, half, reads.size());
    fetch(0, half);
  } catch (const std::system_error&) {  // No second thread to be had: all on this one.
    fetch(0, reads.size());
  }
  prefetched_.assign(reads.size(), ByteSpan());
  for (std::size_t k = 0; k < reads.size(); ++k) {
    if (complete[k] != 0) prefetched_[k] = ByteSpan(buffer.data() + reads[k].at, reads[k].size);
  }
  local_copied_ += total;
}

// APPNOTE 4.3.9: the descriptor's signature is optional and its sizes are 8 bytes wide for
// zip64 entries; writers disagree on both, so every layout is tried and the one that matches
// the central record wins. None matching is a contradiction.
std::uint64_t ZipReader::Parser::read_data_descriptor(const ZipEntry& e, std::uint64_t at,
                                                      std::uint64_t limit,
                                                      const ZipEntry* next) const {
  struct Layout {
    bool signature;
    bool wide;
  };
  constexpr Layout kNarrowFirst[] = {{true, false}, {true, true}, {false, false}, {false, true}};
  constexpr Layout kWideFirst[] = {{true, true}, {true, false}, {false, true}, {false, false}};
  std::string seen;
  const Layout* const layouts = e.zip64 ? kWideFirst : kNarrowFirst;
  for (std::size_t k = 0; k < std::size(kNarrowFirst); ++k) {
    const Layout layout = layouts[k];
    const std::uint64_t size = (layout.signature ? 4 : 0) + 4 + (layout.wide ? 16 : 8);
    if (!fits(at, size, limit)) continue;
    const std::uint8_t* p = file_.data() + at;
    if (layout.signature) {
      if (load_le32(p) != zip::DataDescriptor::kSignature) continue;
      p += 4;
    }
    const std::uint32_t crc = load_le32(p);
    const std::uint64_t compressed = layout.wide ? load_le64(p + 4) : load_le32(p + 4);
    const std::uint64_t uncompressed = layout.wide ? load_le64(p + 12) : load_le32(p + 8);
    if (crc == e.crc32 && compressed == e.compressed_size && uncompressed == e.size) {
      return at + size;
    }
    if (seen.empty()) {
      seen = " (read CRC-32 " + hex(crc, 8) + ", sizes " + std::to_string(compressed) + "/" +
             std::to_string(uncompressed) + ")";
    }
  }
  fail(ErrorCode::kCorrupt, local_place(e),
       "no data descriptor at offset " + std::to_string(at) + " before " + limit_text(next) +
           " matches the central directory (CRC-32 " + hex(e.crc32, 8) + ", sizes " +
           std::to_string(e.compressed_size) + "/" + std::to_string(e.size) + ")" + seen);
}

ZipReader::ZipReader(ByteSpan bytes, ZipReaderOptions options, OwnerToken owner,
                     std::string source_name)
    : bytes_(bytes),
      options_(options),
      owner_(std::move(owner)),
      source_name_(std::move(source_name)) {}

ZipReader ZipReader::open(const std::filesystem::path& path, ZipReaderOptions options,
                          FileAccess access) {
  return open(MappedFile::open(path, access), options);
}

ZipReader ZipReader::open(std::shared_ptr<const MappedFile> file, ZipReaderOptions options) {
  if (file == nullptr) throw Error(ErrorCode::kInvalidArgument, "ZipReader::open: no file");
  const ByteSpan bytes = file->bytes();
  // Local headers are read with pread from the very file that is mapped (Parser::local_bytes);
  // read into memory (kRead), they are already there.
  const int local_fd = file->access() == FileAccess::kMap ? file->descriptor() : -1;
  std::string source_name = file->path().string();
  ZipReader reader(bytes, options, std::move(file), std::move(source_name));
  reader.parse(local_fd);
  return reader;
}

ZipReader ZipReader::from_bytes(ByteSpan bytes, OwnerToken owner, ZipReaderOptions options,
                                std::string source_name) {
  ZipReader reader(bytes, options, std::move(owner), std::move(source_name));
  reader.parse(-1);
  return reader;
}

void ZipReader::parse(int local_fd) {
  try {
    Parser(*this, local_fd).run();
  } catch (const std::bad_alloc&) {
    throw Error(ErrorCode::kLimitExceeded,
                source_name_ + ": out of memory while indexing the archive");
  }
}

const ZipEntry* ZipReader::find(std::string_view name) const noexcept {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &entries_[it->second];
}

const ZipEntry& ZipReader::at(std::string_view name) const {
  const ZipEntry* e = find(name);
  if (e == nullptr) {
    throw Error(ErrorCode::kNotFound, source_name_ + ": no entry named " + quote(name));
  }
  return *e;
}

// Callers may pass copies of entries; the reader trusts only its own, validated one.
const ZipEntry& ZipReader::own_entry(const ZipEntry& entry, const char* operation) const {
  if (entry.index >= entries_.size() ||
      entries_[entry.index].local_header_offset != entry.local_header_offset ||
      entries_[entry.index].central_header_offset != entry.central_header_offset) {
    throw Error(ErrorCode::kInvalidArgument, source_name_ + ": " + operation + ": entry " +
                                                 quote(entry.name) +
                                                 " does not belong to this archive");
  }
  const ZipEntry& own = entries_[entry.index];
  if (!own.local_header_read) {
    throw Error(ErrorCode::kBadState,
                entry_place(own) + ": " + operation +
                    ": its local header was not read (the archive was opened with "
                    "LocalHeaderScope::kTail, which reads only the last two entries')");
  }
  return own;
}

std::string ZipReader::entry_place(const ZipEntry& e) const {
  return source_name_ + ": entry " + quote(e.name) + " at offset " +
         std::to_string(e.local_header_offset);
}

ByteSpan ZipReader::stored_data(const ZipEntry& entry) const {
  const ZipEntry& e = own_entry(entry, "stored_data");
  if (!e.is_stored()) {
    throw Error(ErrorCode::kUnsupported,
                entry_place(e) + ": deflated, so there are no stored bytes to borrow (use data())");
  }
  return bytes_.subspan(static_cast<std::size_t>(e.data_offset),
                        static_cast<std::size_t>(e.compressed_size));
}

TensorBytes ZipReader::data(const ZipEntry& entry) const {
  const ZipEntry& e = own_entry(entry, "data");
  if (e.is_stored()) {
    // Offsets and sizes were checked against the file when the archive was opened.
    return TensorBytes::borrowed(bytes_.subspan(static_cast<std::size_t>(e.data_offset),
                                                static_cast<std::size_t>(e.compressed_size)),
                                 owner_);
  }
  return e.size > options_.spill_threshold ? inflate_to_spill_file(e) : inflate_whole(e);
}

TensorBytes ZipReader::verified_data(const ZipEntry& entry) const {
  const ZipEntry& e = own_entry(entry, "verify");
  // A spill file's CRC-32 is checked while it is written.
  if (e.is_deflated() && e.size > options_.spill_threshold) return inflate_to_spill_file(e);
  TensorBytes bytes = data(e);
  check_crc(e, onnxzip::crc32(bytes.view()));
  return bytes;
}

void ZipReader::stream(const ZipEntry& entry, const std::function<void(ByteSpan)>& consumer) const {
  const ZipEntry& e = own_entry(entry, "stream");
  if (e.is_deflated() && e.size > options_.spill_threshold) {
    check_crc(e, inflate_in_pieces(deflated_bytes(e), e, entry_place(e), consumer));
    return;
  }
  // Stored, or small enough to inflate whole: handed on in pieces all the same, each one's
  // CRC-32 computed while it is in the cache.
  const TensorBytes bytes = data(e);
  std::uint32_t crc = 0;
  for (ByteSpan rest = bytes.view(); !rest.empty();) {
    const ByteSpan piece = rest.first(std::min(rest.size(), kStreamPieceBytes));
    crc = onnxzip::crc32(piece, crc);
    consumer(piece);
    rest = rest.subspan(piece.size());
  }
  check_crc(e, crc);
}

void ZipReader::verify(const ZipEntry& entry) const {
  stream(entry, [](ByteSpan) {});
}

ByteSpan ZipReader::deflated_bytes(const ZipEntry& e) const {
  const std::string_view tool_hint = " with the onnxzip tool";
  if (e.size > options_.max_inflated_size || e.size > std::numeric_limits<std::size_t>::max()) {
    throw Error(ErrorCode::kLimitExceeded,
                entry_place(e) + ": inflates to " + std::to_string(e.size) +
                    " bytes, above the limit of " + std::to_string(options_.max_inflated_size) +
                    " (raise ZipReaderOptions::max_inflated_size, or --max-inflated-size" +
                    std::string(tool_hint) + ")");
  }
  const std::uint64_t ratio = options_.max_compression_ratio;
  std::uint64_t allowed = 0;  // ratio x compressed size; past 2^64 it allows any size.
  if (ratio != 0 && e.size > kCompressionRatioGraceSize &&
      !__builtin_mul_overflow(ratio, e.compressed_size, &allowed) && e.size > allowed) {
    // compressed_size > 0 here: the reader refused more than 1032:1 when it opened the archive.
    const std::uint64_t actual = e.size / std::max<std::uint64_t>(e.compressed_size, 1);
    throw Error(ErrorCode::kLimitExceeded,
                entry_place(e) + ": deflated from " + std::to_string(e.compressed_size) + " to " +
                    std::to_string(e.size) + " bytes, a compression ratio of " +
                    std::to_string(actual) + ":1, above the limit of " + std::to_string(ratio) +
                    ":1 that refuses zip bombs (for an archive you trust, raise "
                    "ZipReaderOptions::max_compression_ratio, or --max-ratio" +
                    std::string(tool_hint) + "; 0 means no limit)");
  }
  return bytes_.subspan(static_cast<std::size_t>(e.data_offset),
                        static_cast<std::size_t>(e.compressed_size));
}

TensorBytes ZipReader::inflate_whole(const ZipEntry& e) const {
  const ByteSpan raw = deflated_bytes(e);
  const std::string place = entry_place(e);
  // Not a valid deflate stream (RFC 1951 wants one block), but its content is unambiguous and
  // some writers store empty deflated entries this way.
  if (e.size == 0 && raw.empty()) return TensorBytes::owned(OwnedBytes());
  OwnedBytes out;
  std::unique_ptr<libdeflate_decompressor, LibdeflateDecompressorDelete> decompressor;
  try {
    out = OwnedBytes(static_cast<std::size_t>(e.size));
    decompressor.reset(libdeflate_alloc_decompressor());
  } catch (const std::bad_alloc&) {
  }
  if ((e.size > 0 && out.data() == nullptr) || decompressor == nullptr) {
    throw Error(ErrorCode::kLimitExceeded,
                place + ": cannot allocate " + std::to_string(e.size) + " bytes to inflate into");
  }
  std::size_t in_used = 0;
  std::size_t out_used = 0;
  const libdeflate_result result = libdeflate_deflate_decompress_ex(
      decompressor.get(), raw.data(), raw.size(), out.data(), out.size(), &in_used, &out_used);
  switch (result) {
    case LIBDEFLATE_SUCCESS:
      break;
    case LIBDEFLATE_INSUFFICIENT_SPACE:
      throw_longer_stream(place, e.size);
    default:
      throw_invalid_stream(place, raw.size(), e.data_offset);
  }
  check_stream_end(place, e, out_used, in_used);
  return TensorBytes::owned(std::move(out));
}

TensorBytes ZipReader::inflate_to_spill_file(const ZipEntry& e) const {
  const ByteSpan raw = deflated_bytes(e);
  const std::string place = entry_place(e);
  std::filesystem::path directory = options_.spill_directory;
  if (directory.empty()) {
    const char* tmpdir = std::getenv("TMPDIR");
    directory = tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp";
  }
  const std::string spill_text = "a temporary file in " + quote(directory.string()) +
                                 " (ZipReaderOptions::spill_directory, or TMPDIR)";
  detail::Fd fd(open_spill_file(directory));
  if (fd.get() < 0) {
    const std::string reason = std::strerror(errno);
    throw Error(ErrorCode::kIo, place + ": cannot inflate " + std::to_string(e.size) +
                                    " bytes into " + spill_text + ": " + reason);
  }
  const std::uint32_t crc = inflate_in_pieces(raw, e, place, [&](ByteSpan piece) {
    if (!write_all(fd.get(), piece)) {
      const std::string reason = std::strerror(errno);
      throw Error(ErrorCode::kIo, place + ": cannot write the " + std::to_string(e.size) +
                                      " inflated bytes to " + spill_text + ": " + reason);
    }
  });
  check_crc(e, crc);
  const std::shared_ptr<const MappedFile> mapping =
      MappedFile::adopt(fd.release(), place + " (inflated into " + spill_text + ")");
  return TensorBytes::borrowed(mapping->bytes(), mapping);
}

void ZipReader::check_crc(const ZipEntry& e, std::uint32_t actual) const {
  if (actual != e.crc32) {
    throw Error(ErrorCode::kCorrupt, entry_place(e) + ": CRC-32 mismatch: the data has " +
                                         hex(actual, 8) + ", the central directory says " +
                                         hex(e.crc32, 8));
  }
}

}  // namespace onnxzip
