// A strict ZIP reader over a byte source: a mapped file, bytes in memory, or a file read in ranges.
//
// Two types read one ZIP archive (PKWARE APPNOTE 6.3.x, single disk, stored and deflated entries,
// zip64) through a ByteSource (byte_source.h):
// - ZipDirectory: the end records and the central directory, read from the archive's tail in one
//   or two reads (ZipReaderOptions::tail_read_size), whatever the number of entries. No entry's
//   local layout is known at open (ZipEntry::local is nullopt): an entry is located, its local
//   header read and checked, when its data is read (data(), stream()...), in one read from its
//   local header to the end of its data (none when the tail read holds them), or by locate().
//   What a remote archive and an in-place edit take: a fault in the local header of an entry
//   they do not read is not theirs to report.
// - ZipReader, the checked reader: a ZipDirectory whose every entry is located at open. Opening
//   validates the whole structure -- end records, central directory, every local header against
//   its central record, data descriptors, and that no entry's bytes overlap another's or the
//   central directory -- without reading any payload, so its cost grows with the number of
//   entries, not their size. Payload CRCs are checked on demand (verify).
// A mapped file's tail -- end records, central directory and, up to 64 MiB, its last entry -- is
// read with pread into memory of the reader's own, never through the mapping: an in-place edit
// rewrites that tail and may shrink the file below it (spec §9.6), so a read through the
// mapping could mix two edits or raise SIGBUS. data() and stored_data() of the last entry lend
// that copy; every other entry's data stays in the mapping.
//
// What is refused (Error), and what is accepted but reported (ZipFinding), follows the format
// decisions of .onnxz version 1: structural contradictions are kCorrupt, encryption,
// multi-disk and compression methods other than stored and deflate are kUnsupported, limits are
// kLimitExceeded. Every message names the source, the entry when there is one, and the offset.
//
// Choices where ZIP readers differ, documented once here:
// - The end record is the one, among the last 22 + 65535 bytes, whose comment reaches exactly to
//   the end of the file; when several do (an archive comment may itself hold a ZIP), the one
//   farthest from the end wins, because every later candidate lies inside its comment. Bytes
//   after the comment (trailing garbage, a truncated comment) are refused as kCorrupt, unless a
//   ZipTrailerResolver the caller passes knows them: a layer above ZIP may define what follows
//   its archives (.onnxz: the record an interrupted in-place edit leaves, spec §9.6), and the
//   archive is then the source's first bytes up to where the resolver says, where an end record
//   must end exactly; size() is that archive's, less than the source's.
// - The central directory, the zip64 end record, its locator and the end record must follow each
//   other with no byte between them (this also refuses archives with bytes prepended without
//   fixing the offsets). Gaps between entries and before the central directory are allowed.
// - Ambiguity is refused: two zip64 extra fields in one header, two entries sharing a local
//   header, byte-identical names.
//
// Entries are indexed in file order (by local header offset). A stored entry's data is borrowed
// from the source (zero copy from a mapping or memory; a buffer of its own from a source that
// reads ranges); a deflated entry is inflated by data(). Both types are immutable after
// construction, so const calls may run concurrently. zip knows nothing of ONNX; the archive
// layer builds on this header.
//
// Deflated entries and memory. Nothing is inflated until asked for, and then in bounded
// anonymous memory: an entry of up to ZipReaderOptions::spill_threshold bytes is inflated whole
// (libdeflate) into owned memory; a larger one is inflated in pieces (zlib) -- by data() into an
// unlinked temporary file in spill_directory that is then mapped read-only (the mapping is the
// owner token of the bytes), by stream() and verify() without keeping them at all.
//
// Zip bombs. A deflated entry may claim up to 1032 times its compressed size, so a 1 MB archive
// can ask for a gigabyte. Two limits refuse that before anything is inflated, from the sizes
// the central directory records (the stream is never allowed to produce more than those):
// max_compression_ratio (100:1 by default, the limit of Apache POI's ZipSecureFile) for entries
// above kCompressionRatioGraceSize, and max_inflated_size (4 GiB, POI's too) for any entry. Both
// are Error(kLimitExceeded) naming the entry, its sizes and ratio, and the option as
// "ZipReaderOptions::<field>" (a tool that sets it by a flag names the flag). Real archives
// this refuses: long runs of one byte deflate past 1000:1, so a tensor of zeros (or one mostly
// zero, such as a padded embedding table) larger than 1 MiB, zipped by `zip` or Python's zipfile
// -- `zip` deflates 256 MiB of zeros to 260,516 bytes, 1030:1. An archive you trust gets past it
// with a higher max_compression_ratio (0: no limit).
#ifndef ONNXZIP_ZIP_READER_H_
#define ONNXZIP_ZIP_READER_H_

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "onnxzip/bytes.h"
#include "onnxzip/error.h"
#include "onnxzip/internal/byte_source.h"
#include "onnxzip/internal/mapped_file.h"
#include "onnxzip/read_limits.h"

