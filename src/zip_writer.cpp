#include "onnxzip/zip_writer.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <utility>

#include "little_endian.h"
#include "message_text.h"
#include "onnxzip/crc32.h"
#include "onnxzip/error.h"
#include "onnxzip/output_file.h"
#include "zip_records.h"

namespace onnxzip {
namespace {

using detail::quote;

constexpr std::size_t kMaxNameLength = 255;
constexpr std::uint32_t kMinAlignment = 64;
constexpr std::uint32_t kMaxAlignment = 65536;
// Offset of the CRC-32 field inside a local file header (APPNOTE 4.3.7), patched after streaming.
constexpr std::uint64_t kLocalHeaderCrcOffset = 14;
// The largest value an extra field length (u16) can hold.
constexpr std::uint64_t kMaxExtraLength = 0xFFFF;
// Zero bytes left before a local header whose padding would not fit in the extra field
// (format decisions: alignment 65536 with a natural padding of 1 to 5 bytes).
constexpr std::uint64_t kGapStep = 64;
// The largest file offset the OS accepts (off_t); entry sizes are checked against it before
// anything is written, so no offset computation below can overflow.
constexpr std::uint64_t kMaxFileSize = std::numeric_limits<std::int64_t>::max();
// MS-DOS date 1980-01-01 (day 1, month 1, year 0), time 00:00:00: fixed for reproducible output.
constexpr std::uint16_t kDosDate = 0x0021;
constexpr std::uint16_t kDosTime = 0;
// st_mode of a regular file, rw-r--r--, in the high half as UNIX zip tools store it.
constexpr std::uint32_t kExternalAttributes = 0100644u << 16;
constexpr std::uint16_t kHostUnix = 3u << 8;
// Local zip64 extra: header plus both sizes (APPNOTE 4.5.3 requires both in a local header).
constexpr std::size_t kLocalZip64ExtraSize = zip::kExtraHeaderSize + 16;
// More than any local header with its name and extra field can take.
constexpr std::uint64_t kLocalHeaderLimit =
    zip::LocalFileHeader::kSize + kMaxNameLength + kMaxExtraLength;
// Central directory records are gathered and written in batches of about this size.
constexpr std::size_t kCentralBatchSize = 64 * 1024;

// Where one entry goes. Computed before any byte of the entry is written: the size is known up
// front, so the zip64 decision and the padding are exact.
struct EntryLayout {
  std::uint64_t gap = 0;  // Zero bytes between the previous entry's data and the local header.
  std::uint64_t local_header_offset = 0;
  std::uint64_t data_offset = 0;
  std::uint64_t size = 0;
  bool zip64_size = false;    // size >= 0xFFFFFFFF: sentinels and a zip64 extra with the sizes.
  bool zip64_offset = false;  // Offset >= 0xFFFFFFFF: the central header needs a zip64 extra.
  std::size_t padding = 0;    // Size of the 0xD935 record; 0 when none is needed.
};

bool needs_zip64(std::uint64_t value) noexcept { return value >= zip::kSentinel32; }

std::uint16_t version_needed(bool zip64) noexcept {
  return zip64 ? zip::kVersionZip64 : zip::kVersionDefault;
}

// The u16 alignment field of the 0xD935 record: A, except 65536, which a u16 cannot hold, is 0.
std::uint16_t alignment_field(std::uint32_t alignment) noexcept {
  return alignment == kMaxAlignment ? 0 : static_cast<std::uint16_t>(alignment);
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
        layout.local_header_offset + zip::LocalFileHeader::kSize + name_length + zip64_extra;
    std::uint64_t padding = (alignment - header_end % alignment) % alignment;
    if (padding != 0 && padding < zip::kMinAlignmentRecordSize) padding += alignment;
    if (zip64_extra + padding <= kMaxExtraLength) {
      layout.padding = static_cast<std::size_t>(padding);
      layout.data_offset = header_end + padding;
      break;
    }
    // Only alignment 65536 gets here; one step always suffices (the padding drops by 64).
    layout.gap += kGapStep;
  }
  layout.zip64_offset = needs_zip64(layout.local_header_offset);
  return layout;
}

// Local header, name, [zip64 extra], [alignment record], preceded by the gap if any.
void write_local_header(AtomicOutputFile& file, const EntryLayout& layout, std::string_view name,
                        std::uint32_t crc, std::uint32_t alignment) {
  std::vector<std::uint8_t> extra;
  if (layout.zip64_size) {
    zip::Zip64Extra zip64;
    zip64.uncompressed_size = layout.size;
    zip64.compressed_size = layout.size;
    zip64.append_to(extra);
  }
  if (layout.padding != 0) {
    zip::append_alignment_record(extra, alignment_field(alignment), layout.padding);
  }

  zip::LocalFileHeader header;
  header.version_needed = version_needed(layout.zip64_size || layout.zip64_offset);
  header.flags = zip::kFlagUtf8;
  header.method = zip::kMethodStored;
  header.modified_time = kDosTime;
  header.modified_date = kDosDate;
  header.crc32 = crc;
  const auto size32 =
      layout.zip64_size ? zip::kSentinel32 : static_cast<std::uint32_t>(layout.size);
  header.compressed_size = size32;
  header.uncompressed_size = size32;
  header.name_length = static_cast<std::uint16_t>(name.size());
  header.extra_length = static_cast<std::uint16_t>(extra.size());

  std::uint8_t fixed[zip::LocalFileHeader::kSize];
  header.encode(fixed);
  file.write_zeros(layout.gap);
  file.write(fixed);
  file.write(ByteSpan(reinterpret_cast<const std::uint8_t*>(name.data()), name.size()));
  file.write(extra);
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

// Passes a producer's pieces straight to the file, computing the CRC as they go by.
class StreamingSink final : public EntrySink {
 public:
  StreamingSink(AtomicOutputFile& file, std::uint64_t size, const std::string& label)
      : file_(file), remaining_(size), size_(size), label_(label) {}

  void write(ByteSpan piece) override {
    if (overflowed_ || piece.size() > remaining_) {
      overflowed_ = true;
      throw Error(ErrorCode::kInvalidArgument,
                  label_ + ": the producer wrote more than the declared " + std::to_string(size_) +
                      " bytes (a piece of " + std::to_string(piece.size()) + " bytes after " +
                      std::to_string(size_ - remaining_) + ")");
    }
    file_.write(piece);
    crc_ = crc32(piece, crc_);
    remaining_ -= piece.size();
  }

  std::uint64_t remaining() const noexcept override { return remaining_; }
  bool overflowed() const noexcept { return overflowed_; }
  std::uint32_t crc() const noexcept { return crc_; }

 private:
  AtomicOutputFile& file_;
  std::uint64_t remaining_;
  const std::uint64_t size_;
  const std::string& label_;
  std::uint32_t crc_ = 0;
  bool overflowed_ = false;
};

std::string ascii_lower(std::string_view name) {
  std::string lowered(name);
  for (char& c : lowered) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return lowered;
}

bool is_identifier_start(char c) noexcept {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

bool is_identifier_char(char c) noexcept {
  return is_identifier_start(c) || (c >= '0' && c <= '9');
}

}  // namespace

ZipWriter::ZipWriter(std::filesystem::path destination, ZipWriterOptions options)
    : alignment_(options.alignment) {
  if (!is_power_of_two(alignment_) || alignment_ < kMinAlignment || alignment_ > kMaxAlignment) {
    throw Error(ErrorCode::kInvalidArgument, destination.string() + ": alignment " +
                                                 std::to_string(alignment_) +
                                                 " is not a power of two between 64 and 65536");
  }
  OutputFileOptions file_options;
  file_options.durable = options.durable;
  file_options.follow_symlinks = options.follow_symlinks;
  file_options.buffer_size = options.buffer_size;
  file_ = std::make_unique<AtomicOutputFile>(std::move(destination), file_options);
}

ZipWriter::~ZipWriter() = default;
ZipWriter::ZipWriter(ZipWriter&& other) noexcept = default;
ZipWriter& ZipWriter::operator=(ZipWriter&& other) noexcept = default;

void ZipWriter::validate_name(std::string_view name, NameKind kind) {
  const auto fail = [&](const std::string& reason) {
    throw Error(ErrorCode::kInvalidArgument, "entry name " + quote(name) + ": " + reason);
  };
  if (name.empty()) fail("is empty");
  if (name.size() > kMaxNameLength) {
    fail("is " + std::to_string(name.size()) + " bytes long, more than the 255 allowed");
  }
  if (!is_identifier_start(name[0])) {
    fail("must start with an ASCII letter or an underscore (a C identifier)");
  }
  for (std::size_t i = 1; i < name.size(); ++i) {
    if (!is_identifier_char(name[i])) {
      char found[8];
      std::snprintf(found, sizeof found, "0x%02x", static_cast<unsigned char>(name[i]));
      fail("byte " + std::to_string(i) + " (" + found +
           ") is not an ASCII letter, digit or underscore (a C identifier)");
    }
  }
  const bool reserved = name.starts_with("__");
  if (kind == NameKind::kTensor && reserved) {
    fail("names starting with '__' are reserved for the format");
  }
  if (kind == NameKind::kReserved && !reserved) fail("a reserved name must start with '__'");
}

std::string ZipWriter::entry_label(std::string_view name) const {
  return file_->destination().string() + ": entry " + quote(name);
}

void ZipWriter::ensure_usable(const char* operation) const {
  if (!file_) {
    throw Error(ErrorCode::kBadState, std::string(operation) + " on a moved-from ZipWriter");
  }
  const char* reason = nullptr;
  if (in_producer_) {
    reason = "from inside an entry producer";
  } else if (finished_) {
    reason = "after finish()";
  } else if (failed_) {
    reason = "after an entry failed; the archive cannot be completed";
  }
  if (reason != nullptr) {
    throw Error(ErrorCode::kBadState,
                file_->destination().string() + ": " + operation + " called " + reason);
  }
}

void ZipWriter::check_unique(std::string_view name) const {
  const auto found = lowered_names_.find(ascii_lower(name));
  if (found == lowered_names_.end()) return;
  const std::string& existing = entries_[found->second].name;
  if (existing == name) {
    throw Error(ErrorCode::kInvalidArgument, entry_label(name) + ": duplicate name");
  }
  throw Error(ErrorCode::kInvalidArgument,
              entry_label(name) + ": differs from the earlier entry " + quote(existing) +
                  " only in ASCII case (they would collide on case-insensitive file systems)");
}

void ZipWriter::check_size(std::string_view name, std::uint64_t size) const {
  // Checked before anything is written, so the layout's offset arithmetic cannot overflow.
  const std::uint64_t headroom = kLocalHeaderLimit + kGapStep + kMaxAlignment;
  const std::uint64_t position = file_->position();
  if (position > kMaxFileSize - headroom || size > kMaxFileSize - headroom - position) {
    throw Error(ErrorCode::kInvalidArgument, entry_label(name) + ": size " + std::to_string(size) +
                                                 " would take the file past the largest size"
                                                 " the system allows");
  }
}

void ZipWriter::remember(WrittenEntry entry) {
  lowered_names_.emplace(ascii_lower(entry.name), entries_.size());
  entries_.push_back(std::move(entry));
}

const WrittenEntry& ZipWriter::add(std::string_view name, ByteSpan data, NameKind kind) {
  ensure_usable("add");
  validate_name(name, kind);
  check_unique(name);
  check_size(name, data.size());
  const EntryLayout layout = plan_entry(file_->position(), name.size(), data.size(), alignment_);
  const std::uint32_t crc = crc32(data);
  try {
    write_local_header(*file_, layout, name, crc, alignment_);
    file_->write(data);
    remember(written_entry(layout, name, crc));
  } catch (...) {
    failed_ = true;
    throw;
  }
  return entries_.back();
}

const WrittenEntry& ZipWriter::add(std::string_view name, std::uint64_t size,
                                   const EntryProducer& producer, NameKind kind) {
  ensure_usable("add");
  validate_name(name, kind);
  check_unique(name);
  check_size(name, size);
  const std::string label = entry_label(name);
  if (!producer) throw Error(ErrorCode::kInvalidArgument, label + ": no producer given");
  const EntryLayout layout = plan_entry(file_->position(), name.size(), size, alignment_);
  try {
    write_local_header(*file_, layout, name, 0, alignment_);
    StreamingSink sink(*file_, size, label);
    in_producer_ = true;
    try {
      producer(sink);
    } catch (...) {
      in_producer_ = false;
      throw;
    }
    in_producer_ = false;
    // A producer may swallow the sink's overflow error; the entry is still wrong.
    if (sink.overflowed()) {
      throw Error(
          ErrorCode::kInvalidArgument,
          label + ": the producer wrote more than the declared " + std::to_string(size) + " bytes");
    }
    if (sink.remaining() != 0) {
      throw Error(ErrorCode::kInvalidArgument,
                  label + ": the producer wrote " + std::to_string(size - sink.remaining()) +
                      " of the declared " + std::to_string(size) + " bytes");
    }
    std::uint8_t crc_bytes[4];
    detail::store_le32(crc_bytes, sink.crc());
    file_->write_at(layout.local_header_offset + kLocalHeaderCrcOffset, crc_bytes);
    remember(written_entry(layout, name, sink.crc()));
  } catch (...) {
    failed_ = true;
    throw;
  }
  return entries_.back();
}

void ZipWriter::write_central_directory() {
  const std::uint64_t central_offset = file_->position();
  std::vector<std::uint8_t> batch;
  batch.reserve(kCentralBatchSize + zip::CentralDirectoryHeader::kSize + kMaxNameLength + 32);
  for (const WrittenEntry& entry : entries_) {
    const bool zip64_size = needs_zip64(entry.size);
    const bool zip64_offset = needs_zip64(entry.local_header_offset);
    // Only the fields whose 32-bit counterpart holds the sentinel, in APPNOTE order.
    zip::Zip64Extra zip64;
    if (zip64_size) {
      zip64.uncompressed_size = entry.size;
      zip64.compressed_size = entry.size;
    }
    if (zip64_offset) zip64.local_header_offset = entry.local_header_offset;
    const std::size_t extra_size = (zip64_size || zip64_offset) ? zip64.encoded_size() : 0;

    zip::CentralDirectoryHeader header;
    header.version_needed = version_needed(zip64_size || zip64_offset);
    header.version_made_by = kHostUnix | header.version_needed;
    header.flags = zip::kFlagUtf8;
    header.method = zip::kMethodStored;
    header.modified_time = kDosTime;
    header.modified_date = kDosDate;
    header.crc32 = entry.crc32;
    const auto size32 = zip64_size ? zip::kSentinel32 : static_cast<std::uint32_t>(entry.size);
    header.compressed_size = size32;
    header.uncompressed_size = size32;
    header.name_length = static_cast<std::uint16_t>(entry.name.size());
    header.extra_length = static_cast<std::uint16_t>(extra_size);
    header.external_attributes = kExternalAttributes;
    header.local_header_offset =
        zip64_offset ? zip::kSentinel32 : static_cast<std::uint32_t>(entry.local_header_offset);

    const std::size_t start = batch.size();
    batch.resize(start + zip::CentralDirectoryHeader::kSize);
    header.encode(MutableByteSpan(batch).subspan(start));
    batch.insert(batch.end(), entry.name.begin(), entry.name.end());
    if (extra_size != 0) zip64.append_to(batch);
    if (batch.size() >= kCentralBatchSize) {
      file_->write(batch);
      batch.clear();
    }
  }
  file_->write(batch);
  batch.clear();

  const std::uint64_t central_size = file_->position() - central_offset;
  const std::uint64_t count = entries_.size();
  const bool count_overflows = count >= zip::kSentinel16;
  const bool size_overflows = needs_zip64(central_size);
  const bool offset_overflows = needs_zip64(central_offset);
  if (count_overflows || size_overflows || offset_overflows) {
    zip::Zip64EndOfCentralDirectory end64;
    end64.entries_on_disk = count;
    end64.entries_total = count;
    end64.central_directory_size = central_size;
    end64.central_directory_offset = central_offset;
    zip::Zip64EndLocator locator;
    locator.zip64_end_offset = file_->position();
    locator.total_disks = 1;
    std::uint8_t records[zip::Zip64EndOfCentralDirectory::kSize + zip::Zip64EndLocator::kSize];
    end64.encode(records);
    locator.encode(MutableByteSpan(records).subspan(zip::Zip64EndOfCentralDirectory::kSize));
    file_->write(records);
  }

  // Sentinels in exactly the fields that overflow; real values elsewhere.
  zip::EndOfCentralDirectory end;
  const auto count16 = count_overflows ? zip::kSentinel16 : static_cast<std::uint16_t>(count);
  end.entries_on_disk = count16;
  end.entries_total = count16;
  end.central_directory_size =
      size_overflows ? zip::kSentinel32 : static_cast<std::uint32_t>(central_size);
  end.central_directory_offset =
      offset_overflows ? zip::kSentinel32 : static_cast<std::uint32_t>(central_offset);
  std::uint8_t record[zip::EndOfCentralDirectory::kSize];
  end.encode(record);
  file_->write(record);
}

void ZipWriter::finish() {
  ensure_usable("finish");
  try {
    write_central_directory();
    file_->commit();
  } catch (...) {
    failed_ = true;
    throw;
  }
  finished_ = true;
}

}  // namespace onnxzip
