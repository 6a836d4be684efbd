// The fixed-size records of the ZIP format (PKWARE APPNOTE 6.3.x, sections 4.3 and 4.5), one
// struct each, with one encode and one decode function. Private to the library: the zip reader
// and writer build on it; nothing here knows ONNX.
//
// decode() takes the file's bytes (all of them, or those from some offset on: FileBytes) and an
// offset, checks the bounds and the signature, and throws Error(kCorrupt) naming the record and
// offset.
// encode() writes exactly kSize bytes (the fixed part; names and extra fields follow it).
#ifndef ONNXZIP_SRC_ZIP_RECORDS_H_
#define ONNXZIP_SRC_ZIP_RECORDS_H_

#include <concepts>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "onnxzip/bytes.h"

namespace onnxzip::zip {

// Values written into 32-bit (16-bit) fields when the real one lives in the zip64 records.
inline constexpr std::uint32_t kSentinel32 = 0xFFFFFFFFu;
inline constexpr std::uint16_t kSentinel16 = 0xFFFFu;

// General purpose flag bits (APPNOTE 4.4.4).
inline constexpr std::uint16_t kFlagEncrypted = 1u << 0;
inline constexpr std::uint16_t kFlagDataDescriptor = 1u << 3;
inline constexpr std::uint16_t kFlagStrongEncryption = 1u << 6;
inline constexpr std::uint16_t kFlagUtf8 = 1u << 11;
inline constexpr std::uint16_t kFlagMaskedHeaders = 1u << 13;

// Compression methods (APPNOTE 4.4.5).
inline constexpr std::uint16_t kMethodStored = 0;
inline constexpr std::uint16_t kMethodDeflated = 8;
inline constexpr std::uint16_t kMethodAesEncrypted = 99;  // WinZip AE-x marker.

// "Version needed to extract" (APPNOTE 4.4.3): 2.0 for plain stored/deflated, 4.5 for zip64.
inline constexpr std::uint16_t kVersionDefault = 20;
inline constexpr std::uint16_t kVersionZip64 = 45;
// "Version made by": host 3 (UNIX) in the high byte, so external attributes carry a mode.
inline constexpr std::uint16_t kVersionMadeByUnix = (3u << 8) | kVersionZip64;

// Extra field header ids.
inline constexpr std::uint16_t kExtraZip64 = 0x0001;
inline constexpr std::uint16_t kExtraAlignment = 0xD935;   // onnxz and Android zipalign padding.
inline constexpr std::size_t kExtraHeaderSize = 4;         // id u16 + data size u16.
inline constexpr std::size_t kMinAlignmentRecordSize = 6;  // header + u16 alignment.

// Bytes of a file from file offset `start` on, which decode() reads a record from: its messages
// name offsets in the file. Bytes of the whole file (a span, a vector) convert to it (start 0).
struct FileBytes {
  FileBytes(ByteSpan file_bytes, std::uint64_t file_start) noexcept
      : bytes(file_bytes), start(file_start) {}
  template <typename Bytes>
  requires std::convertible_to<const Bytes&, ByteSpan> FileBytes(const Bytes& whole_file)
  noexcept  // NOLINT: implicit on purpose.
      : bytes(whole_file), start(0) {}
  ByteSpan bytes;
  std::uint64_t start;
};

struct LocalFileHeader {
  static constexpr std::uint32_t kSignature = 0x04034b50;
  static constexpr std::size_t kSize = 30;
  std::uint16_t version_needed = kVersionDefault;
  std::uint16_t flags = 0;
  std::uint16_t method = kMethodStored;
  std::uint16_t modified_time = 0;
  std::uint16_t modified_date = 0;
  std::uint32_t crc32 = 0;
  std::uint32_t compressed_size = 0;
  std::uint32_t uncompressed_size = 0;
  std::uint16_t name_length = 0;
  std::uint16_t extra_length = 0;

  void encode(MutableByteSpan out) const;
  static LocalFileHeader decode(FileBytes file, std::uint64_t offset);
};

struct CentralDirectoryHeader {
  static constexpr std::uint32_t kSignature = 0x02014b50;
  static constexpr std::size_t kSize = 46;
  std::uint16_t version_made_by = kVersionMadeByUnix;
  std::uint16_t version_needed = kVersionDefault;
  std::uint16_t flags = 0;
  std::uint16_t method = kMethodStored;
  std::uint16_t modified_time = 0;
  std::uint16_t modified_date = 0;
  std::uint32_t crc32 = 0;
  std::uint32_t compressed_size = 0;
  std::uint32_t uncompressed_size = 0;
  std::uint16_t name_length = 0;
  std::uint16_t extra_length = 0;
  std::uint16_t comment_length = 0;
  std::uint16_t disk_number_start = 0;
  std::uint16_t internal_attributes = 0;
  std::uint32_t external_attributes = 0;
  std::uint32_t local_header_offset = 0;