namespace onnxzip {

namespace zip {
class HeldBytes;
}  // namespace zip

// The reader's options: the user's limits (read_limits.h) and how much of the tail it reads first.
struct ZipReaderOptions : ReadLimits {
  // For a source that reads ranges (ByteSource::Access::kRanges): the bytes the open reads first
  // from the end of the archive (at least the 22 + 65535 an end record is searched in). When the
  // end records, the central directory and the last entry (in an .onnxz, the model) fit, that
  // one read is all a ZipDirectory's open reads; else one more read brings the rest, the last
  // entry when it is at most 64 MiB (a larger one is read when asked for).
  std::uint64_t tail_read_size = std::uint64_t{1} << 20;
  // Names of entries held with the last one, in the same read, when they lie directly before it
  // in the file: what an edit rewrites besides it (in an .onnxz, the integrity entries before the
  // model). None by default.
  std::vector<std::string> held_with_last{};
};

// The reader's options for `limits`, every other one at its default.
inline ZipReaderOptions zip_reader_options(const ReadLimits& limits) {
  ZipReaderOptions options;
  static_cast<ReadLimits&>(options) = limits;
  return options;
}

// Where an entry's bytes lie, as its local header places them: known once that header was read
// and checked against the central record.
struct ZipLocalLayout {
  std::uint64_t data_offset = 0;  // First byte of the (compressed) data.
  std::uint64_t end_offset = 0;   // One past the data, or past the data descriptor.
  // The local header's extra fields, borrowed as ZipEntry's spans are -- or from `owner`, when
  // the header was read after the open (ZipDirectory::locate).
  ByteSpan local_extra;
  OwnerToken owner;

  // The largest power of two dividing data_offset, capped at 65536 (offset 0 counts as 65536).
  std::uint64_t alignment() const noexcept;
};

struct ZipEntry {
  std::string name;               // Exactly the name bytes of the central record.
  std::size_t index = 0;          // Position in entries() (file order).
  std::size_t central_index = 0;  // Position of its record in the central directory.
  std::uint64_t local_header_offset = 0;
  std::uint64_t central_header_offset = 0;
  std::uint64_t compressed_size = 0;  // Bytes at the data offset.
  std::uint64_t size = 0;             // Uncompressed size.
  std::uint32_t crc32 = 0;            // Of the uncompressed data, from the central record.
  std::uint16_t method = 0;           // 0 stored, 8 deflated (others are refused).
  std::uint16_t flags = 0;            // General purpose flags of the central record.
  std::uint16_t version_made_by = 0;
  std::uint16_t version_needed = 0;
  std::uint16_t modified_time = 0;  // DOS time and date, of the central record.
  std::uint16_t modified_date = 0;
  std::uint16_t internal_attributes = 0;
  std::uint32_t external_attributes = 0;
  // A zip64 extra field is in the central header, or in the local one when it is located.
  bool zip64 = false;
  bool has_data_descriptor = false;  // Flag bit 3.
  // The extra fields of the central header and the entry comment, for layers that check
  // conformance beyond ZIP. Borrowed from the bytes the reader holds of the archive: valid while
  // the reader, or a copy of it, lives (and the source's bytes, for a source in memory or mapped).
  ByteSpan central_extra;
  ByteSpan comment;
  // Where its bytes lie: set for every entry of a ZipReader (located at open); nullopt for a
  // ZipDirectory's (ZipDirectory::locate).
  std::optional<ZipLocalLayout> local;

