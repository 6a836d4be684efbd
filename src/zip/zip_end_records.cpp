#include "zip_end_records.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "little_endian.h"
#include "onnxzip/internal/zip_reader.h"

namespace onnxzip::zip {
namespace {

using detail::load_le16;
using detail::load_le32;
using End = EndOfCentralDirectory;
using End64 = Zip64EndOfCentralDirectory;

class EndRecordReader final {
 public:
  EndRecordReader(HeldBytes& held, const ZipPlaces& places, const ZipTrailerResolver& trailer)
      : held_(held), places_(places), trailer_(trailer), size_(held.source().size()) {}

  ArchiveEnd read();

 private:
  // The end record whose comment reaches the end of the archive exactly (nullopt when none
  // does), and the candidate nearest to the end that does not, for the message.
  std::optional<std::uint64_t> find_end_record(std::optional<std::uint64_t>& nearest_mismatch);
  [[noreturn]] void fail_without_end_record(std::optional<std::uint64_t> nearest_mismatch) const;
  // When the resolver knows a trailer the source ends with, shrinks the archive to the one it
  // points to and returns true.
  bool resolve_trailer(ArchiveEnd& out);
  void read_zip64_end_records(const End& end, ArchiveEnd& out);
  // Where the zip64 locator at `locator_offset` says the zip64 end record is.
  std::uint64_t zip64_end_record_offset(std::uint64_t locator_offset) const;
  void check_zip64_end_record(const End64& record, std::uint64_t record_offset,
                              std::uint64_t locator_offset) const;
  void check_end_agrees(const End& end, std::uint64_t end_offset, const End64& record,
                        std::uint64_t record_offset) const;

