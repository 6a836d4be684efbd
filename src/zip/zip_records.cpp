#include "zip_records.h"

#include <cstdio>
#include <string>

#include "little_endian.h"
#include "onnxzip/error.h"

namespace onnxzip::zip {
namespace {

using detail::load_le16;
using detail::load_le32;
using detail::load_le64;
using detail::store_le16;
using detail::store_le32;
using detail::store_le64;

// [offset, offset + size) of `file`, or Error(kCorrupt) naming `what`, in file offsets.
ByteSpan file_subspan(FileBytes file, std::uint64_t offset, std::size_t size, const char* what) {
  const std::uint64_t end = file.start + file.bytes.size();
  if (offset < file.start || !fits(offset, size, end)) {
    throw Error(ErrorCode::kCorrupt, std::string(what) + ": range at offset " +
                                         std::to_string(offset) + " of length " +
                                         std::to_string(size) + " exceeds the " +
                                         std::to_string(end) + " bytes available");
  }
  return file.bytes.subspan(static_cast<std::size_t>(offset - file.start), size);
}

// Bounds-checks [offset, offset + size) of `file` and the signature at its start.
const std::uint8_t* record_at(FileBytes file, std::uint64_t offset, std::size_t size,
                              std::uint32_t signature, const char* record_name) {
  const ByteSpan bytes = file_subspan(file, offset, size, record_name);
  if (load_le32(bytes.data()) != signature) {
    char found[16];
    std::snprintf(found, sizeof found, "0x%08x", load_le32(bytes.data()));
    throw Error(ErrorCode::kCorrupt, std::string(record_name) + " at offset " +
                                         std::to_string(offset) + ": bad signature " + found);
  }
  return bytes.data();
}

void check_output(MutableByteSpan out, std::size_t size) {
  if (out.size() < size) {
    throw Error(ErrorCode::kInvalidArgument, "record encode buffer too small");
  }
}

}  // namespace

void LocalFileHeader::encode(MutableByteSpan out) const {
  check_output(out, kSize);
  std::uint8_t* p = out.data();
  store_le32(p, kSignature);
  store_le16(p + 4, version_needed);
  store_le16(p + 6, flags);
  store_le16(p + 8, method);
  store_le16(p + 10, modified_time);
  store_le16(p + 12, modified_date);
  store_le32(p + 14, crc32);
  store_le32(p + 18, compressed_size);
  store_le32(p + 22, uncompressed_size);
  store_le16(p + 26, name_length);
  store_le16(p + 28, extra_length);
}

LocalFileHeader LocalFileHeader::decode(FileBytes file, std::uint64_t offset) {
  const std::uint8_t* p = record_at(file, offset, kSize, kSignature, "local file header");
  LocalFileHeader h;
  h.version_needed = load_le16(p + 4);
  h.flags = load_le16(p + 6);
  h.method = load_le16(p + 8);
  h.modified_time = load_le16(p + 10);
  h.modified_date = load_le16(p + 12);
  h.crc32 = load_le32(p + 14);
  h.compressed_size = load_le32(p + 18);
  h.uncompressed_size = load_le32(p + 22);
  h.name_length = load_le16(p + 26);
  h.extra_length = load_le16(p + 28);
  return h;
}

void CentralDirectoryHeader::encode(MutableByteSpan out) const {
  check_output(out, kSize);
  std::uint8_t* p = out.data();
  store_le32(p, kSignature);
  store_le16(p + 4, version_made_by);
  store_le16(p + 6, version_needed);
  store_le16(p + 8, flags);
  store_le16(p + 10, method);
  store_le16(p + 12, modified_time);
  store_le16(p + 14, modified_date);
  store_le32(p + 16, crc32);
  store_le32(p + 20, compressed_size);
  store_le32(p + 24, uncompressed_size);
  store_le16(p + 28, name_length);
  store_le16(p + 30, extra_length);
  store_le16(p + 32, comment_length);
  store_le16(p + 34, disk_number_start);
  store_le16(p + 36, internal_attributes);
  store_le32(p + 38, external_attributes);
  store_le32(p + 42, local_header_offset);
}

CentralDirectoryHeader CentralDirectoryHeader::decode(FileBytes file, std::uint64_t offset) {
  const std::uint8_t* p = record_at(file, offset, kSize, kSignature, "central directory header");
  CentralDirectoryHeader h;
  h.version_made_by = load_le16(p + 4);
  h.version_needed = load_le16(p + 6);
  h.flags = load_le16(p + 8);
  h.method = load_le16(p + 10);
  h.modified_time = load_le16(p + 12);
  h.modified_date = load_le16(p + 14);
  h.crc32 = load_le32(p + 16);
  h.compressed_size = load_le32(p + 20);
  h.uncompressed_size = load_le32(p + 24);
  h.name_length = load_le16(p + 28);
  h.extra_length = load_le16(p + 30);
  h.comment_length = load_le16(p + 32);
  h.disk_number_start = load_le16(p + 34);
  h.internal_attributes = load_le16(p + 36);
  h.external_attributes = load_le32(p + 38);
  h.local_header_offset = load_le32(p + 42);
  return h;
}

void EndOfCentralDirectory::encode(MutableByteSpan out) const {
  check_output(out, kSize);
  std::uint8_t* p = out.data();
  store_le32(p, kSignature);
  store_le16(p + 4, disk_number);
  store_le16(p + 6, central_directory_disk);
  store_le16(p + 8, entries_on_disk);
  store_le16(p + 10, entries_total);
  store_le32(p + 12, central_directory_size);
  store_le32(p + 16, central_directory_offset);
  store_le16(p + 20, comment_length);
}

EndOfCentralDirectory EndOfCentralDirectory::decode(FileBytes file, std::uint64_t offset) {
  const std::uint8_t* p =
      record_at(file, offset, kSize, kSignature, "end of central directory record");
  EndOfCentralDirectory r;
  r.disk_number = load_le16(p + 4);
  r.central_directory_disk = load_le16(p + 6);
  r.entries_on_disk = load_le16(p + 8);
  r.entries_total = load_le16(p + 10);
  r.central_directory_size = load_le32(p + 12);
  r.central_directory_offset = load_le32(p + 16);
  r.comment_length = load_le16(p + 20);
  return r;
}

void Zip64EndOfCentralDirectory::encode(MutableByteSpan out) const {
  check_output(out, kSize);
  std::uint8_t* p = out.data();
  store_le32(p, kSignature);
  store_le64(p + 4, record_size);
  store_le16(p + 12, version_made_by);
  store_le16(p + 14, version_needed);
  store_le32(p + 16, disk_number);
  store_le32(p + 20, central_directory_disk);
  store_le64(p + 24, entries_on_disk);
  store_le64(p + 32, entries_total);
  store_le64(p + 40, central_directory_size);
  store_le64(p + 48, central_directory_offset);
}

Zip64EndOfCentralDirectory Zip64EndOfCentralDirectory::decode(FileBytes file,
                                                              std::uint64_t offset) {
  const std::uint8_t* p =
      record_at(file, offset, kSize, kSignature, "zip64 end of central directory record");
  Zip64EndOfCentralDirectory r;
  r.record_size = load_le64(p + 4);
  r.version_made_by = load_le16(p + 12);
  r.version_needed = load_le16(p + 14);
  r.disk_number = load_le32(p + 16);
  r.central_directory_disk = load_le32(p + 20);
  r.entries_on_disk = load_le64(p + 24);
  r.entries_total = load_le64(p + 32);
  r.central_directory_size = load_le64(p + 40);
  r.central_directory_offset = load_le64(p + 48);
  return r;
}

void Zip64EndLocator::encode(MutableByteSpan out) const {
  check_output(out, kSize);
  std::uint8_t* p = out.data();
  store_le32(p, kSignature);
  store_le32(p + 4, zip64_end_disk);
  store_le64(p + 8, zip64_end_offset);
  store_le32(p + 16, total_disks);
}

Zip64EndLocator Zip64EndLocator::decode(FileBytes file, std::uint64_t offset) {
  const std::uint8_t* p =
      record_at(file, offset, kSize, kSignature, "zip64 end of central directory locator");
  Zip64EndLocator r;
  r.zip64_end_disk = load_le32(p + 4);
  r.zip64_end_offset = load_le64(p + 8);
  r.total_disks = load_le32(p + 16);
  return r;
}

std::vector<ExtraRecord> split_extra_field(ByteSpan extra, std::uint64_t offset,
                                           std::string_view what) {
  std::vector<ExtraRecord> records;
  std::size_t position = 0;
  while (position < extra.size()) {
    // Some writers pad the extra field with fewer than 4 zero bytes; tolerate only that.
    if (extra.size() - position < kExtraHeaderSize) {
      for (std::size_t i = position; i < extra.size(); ++i) {
        if (extra[i] != 0) {
          throw Error(ErrorCode::kCorrupt, std::string(what) +
                                               ": truncated extra field record at offset " +
                                               std::to_string(offset + position));
        }
      }
      break;
    }
    const std::uint16_t id = load_le16(extra.data() + position);
    const std::uint16_t size = load_le16(extra.data() + position + 2);
    // The message is built only on failure: every entry of every archive passes through here.
    if (!fits(position + kExtraHeaderSize, size, extra.size())) {
      char id_text[8];
      std::snprintf(id_text, sizeof id_text, "0x%04x", id);
      checked_subspan(extra, position + kExtraHeaderSize, size,
                      std::string(what) + ": extra field record " + id_text + " at offset " +
                          std::to_string(offset + position));
    }
    records.push_back({id, extra.subspan(position + kExtraHeaderSize, size), offset + position});
    position += kExtraHeaderSize + size;
  }
  return records;
}

std::size_t Zip64Extra::encoded_size() const noexcept {
  std::size_t size = kExtraHeaderSize;
  if (uncompressed_size) size += 8;
  if (compressed_size) size += 8;
  if (local_header_offset) size += 8;
  if (disk_number_start) size += 4;
  return size;
}

void Zip64Extra::append_to(std::vector<std::uint8_t>& out) const {
  const std::size_t start = out.size();
  out.resize(start + encoded_size());
  std::uint8_t* p = out.data() + start;
  store_le16(p, kExtraZip64);
  store_le16(p + 2, static_cast<std::uint16_t>(encoded_size() - kExtraHeaderSize));
  p += kExtraHeaderSize;
  for (const auto& field : {uncompressed_size, compressed_size, local_header_offset}) {
    if (field) {
      store_le64(p, *field);
      p += 8;
    }
  }
  if (disk_number_start) store_le32(p, *disk_number_start);
}

Zip64Extra Zip64Extra::decode(ByteSpan data, bool need_uncompressed, bool need_compressed,
                              bool need_offset, bool need_disk, std::string_view what) {
  Zip64Extra result;
  std::size_t position = 0;
  const auto take = [&](std::size_t width, const char* field) -> const std::uint8_t* {
    if (!fits(position, width, data.size())) {
      throw Error(ErrorCode::kCorrupt, std::string(what) + ": zip64 extra field too short for " +
                                           field + " (" + std::to_string(data.size()) + " bytes)");
    }
    const std::uint8_t* p = data.data() + position;
    position += width;
    return p;
  };
  if (need_uncompressed) result.uncompressed_size = load_le64(take(8, "the uncompressed size"));
  if (need_compressed) result.compressed_size = load_le64(take(8, "the compressed size"));
  if (need_offset) result.local_header_offset = load_le64(take(8, "the local header offset"));
  if (need_disk) result.disk_number_start = load_le32(take(4, "the disk number"));
  return result;
}

void append_alignment_record(std::vector<std::uint8_t>& out, std::uint16_t alignment_field,
                             std::size_t total_size) {
  if (total_size < kMinAlignmentRecordSize || total_size - kExtraHeaderSize > 0xFFFF) {
    throw Error(ErrorCode::kInvalidArgument,
                "alignment record size " + std::to_string(total_size) + " out of range");
  }
  const std::size_t start = out.size();
  out.resize(start + total_size, 0);
  std::uint8_t* p = out.data() + start;
  store_le16(p, kExtraAlignment);
  store_le16(p + 2, static_cast<std::uint16_t>(total_size - kExtraHeaderSize));
  store_le16(p + 4, alignment_field);
}

}  // namespace onnxzip::zip