  bool is_stored() const noexcept { return method == 0; }
  bool is_deflated() const noexcept { return method == 8; }
  // Stored entries are served as borrowed spans of the archive, without a copy.
  bool zero_copy() const noexcept { return is_stored(); }
  bool is_directory() const noexcept { return !name.empty() && name.back() == '/'; }
};

// Things a strict reader accepts from other tools but a conforming .onnxz never contains.
enum class ZipFindingKind {
  kDeflated,           // Inflated into owned memory: not zero-copy.
  kDataDescriptor,     // Flag bit 3: sizes and CRC follow the data.
  kUnaligned,          // Data offset aligned to fewer than 64 bytes.
  kDirectory,          // Name ends in '/'.
  kNameEncoding,       // Non-ASCII name without the UTF-8 flag, or invalid UTF-8 with it.
  kArchiveComment,     // Non-empty comment in the end record.
  kEntryComment,       // Non-empty comment in a central record.
  kUnknownExtraField,  // Extra field records other than zip64 (0x0001) and alignment (0xD935).
  kCaseOnlyDuplicate,  // Two names equal when ASCII-lower-cased.
  kGap,                // Bytes that belong to no entry (before, between or after entries).
  kHeaderMismatch,     // Local and central headers differ in a field that does not affect data.
};

std::string_view to_string(ZipFindingKind kind) noexcept;

struct ZipFinding {
  ZipFindingKind kind;
  std::string entry;  // Empty for archive-level findings.
  std::uint64_t offset = 0;
  std::string message;
};

// Bytes after an archive that a layer above ZIP knows (an .onnxz file's interrupted edit record,
// spec §9.6), as its ZipTrailerResolver reports them.
struct ZipTrailer {
  std::uint64_t archive_end = 0;  // The archive is the source's first archive_end bytes.
  std::uint64_t offset = 0;       // Where the trailer's record starts, for messages.
  std::string name;               // What the record is, for messages ("interrupted edit record").
  std::string finding;            // What the layer that knows it reports of it.
};

// Asked by ZipReader::open when no end record's comment reaches exactly the end of the source:
// the trailer the source ends with (its archive_end at most the source's size), or nullopt for
// none, and the open fails as it would without a resolver. It reads through `source`, and throws
// Error for a trailer that contradicts itself.
using ZipTrailerResolver = std::function<std::optional<ZipTrailer>(const ByteSource& source)>;

// The end records and the central directory of an archive (see the header comment): cheap to
// open, whatever the number of entries; entries located when they are read.
class ZipDirectory {
 public:
  // Reads the directory of the archive `source` holds; the owner token of its borrowed reads (the
  // mapping, the caller's token) is that of stored entries' data. `trailer`, when given, is asked
  // what follows an archive whose end record does not end the source (ZipTrailerResolver).
  // Error(kInvalidArgument) when `source` is null.
  static ZipDirectory open(std::shared_ptr<const ByteSource> source, ZipReaderOptions options = {},
                           const ZipTrailerResolver& trailer = {});

  // Every entry, in file order (ascending local header offset).
  const std::vector<ZipEntry>& entries() const noexcept { return entries_; }
  // The entry with exactly this name, or nullptr. O(1).
  const ZipEntry* find(std::string_view name) const noexcept;
  // The entry with exactly this name, or Error(kNotFound) naming it and the source.
  const ZipEntry& at(std::string_view name) const;

  // The entry located: as it is when its local layout is known, else with its local header read
  // now (one read, none when the tail read holds it) and checked as data() checks it, with
  // data()'s Errors.
  ZipEntry locate(const ZipEntry& entry) const;
  // locate() when it needs no read of the source: for an entry located already, or whose local
  // header the tail read holds; else nullopt. For what shows offsets without reading more (a
  // remote archive's table of entries).
  std::optional<ZipEntry> locate_held(const ZipEntry& entry) const;
  // For a caller that gets an entry's bytes itself, in a stream of the whole archive (a remote
  // extract): the entry as its local header places it -- the header checked against the central
  // record with data()'s checks and Errors -- from `header`, the bytes that start at its
  // local_header_offset; nullopt while they are too few to hold the whole local header. Its
  // local_extra borrows from `header`. Only for a stored entry without a data descriptor, whose
  // data then ends where its header says (Error(kUnsupported) otherwise): the stream needs
  // nothing after it.
  std::optional<ZipEntry> locate(const ZipEntry& entry, ByteSpan header) const;

