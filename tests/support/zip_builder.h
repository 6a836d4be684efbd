// Hand-built ZIP archives for reader tests, with exact control over every record: stored or
// deflated entries at chosen offsets, alignment padding, gaps, data descriptors (each layout),
// zip64 extra fields and end records, extra records and comments. Tests corrupt the result by
// patching fields at the offsets the layout reports. Test-only; not a ZIP writer.
#ifndef ONNXZIP_TESTS_SUPPORT_ZIP_BUILDER_H_
#define ONNXZIP_TESTS_SUPPORT_ZIP_BUILDER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "onnxzip/bytes.h"
#include "zip_records.h"

namespace onnxzip::testing {

// Deterministic payloads (the interop archive script in tests/data computes the same ones).
std::vector<std::uint8_t> pattern(std::size_t size, std::uint32_t seed);
std::vector<std::uint8_t> text_lines(std::size_t count);
// Raw deflate (no zlib header) of `data`, compressed with libdeflate.
std::vector<std::uint8_t> deflate_raw(ByteSpan data, int level = 6);

// Field offsets inside the fixed part of each record (APPNOTE 4.3.7, 4.3.12, 4.3.16).
namespace field {
inline constexpr std::size_t kLocalFlags = 6;
inline constexpr std::size_t kLocalMethod = 8;
inline constexpr std::size_t kLocalTime = 10;
inline constexpr std::size_t kLocalCrc = 14;
inline constexpr std::size_t kLocalCompressedSize = 18;
inline constexpr std::size_t kLocalSize = 22;
inline constexpr std::size_t kLocalNameLength = 26;
inline constexpr std::size_t kLocalExtraLength = 28;
inline constexpr std::size_t kCentralFlags = 8;
inline constexpr std::size_t kCentralMethod = 10;
inline constexpr std::size_t kCentralCrc = 16;
inline constexpr std::size_t kCentralCompressedSize = 20;
inline constexpr std::size_t kCentralSize = 24;
inline constexpr std::size_t kCentralNameLength = 28;
inline constexpr std::size_t kCentralExtraLength = 30;
inline constexpr std::size_t kCentralDisk = 34;
inline constexpr std::size_t kCentralLocalOffset = 42;
inline constexpr std::size_t kEndDisk = 4;
inline constexpr std::size_t kEndDirectoryDisk = 6;
inline constexpr std::size_t kEndEntriesOnDisk = 8;
inline constexpr std::size_t kEndEntries = 10;
inline constexpr std::size_t kEndDirectorySize = 12;
inline constexpr std::size_t kEndDirectoryOffset = 16;
inline constexpr std::size_t kEndCommentLength = 20;
inline constexpr std::size_t kEnd64EntriesOnDisk = 24;
inline constexpr std::size_t kEnd64Entries = 32;
inline constexpr std::size_t kEnd64DirectorySize = 40;
inline constexpr std::size_t kEnd64DirectoryOffset = 48;
inline constexpr std::size_t kLocatorTotalDisks = 16;
}  // namespace field

struct TestEntry {
  std::string name;
  std::vector<std::uint8_t> data;             // Uncompressed.
  std::uint16_t method = zip::kMethodStored;  // kMethodDeflated compresses `data`.
  std::uint16_t flags = zip::kFlagUtf8;
  std::uint64_t alignment = 0;   // Non-zero: a 0xD935 record aligns the data to this.
  std::uint64_t gap_before = 0;  // Zero bytes written before the local header.
  bool data_descriptor = false;  // Flag bit 3, zeros in the local header, descriptor after data.
  bool descriptor_signature = true;
  bool descriptor_wide = false;  // 8-byte sizes in the descriptor.
  bool zip64_sizes = false;      // Sentinel sizes in both headers, real ones in zip64 extras.
  bool zip64_offset = false;     // Sentinel local header offset in the central header.
  std::vector<std::uint8_t> local_extra;    // Raw records appended to the local extra field.
  std::vector<std::uint8_t> central_extra;  // Raw records appended to the central extra field.
  std::string comment;
};

struct ZipBuildOptions {
  bool zip64_end = false;                  // Write a zip64 end record and locator.
  bool sentinel_end = false;               // With zip64_end: sentinels in every end record field.
  std::string comment;                     // Archive comment.
  std::vector<std::size_t> central_order;  // Order of central records (default: as added).
};

struct EntryLayout {
  std::uint64_t local_header_offset = 0;
  std::uint64_t data_offset = 0;
  std::uint64_t compressed_size = 0;
  std::uint64_t end_offset = 0;  // Past the data and any descriptor.
  std::uint64_t central_header_offset = 0;
  std::uint32_t crc32 = 0;
};

struct BuiltZip {
  std::vector<std::uint8_t> bytes;
  std::vector<EntryLayout> entries;  // In the order added.
  std::uint64_t central_directory_offset = 0;
  std::uint64_t central_directory_size = 0;
  std::uint64_t zip64_end_offset = 0;  // Only with zip64_end.
  std::uint64_t locator_offset = 0;    // Only with zip64_end.
  std::uint64_t end_offset = 0;

  ByteSpan span() const noexcept { return bytes; }
  void put16(std::uint64_t offset, std::uint16_t value);
  void put32(std::uint64_t offset, std::uint32_t value);
  void put64(std::uint64_t offset, std::uint64_t value);
  std::uint16_t get16(std::uint64_t offset) const;
  std::uint32_t get32(std::uint64_t offset) const;
};

BuiltZip build_zip(const std::vector<TestEntry>& entries, const ZipBuildOptions& options = {});

// A raw extra field record with the given id and data.
std::vector<std::uint8_t> extra_record(std::uint16_t id, const std::vector<std::uint8_t>& data);

}  // namespace onnxzip::testing

#endif  // ONNXZIP_TESTS_SUPPORT_ZIP_BUILDER_H_
