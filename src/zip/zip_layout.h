// Where an entry of the .onnxz ZIP profile goes and the bytes of its headers: alignment padding
// (spec §4.2, §4.4), zip64 only where a value needs it (spec §5), the fixed field values of spec
// §3.1, and the end records. Private to the zip layer: ZipWriter writes whole archives with it,
// zip_tail.cpp lays out the new last entry of an archive edited in place with it, so both lay
// out bytes by the same rules.
#ifndef ONNXZIP_SRC_ZIP_LAYOUT_H_
#define ONNXZIP_SRC_ZIP_LAYOUT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "zip_writer.h"

namespace onnxzip::zip {

// Zero bytes left before a local header whose padding would not fit in the extra field
// (spec §4.4: alignment 65536 with a natural padding of 1 to 5 bytes).
inline constexpr std::uint64_t kGapStep = 64;

// Why `alignment` cannot be an archive's alignment (a power of two in [64, 65536], spec §4.1),
// or "" when it can.
std::string alignment_problem(std::uint32_t alignment);

// Whether an entry of `size` bytes whose bytes (gap included) start at `position` ends within the
// largest file the system allows, with room for any header and padding: checked before an entry
// is laid out, so that plan_entry's offset arithmetic cannot overflow.
bool entry_fits_file(std::uint64_t position, std::uint64_t size) noexcept;

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

// The layout of an entry of `size` bytes whose bytes (gap included) start at `position`, its data
// aligned to `alignment` (a power of two in [64, 65536]). The caller keeps every offset below
// 2^63 minus a header and an alignment.
EntryLayout plan_entry(std::uint64_t position, std::size_t name_length, std::uint64_t size,
                       std::uint32_t alignment);

// The local header, name, [zip64 extra], [alignment record] of an entry (not its gap).
std::vector<std::uint8_t> encode_local_header(const EntryLayout& layout, std::string_view name,
                                              std::uint32_t crc, std::uint32_t alignment);

// What a WrittenEntry says about an entry laid out by `layout`.
WrittenEntry written_entry(const EntryLayout& layout, std::string_view name, std::uint32_t crc);

// Appends the central directory record of `entry` (with its zip64 extra when needed).
void append_central_record(std::vector<std::uint8_t>& out, const WrittenEntry& entry);

// Appends the end records of a central directory of `count` records at `offset`, `size` bytes
// long: the zip64 end record and locator when a value needs them (spec §5.2), then the end
// record with a comment of `comment_length` bytes (the caller appends the comment).
void append_end_records(std::vector<std::uint8_t>& out, std::uint64_t count, std::uint64_t offset,
                        std::uint64_t size, std::uint16_t comment_length = 0);

}  // namespace onnxzip::zip

#endif  // ONNXZIP_SRC_ZIP_LAYOUT_H_