  // A stored entry's bytes, borrowed from the archive in memory or mapped (a mapped file's last
  // entry: from the copy the open read, see the header comment). Error(kUnsupported)
  // for a deflated one, and for a source that reads ranges (which has no bytes to lend: data()).
  ByteSpan stored_data(const ZipEntry& entry) const;
  // The entry's uncompressed bytes: for a stored entry borrowed with the owner token (no copy,
  // no read; from a source that reads ranges, one read into a buffer of its own, its first byte
  // 64-byte aligned when the entry's data is in the file); for a deflated one inflated into owned
  // memory, or above spill_threshold into a spill file borrowed with its mapping as owner token
  // (the CRC-32 is then checked on the way). An entry not located is located first, in the same
  // read. Errors: kCorrupt when its local header contradicts the central record, when the stream
  // is bad or its length differs from the recorded sizes; kLimitExceeded above
  // max_inflated_size or max_compression_ratio; kIo when the spill file cannot be created or
  // written. Does not check the CRC-32 otherwise.
  TensorBytes data(const ZipEntry& entry) const;
  // data() of each entry, in their order: from a source that reads ranges, the stored entries
  // whose bytes are adjacent in the file in one read, the reads made together
  // (ByteSource::read_ranges: an HTTP source makes them at once). Errors as data()'s.
  std::vector<TensorBytes> data(std::span<const ZipEntry* const> entries) const;
  // data() and its CRC-32 check in one pass (one inflation for a deflated entry).
  TensorBytes verified_data(const ZipEntry& entry) const;
  // Passes the entry's uncompressed bytes to `consumer` in order, in pieces of at most
  // kStreamPieceBytes, then checks the CRC-32: memory stays bounded whatever the entry's size,
  // and each byte is read once. When the entry is corrupt, the consumer may have seen some or
  // all of its bytes before the Error (kCorrupt, or data()'s errors): use it for outputs that
  // are discarded on error. An exception from the consumer propagates.
  void stream(const ZipEntry& entry, const std::function<void(ByteSpan)>& consumer) const;
  static constexpr std::size_t kStreamPieceBytes = std::size_t{1} << 20;
  // Checks the CRC-32 of the entry's uncompressed bytes, in bounded memory (stream()):
  // Error(kCorrupt) naming the entry, its offset and both CRCs on a mismatch.
  void verify(const ZipEntry& entry) const;
  // The same check for a CRC-32 the caller computed over the entry's bytes (a writer that copied
  // them): Error(kCorrupt) as verify() when `actual` is not the CRC-32 the entry records.
  void check_crc(const ZipEntry& entry, std::uint32_t actual) const;

  // Where the bytes of `entry` (its local header, data and data descriptor) must end: the next
  // entry's local header, or the central directory.
  std::uint64_t limit_of(const ZipEntry& entry) const;

  // What the open found: of the central directory, and (a ZipReader's) of every local header.
  const std::vector<ZipFinding>& findings() const noexcept { return findings_; }
  // The trailer the ZipTrailerResolver found after the archive, if any.
  const std::optional<ZipTrailer>& trailer() const noexcept { return trailer_; }

  const ByteSource& source() const noexcept { return *source_; }
  // The archive's size: the source's, or less when a trailer follows it.
  std::uint64_t size() const noexcept { return size_; }
  // The archive's size() bytes when the source has them in memory or mapped; empty when it
  // reads ranges.
  ByteSpan bytes() const noexcept;
  // What keeps bytes() alive (the mapping, the caller's token); empty for a source that reads
  // ranges, whose reads own their buffers.
  const OwnerToken& owner() const noexcept { return source_->owner(); }
  const std::string& source_name() const noexcept { return source_->name(); }
  std::uint64_t central_directory_offset() const noexcept { return central_directory_offset_; }
  std::uint64_t central_directory_size() const noexcept { return central_directory_size_; }
  std::uint64_t end_record_offset() const noexcept { return end_record_offset_; }
  // Offset of the zip64 end record when there is one, else end_record_offset().
  std::uint64_t tail_offset() const noexcept { return tail_offset_; }
  bool has_zip64_end_record() const noexcept { return zip64_end_record_; }
  ByteSpan comment() const noexcept { return comment_; }

