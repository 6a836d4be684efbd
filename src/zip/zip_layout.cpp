#include "zip_layout.h"

#include <limits>
#include <string>

#include "check.h"
#include "zip_records.h"

namespace onnxzip::zip {
namespace {

constexpr std::uint32_t kMinAlignment = 64;
constexpr std::uint32_t kMaxAlignment = 65536;
// A name's length is a u16 in both headers (APPNOTE 4.4.10).
constexpr std::uint64_t kMaxNameLength = 0xFFFF;
// The largest value an extra field length (u16) can hold.
constexpr std::uint64_t kMaxExtraLength = 0xFFFF;
// MS-DOS date 1980-01-01 (day 1, month 1, year 0), time 00:00:00: fixed for reproducible output.
constexpr std::uint16_t kDosDate = 0x0021;
constexpr std::uint16_t kDosTime = 0;
// st_mode of a regular file, rw-r--r--, in the high half as UNIX zip tools store it.
constexpr std::uint32_t kExternalAttributes = 0100644u << 16;
constexpr std::uint16_t kHostUnix = 3u << 8;
// Local zip64 extra: header plus both sizes (APPNOTE 4.5.3 requires both in a local header).
constexpr std::size_t kLocalZip64ExtraSize = kExtraHeaderSize + 16;

bool needs_zip64(std::uint64_t value) noexcept { return value >= kSentinel32; }

std::uint16_t version_needed(bool zip64) noexcept {
  return zip64 ? kVersionZip64 : kVersionDefault;
}

// The u16 alignment field of the 0xD935 record: A, except 65536, which a u16 cannot hold, is 0.
std::uint16_t alignment_field(std::uint32_t alignment) noexcept {
  return alignment == kMaxAlignment ? 0 : static_cast<std::uint16_t>(alignment);
}

// The largest file offset the OS accepts (off_t).
constexpr std::uint64_t kMaxFileSize = std::numeric_limits<std::int64_t>::max();

}  // namespace

std::string alignment_problem(std::uint32_t alignment) {
  if (is_power_of_two(alignment) && alignment >= kMinAlignment && alignment <= kMaxAlignment) {
    return "";
  }
  return "alignment " + std::to_string(alignment) + " is not a power of two between 64 and 65536";
}

bool entry_fits_file(std::uint64_t position, std::uint64_t size) noexcept {
  // More than any local header with its name and extra field, a gap and the padding can take.
  constexpr std::uint64_t kHeadroom =
      LocalFileHeader::kSize + kMaxNameLength + kMaxExtraLength + kGapStep + kMaxAlignment;
  return position <= kMaxFileSize - kHeadroom && size <= kMaxFileSize - kHeadroom - position;
}

EntryLayout plan_entry(std::uint64_t position, std::size_t name_length, std::uint64_t size,
                       std::uint32_t alignment) {
  EntryLayout layout;
  layout.size = size;
  layout.zip64_size = needs_zip64(size);
  const std::uint64_t zip64_extra = layout.zip64_size ? kLocalZip64ExtraSize : 0;
  // The padding record follows the zip64 extra, so its size is computed from the exact end of
  // everything before it (the bug of padding computed before the zip64 extra is not repeated).
  for (;;) {
    layout.local_header_offset = position + layout.gap;
    const std::uint64_t header_end =
        layout.local_header_offset + LocalFileHeader::kSize + name_length + zip64_extra;
    std::uint64_t padding = (alignment - header_end % alignment) % alignment;
    if (padding != 0 && padding < kMinAlignmentRecordSize) padding += alignment;
    if (zip64_extra + padding <= kMaxExtraLength) {
      layout.padding = static_cast<std::size_t>(padding);
      layout.data_offset = header_end + padding;
      break;
    }
    // Only alignment 65536 gets here, and the padding drops by 64 with the step.
    ONNXZIP_DCHECK(alignment == 65536 && layout.gap == 0);
    layout.gap += kGapStep;
  }
  ONNXZIP_DCHECK(layout.data_offset % alignment == 0);
  ONNXZIP_DCHECK(layout.padding == 0 || layout.padding >= kMinAlignmentRecordSize);
  layout.zip64_offset = needs_zip64(layout.local_header_offset);
  return layout;
}

std::vector<std::uint8_t> encode_local_header(const EntryLayout& layout, std::string_view name,
                                              std::uint32_t crc, std::uint32_t alignment) {
  std::vector<std::uint8_t> extra;
  if (layout.zip64_size) {
    Zip64Extra zip64;
    zip64.uncompressed_size = layout.size;
    zip64.compressed_size = layout.size;
    zip64.append_to(extra);
  }
  if (layout.padding != 0) {
    append_alignment_record(extra, alignment_field(alignment), layout.padding);
  }

  LocalFileHeader header;
  header.version_needed = version_needed(layout.zip64_size || layout.zip64_offset);
  header.flags = kFlagUtf8;
  header.method = kMethodStored;
  header.modified_time = kDosTime;
  header.modified_date = kDosDate;
  header.crc32 = crc;
  const auto size32 = layout.zip64_size ? kSentinel32 : static_cast<std::uint32_t>(layout.size);
  header.compressed_size = size32;
  header.uncompressed_size = size32;
  header.name_length = static_cast<std::uint16_t>(name.size());
  header.extra_length = static_cast<std::uint16_t>(extra.size());

  std::vector<std::uint8_t> bytes(LocalFileHeader::kSize);
  header.encode(bytes);
  bytes.insert(bytes.end(), name.begin(), name.end());
  bytes.insert(bytes.end(), extra.begin(), extra.end());
  return bytes;
}

WrittenEntry written_entry(const EntryLayout& layout, std::string_view name, std::uint32_t crc) {
  WrittenEntry entry;
  entry.name = std::string(name);
  entry.local_header_offset = layout.local_header_offset;
  entry.data_offset = layout.data_offset;
  entry.size = layout.size;
  entry.crc32 = crc;
  entry.zip64 = layout.zip64_size || layout.zip64_offset;
  return entry;
}

void append_central_record(std::vector<std::uint8_t>& out, const WrittenEntry& entry) {
  const bool zip64_size = needs_zip64(entry.size);
  const bool zip64_offset = needs_zip64(entry.local_header_offset);
  // Only the fields whose 32-bit counterpart holds the sentinel, in APPNOTE order.
  Zip64Extra zip64;
  if (zip64_size) {
    zip64.uncompressed_size = entry.size;
    zip64.compressed_size = entry.size;
  }
  if (zip64_offset) zip64.local_header_offset = entry.local_header_offset;
  const std::size_t extra_size = (zip64_size || zip64_offset) ? zip64.encoded_size() : 0;

  CentralDirectoryHeader header;
  header.version_needed = version_needed(zip64_size || zip64_offset);
  header.version_made_by = kHostUnix | header.version_needed;
  header.flags = kFlagUtf8;
  header.method = kMethodStored;
  header.modified_time = kDosTime;
  header.modified_date = kDosDate;
  header.crc32 = entry.crc32;
  const auto size32 = zip64_size ? kSentinel32 : static_cast<std::uint32_t>(entry.size);
  header.compressed_size = size32;
  header.uncompressed_size = size32;
  header.name_length = static_cast<std::uint16_t>(entry.name.size());
  header.extra_length = static_cast<std::uint16_t>(extra_size);
  header.external_attributes = kExternalAttributes;
  header.local_header_offset =
      zip64_offset ? kSentinel32 : static_cast<std::uint32_t>(entry.local_header_offset);

  const std::size_t start = out.size();
  out.resize(start + CentralDirectoryHeader::kSize);
  header.encode(MutableByteSpan(out).subspan(start));
  out.insert(out.end(), entry.name.begin(), entry.name.end());
  if (extra_size != 0) zip64.append_to(out);
}

void append_end_records(std::vector<std::uint8_t>& out, std::uint64_t count, std::uint64_t offset,
                        std::uint64_t size, std::uint16_t comment_length) {
  const bool count_overflows = count >= kSentinel16;
  const bool size_overflows = needs_zip64(size);
  const bool offset_overflows = needs_zip64(offset);
  if (count_overflows || size_overflows || offset_overflows) {
    Zip64EndOfCentralDirectory end64;
    end64.entries_on_disk = count;
    end64.entries_total = count;
    end64.central_directory_size = size;
    end64.central_directory_offset = offset;
    Zip64EndLocator locator;
    locator.zip64_end_offset = offset + size;
    locator.total_disks = 1;
    const std::size_t start = out.size();
    out.resize(start + Zip64EndOfCentralDirectory::kSize + Zip64EndLocator::kSize);
    end64.encode(MutableByteSpan(out).subspan(start));
    locator.encode(MutableByteSpan(out).subspan(start + Zip64EndOfCentralDirectory::kSize));
  }
  // Sentinels in exactly the fields that overflow; real values elsewhere.
  EndOfCentralDirectory end;
  const auto count16 = count_overflows ? kSentinel16 : static_cast<std::uint16_t>(count);
  end.entries_on_disk = count16;
  end.entries_total = count16;
  end.central_directory_size = size_overflows ? kSentinel32 : static_cast<std::uint32_t>(size);
  end.central_directory_offset =
      offset_overflows ? kSentinel32 : static_cast<std::uint32_t>(offset);
  end.comment_length = comment_length;
  const std::size_t start = out.size();
  out.resize(start + EndOfCentralDirectory::kSize);
  end.encode(MutableByteSpan(out).subspan(start));
}

}  // namespace onnxzip::zip