  void encode(MutableByteSpan out) const;
  static CentralDirectoryHeader decode(FileBytes file, std::uint64_t offset);
};

struct EndOfCentralDirectory {
  static constexpr std::uint32_t kSignature = 0x06054b50;
  static constexpr std::size_t kSize = 22;
  std::uint16_t disk_number = 0;
  std::uint16_t central_directory_disk = 0;
  std::uint16_t entries_on_disk = 0;
  std::uint16_t entries_total = 0;
  std::uint32_t central_directory_size = 0;
  std::uint32_t central_directory_offset = 0;
  std::uint16_t comment_length = 0;

  void encode(MutableByteSpan out) const;
  static EndOfCentralDirectory decode(FileBytes file, std::uint64_t offset);
};

struct Zip64EndOfCentralDirectory {
  static constexpr std::uint32_t kSignature = 0x06064b50;
  static constexpr std::size_t kSize = 56;
  // Size of the rest of the record: excludes the signature and this field (APPNOTE 4.3.14.1).
  static constexpr std::uint64_t kMinRecordSize = kSize - 12;
  std::uint64_t record_size = kMinRecordSize;
  std::uint16_t version_made_by = kVersionMadeByUnix;
  std::uint16_t version_needed = kVersionZip64;
  std::uint32_t disk_number = 0;
  std::uint32_t central_directory_disk = 0;
  std::uint64_t entries_on_disk = 0;
  std::uint64_t entries_total = 0;
  std::uint64_t central_directory_size = 0;
  std::uint64_t central_directory_offset = 0;

  void encode(MutableByteSpan out) const;
  static Zip64EndOfCentralDirectory decode(FileBytes file, std::uint64_t offset);
};

struct Zip64EndLocator {
  static constexpr std::uint32_t kSignature = 0x07064b50;
  static constexpr std::size_t kSize = 20;
  std::uint32_t zip64_end_disk = 0;
  std::uint64_t zip64_end_offset = 0;
  std::uint32_t total_disks = 1;

  void encode(MutableByteSpan out) const;
  static Zip64EndLocator decode(FileBytes file, std::uint64_t offset);
};

// The optional record after an entry's data when flag bit 3 is set (APPNOTE 4.3.9). Its
// signature is optional in the wild, and its sizes are 8 bytes wide for zip64 entries.
struct DataDescriptor {
  static constexpr std::uint32_t kSignature = 0x08074b50;
  std::uint32_t crc32 = 0;
  std::uint64_t compressed_size = 0;
  std::uint64_t uncompressed_size = 0;
  std::size_t encoded_size = 0;  // Bytes the record occupied in the file (12 to 24).
};

// One record of an extra field: header id and its data (borrowed from the file).
struct ExtraRecord {
  std::uint16_t id = 0;
  ByteSpan data;
  std::uint64_t offset = 0;  // File offset of the record's header, for error messages.
};

// Splits an extra field into records. `offset` is the extra field's file offset. Throws
// Error(kCorrupt) when a record's declared size runs past the end of the field; `what` names the
// entry for the message.
std::vector<ExtraRecord> split_extra_field(ByteSpan extra, std::uint64_t offset,
                                           std::string_view what);

// The zip64 extended information extra field (APPNOTE 4.5.3): only the fields whose 32-bit
// counterpart holds the sentinel are present, always in this order.
struct Zip64Extra {
  std::optional<std::uint64_t> uncompressed_size;
  std::optional<std::uint64_t> compressed_size;
  std::optional<std::uint64_t> local_header_offset;
  std::optional<std::uint32_t> disk_number_start;

  std::size_t encoded_size() const noexcept;  // Including the 4-byte record header.
  void append_to(std::vector<std::uint8_t>& out) const;
  // Reads the fields flagged `need_*` from `data` in APPNOTE order. Throws Error(kCorrupt)
  // naming `what` when the record is too short for them.
  static Zip64Extra decode(ByteSpan data, bool need_uncompressed, bool need_compressed,
                           bool need_offset, bool need_disk, std::string_view what);
};

// Appends an alignment padding record of exactly `total_size` bytes (>= 6): id 0xD935, data
// size, the u16 alignment, then zeros.
void append_alignment_record(std::vector<std::uint8_t>& out, std::uint16_t alignment_field,
                             std::size_t total_size);

}  // namespace onnxzip::zip

#endif  // ONNXZIP_SRC_ZIP_RECORDS_H_