 protected:
  ZipDirectory(std::shared_ptr<const ByteSource> source, ZipReaderOptions options);
  // Reads the end records and the central directory, then, when `locate_every_entry`, every
  // entry's local header.
  void parse(const ZipTrailerResolver& trailer, bool locate_every_entry);

 private:
  const ZipEntry& own_entry(const ZipEntry& entry, const char* operation) const;
  ErrorContext entry_place(const ZipEntry& entry) const;
  // The entry's compressed bytes, its local header read and checked first when it is not
  // located: `located` is then the entry with its data located.
  TensorBytes compressed_data(const ZipEntry& e, std::optional<ZipEntry>& located) const;
  ByteRange read_range(const ZipEntry& e) const;
  TensorBytes located_data(const ZipEntry& e, const TensorBytes& read,
                           std::optional<ZipEntry>& located) const;
  TensorBytes inflated_data(const ZipEntry& e) const;

  std::shared_ptr<const ByteSource> source_;
  ZipReaderOptions options_;
  std::uint64_t size_ = 0;
  // What the reader holds of the archive's bytes (zip_held_bytes.h): the spans of ZipEntry and
  // the keys of by_name_ point into it. Shared with the reader's copies.
  std::shared_ptr<const zip::HeldBytes> held_;
  std::vector<ZipEntry> entries_;
  std::unordered_map<std::string_view, std::size_t> by_name_;
  std::vector<ZipFinding> findings_;
  std::optional<ZipTrailer> trailer_;
  std::uint64_t central_directory_offset_ = 0;
  std::uint64_t central_directory_size_ = 0;
  std::uint64_t end_record_offset_ = 0;
  std::uint64_t tail_offset_ = 0;
  bool zip64_end_record_ = false;
  ByteSpan comment_;
  // Local headers copied at open, for ZipLocalLayout::local_extra, shared with copies of the
  // reader, packed into buffers that are filled up to their reserved capacity and no further, so
  // each keeps its address.
  std::shared_ptr<std::vector<std::vector<std::uint8_t>>> local_header_copies_;
};

// The checked reader: a ZipDirectory whose every entry is located at open (ZipEntry::local is
// set for each), so that any entry can be read and the findings cover every local header.
class ZipReader final : public ZipDirectory {
 public:
  // Maps `path` (MappedFile; or reads it whole with FileAccess::kRead, or in ranges with
  // kRanges) and reads its structure. The mapping is the owner token of every stored entry's
  // data, so that data stays valid after the reader is gone. No payload page of the mapping is
  // touched: the cost is per entry, whatever the bytes between the entries. A path that is not a
  // regular file is Error(kIo).
  static ZipReader open(const std::filesystem::path& path, ZipReaderOptions options = {},
                        FileAccess access = FileAccess::kMap);
  // The same for a file already opened and checked (MappedFile::open or adopt): the reader reads
  // that very file, whatever its path names by now. `file` is the owner token of stored data.
  // Error(kInvalidArgument) when it is null.
  static ZipReader open(std::shared_ptr<const MappedFile> file, ZipReaderOptions options = {});
  // Reads an archive held in memory. Borrows `bytes`: they must outlive the reader and, when
  // `owner` is kNoOwner, every TensorBytes it returns; `owner` is handed to those.
  static ZipReader from_bytes(ByteSpan bytes, OwnerToken owner, ZipReaderOptions options = {},
                              std::string source_name = "<memory>");
  // ZipDirectory::open, every entry then located.
  static ZipReader open(std::shared_ptr<const ByteSource> source, ZipReaderOptions options = {},
                        const ZipTrailerResolver& trailer = {});

 private:
  using ZipDirectory::ZipDirectory;
};

}  // namespace onnxzip

#endif  // ONNXZIP_ZIP_READER_H_
