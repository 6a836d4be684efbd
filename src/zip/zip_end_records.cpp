// The end of a ZIP archive: the end of central directory record, found by its comment reaching
// the end of the file, and the zip64 end record and locator before it (APPNOTE 4.3.14 to 4.3.16).
#include <string>

#include "little_endian.h"
#include "onnxzip/crc32.h"
#include "zip_parser.h"

namespace onnxzip {
namespace {

using detail::load_le16;
using detail::load_le32;
using detail::load_le64;
using zip::kMaxEndRecordSearch;
using zip::with_context;

}  // namespace

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

}  // namespace onnxzip