  HeldBytes& held_;
  const ZipPlaces& places_;
  const ZipTrailerResolver& trailer_;
  std::uint64_t size_;  // Of the archive: the source's, or less before a trailer.
};

ArchiveEnd EndRecordReader::read() {
  if (size_ < End::kSize) {
    places_.fail(ErrorCode::kCorrupt, places_.file_place(),
                 "not a ZIP archive: " + std::to_string(size_) +
                     " bytes cannot hold an end of central directory record (22 bytes)");
  }
  ArchiveEnd out;
  std::optional<std::uint64_t> nearest_mismatch;
  std::optional<std::uint64_t> chosen = find_end_record(nearest_mismatch);
  if (!chosen && resolve_trailer(out)) {
    chosen = find_end_record(nearest_mismatch);
    if (!chosen) {
      places_.fail_at(ErrorCode::kCorrupt, out.trailer->name, out.trailer->offset,
                      "the archive it points to ends at offset " + std::to_string(size_) +
                          ", but no end of central directory record ends there");
    }
  }
  if (!chosen) fail_without_end_record(nearest_mismatch);

  const std::uint64_t end_offset = *chosen;
  const End end = End::decode(held_.up_to(size_), end_offset);
  out.size = size_;
  out.end_record_offset = end_offset;
  out.comment = held_.at(end_offset + End::kSize, end.comment_length);

  const std::uint64_t locator_offset = end_offset - std::min<std::uint64_t>(end_offset, 20);
  held_.hold_from(locator_offset);
  const bool has_locator =
      end_offset >= Zip64EndLocator::kSize &&
      load_le32(held_.at(locator_offset, 4).data()) == Zip64EndLocator::kSignature;
  if (has_locator) {
    read_zip64_end_records(end, out);
    return out;
  }
  // Without zip64 records a sentinel value is taken literally (65535 entries is legal there).
  if (end.disk_number != 0 || end.central_directory_disk != 0) {
    places_.fail_at(ErrorCode::kUnsupported, "end of central directory record", end_offset,
                    "multi-disk archive (this is disk " + std::to_string(end.disk_number) +
                        ", the central directory starts on disk " +
                        std::to_string(end.central_directory_disk) + ")");
  }
  if (end.entries_on_disk != end.entries_total) {
    places_.fail_at(ErrorCode::kCorrupt, "end of central directory record", end_offset,
                    "counts " + std::to_string(end.entries_on_disk) + " entries on this disk but " +
                        std::to_string(end.entries_total) + " in total, on a single-disk archive");
  }
  out.entries = end.entries_total;
  out.directory_size = end.central_directory_size;
  out.directory_offset = end.central_directory_offset;
  out.tail_offset = end_offset;
  return out;
}

std::optional<std::uint64_t> EndRecordReader::find_end_record(
    std::optional<std::uint64_t>& nearest_mismatch) {
  nearest_mismatch.reset();
  if (size_ < End::kSize) return std::nullopt;
  // Scan back from the end. Several candidates may reach the end exactly when the archive
  // comment holds a ZIP of its own; the farthest from the end wins (the others lie inside its
  // comment).
  const std::uint64_t lowest = size_ - std::min(size_, kMaxEndRecordSearch);
  held_.hold_from(lowest);
  const ByteSpan searched = held_.at(lowest, size_ - lowest);
  std::optional<std::uint64_t> chosen;
  for (std::uint64_t pos = size_ - End::kSize + 1; pos-- > lowest;) {
    const std::uint8_t* p = searched.data() + (pos - lowest);
    if (load_le32(p) != End::kSignature) continue;
    const std::uint64_t comment_length = load_le16(p + 20);
    if (pos + End::kSize + comment_length == size_) {
      chosen = pos;
    } else if (!nearest_mismatch) {
      nearest_mismatch = pos;
    }
  }
  return chosen;
}

void EndRecordReader::fail_without_end_record(std::optional<std::uint64_t> nearest_mismatch) const {
  if (nearest_mismatch) {
    const std::uint64_t comment_end =
        *nearest_mismatch + End::kSize + load_le16(held_.at(*nearest_mismatch + 20, 2).data());
    places_.fail_at(ErrorCode::kCorrupt, "end of central directory record", *nearest_mismatch,
                    "its comment ends at offset " + std::to_string(comment_end) +
                        " but the file has " + std::to_string(size_) +
                        " bytes (bytes after the archive, or a truncated file)");
  }
  places_.fail(ErrorCode::kCorrupt, places_.file_place(),
               "not a ZIP archive: no end of central directory record in the last " +
                   std::to_string(std::min(size_, kMaxEndRecordSearch)) + " bytes");
}

// The archive a trailer the resolver knows says: the source's first bytes, up to where it says.
bool EndRecordReader::resolve_trailer(ArchiveEnd& out) {
  if (!trailer_) return false;
  std::optional<ZipTrailer> trailer = trailer_(held_.source());
  if (!trailer) return false;
  if (trailer->archive_end > size_) {
    places_.fail_at(ErrorCode::kInvalidArgument, trailer->name, trailer->offset,
                    "the archive cannot end at offset " + std::to_string(trailer->archive_end) +
                        ", past the end of the file");
  }
  size_ = trailer->archive_end;
  out.trailer = std::move(trailer);
  return true;
}

void EndRecordReader::read_zip64_end_records(const End& end, ArchiveEnd& out) {
  const std::uint64_t end_offset = out.end_record_offset;
  const std::uint64_t locator_offset = end_offset - Zip64EndLocator::kSize;
  const std::uint64_t record_offset = zip64_end_record_offset(locator_offset);
  // Its own read: an extensible data sector may lie between the record and the locator.
  const TensorBytes bytes = held_.read(record_offset, End64::kSize);
  const End64 record = with_error_context(
      [&] { return places_.file_place(); },
      [&] { return End64::decode(FileBytes(bytes.view(), record_offset), record_offset); });
  check_zip64_end_record(record, record_offset, locator_offset);
  check_end_agrees(end, end_offset, record, record_offset);
  out.zip64 = true;
  out.tail_offset = record_offset;
  out.entries = record.entries_total;
  out.directory_size = record.central_directory_size;
  out.directory_offset = record.central_directory_offset;
}

std::uint64_t EndRecordReader::zip64_end_record_offset(std::uint64_t locator_offset) const {
  using Locator = Zip64EndLocator;
  const Locator locator = Locator::decode(held_.up_to(size_), locator_offset);
  if (locator.zip64_end_disk != 0 || locator.total_disks > 1) {
    places_.fail_at(
        ErrorCode::kUnsupported, "zip64 end of central directory locator", locator_offset,
        "multi-disk archive (" + std::to_string(locator.total_disks) +
            " disks, zip64 end record on disk " + std::to_string(locator.zip64_end_disk) + ")");
  }
  const std::uint64_t record_offset = locator.zip64_end_offset;
  if (!fits(record_offset, End64::kSize, locator_offset)) {
    places_.fail_at(ErrorCode::kCorrupt, "zip64 end of central directory locator", locator_offset,
                    "points to a zip64 end record at offset " + std::to_string(record_offset) +
                        ", which has no room before the locator");
  }
  return record_offset;
}

void EndRecordReader::check_zip64_end_record(const End64& record, std::uint64_t record_offset,
                                             std::uint64_t locator_offset) const {
  const char* const name = "zip64 end of central directory record";
  if (record.record_size < End64::kMinRecordSize) {
    places_.fail_at(ErrorCode::kCorrupt, name, record_offset,
                    "record size " + std::to_string(record.record_size) + " is below the minimum " +
                        std::to_string(End64::kMinRecordSize));
  }
  // The record may carry an extensible data sector, but nothing may sit between it and the
  // locator.
  if (record.record_size - End64::kMinRecordSize != locator_offset - record_offset - End64::kSize) {
    places_.fail_at(ErrorCode::kCorrupt, name, record_offset,
                    "record of " + std::to_string(record.record_size) +
                        " bytes (after its first 12) " +
                        "does not end where the zip64 locator starts (offset " +
                        std::to_string(locator_offset) + ")");
  }
  if (record.disk_number != 0 || record.central_directory_disk != 0) {
    places_.fail_at(ErrorCode::kUnsupported, name, record_offset,
                    "multi-disk archive (this is disk " + std::to_string(record.disk_number) +
                        ", the central directory starts on disk " +
                        std::to_string(record.central_directory_disk) + ")");
  }
}

// Where the end record holds a real value (not the sentinel), it must agree with zip64.
void EndRecordReader::check_end_agrees(const End& end, std::uint64_t end_offset,
                                       const End64& record, std::uint64_t record_offset) const {
  const auto agree = [&](const char* field, std::uint64_t small, std::uint64_t sentinel,
                         std::uint64_t wide) {
    if (small != sentinel && small != wide) {
      places_.fail_at(ErrorCode::kCorrupt, "end of central directory record", end_offset,
                      std::string(field) + " is " + std::to_string(small) +
                          " but the zip64 end record at offset " + std::to_string(record_offset) +
                          " says " + std::to_string(wide));
    }
  };
  agree("the disk number", end.disk_number, kSentinel16, record.disk_number);
  agree("the central directory disk", end.central_directory_disk, kSentinel16,
        record.central_directory_disk);
  agree("the entry count on this disk", end.entries_on_disk, kSentinel16, record.entries_on_disk);
  agree("the entry count", end.entries_total, kSentinel16, record.entries_total);
  agree("the central directory size", end.central_directory_size, kSentinel32,
        record.central_directory_size);
  agree("the central directory offset", end.central_directory_offset, kSentinel32,
        record.central_directory_offset);
  if (record.entries_on_disk != record.entries_total) {
    places_.fail_at(ErrorCode::kCorrupt, "zip64 end of central directory record", record_offset,
                    "counts " + std::to_string(record.entries_on_disk) +
                        " entries on this disk but " + std::to_string(record.entries_total) +
                        " in total, on a single-disk archive");
  }
}

}  // namespace

ArchiveEnd read_archive_end(HeldBytes& held, const ZipPlaces& places,
                            const ZipTrailerResolver& trailer) {
  return EndRecordReader(held, places, trailer).read();
}

}  // namespace onnxzip::zip
