// Replacing the last entry of a ZIP file in place, the ZIP half: where the new entry starts, and
// the bytes of the new tail -- the entry, the central directory with every other record as it
// is, the end records and the archive comment -- laid out for a position of the file. The model
// entry of an .onnxz archive is last (spec §2.4) so that it can change without moving a payload
// byte; how the tail is written so that the file holds the old archive or the new one at every
// instant is the archive layer's (src/archive/tail_edit.h, spec §9.6). Private to the library.
#ifndef ONNXZIP_SRC_ZIP_TAIL_H_
#define ONNXZIP_SRC_ZIP_TAIL_H_

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "onnxzip/bytes.h"
#include "onnxzip/internal/zip_reader.h"

namespace onnxzip::zip {

// The new last entries and everything after them, laid out for one position of the file.
struct EntryTail {
  struct Part {
    std::vector<std::uint8_t> head;  // The gap (if any), the local header.
    ByteSpan data;
  };
  std::vector<Part> entries;              // In file order, the replaced last entry's last.
  std::vector<std::uint8_t> rest;         // Central directory, end records, archive comment.
  std::uint64_t local_header_offset = 0;  // Of the last entry.
  std::uint64_t data_offset = 0;          // Of the last entry.

  std::uint64_t size() const noexcept {
    std::uint64_t total = rest.size();
    for (const Part& part : entries) total += part.head.size() + part.data.size();
    return total;
  }
};

// An entry of a new tail: a stored entry named `name` holding `data` (CRC-32 `crc`), borrowed.
struct TailEntry {
  std::string_view name;
  ByteSpan data;
  std::uint32_t crc = 0;
};

// Where new entries replacing those from index `first` (file order) to the last start -- where
// the entry before them ends (a gap an interrupted edit left there goes too) -- once the archive
// `zip` read from a file of `file_size` bytes is found fit for it: Error(kInvalidArgument) when
// those entries are not the last ones in the central directory too, in file order,
// Error(kBadState) when the file is shorter than the archive read. The entry before them is
// located (ZipDirectory::locate: one read unless the open located it), with its Errors. Writes
// nothing: a caller with work to do before it knows the new entries calls it first, not to do
// that work for an archive that cannot take them, and keeps the result.
std::uint64_t entries_start(const ZipDirectory& zip, std::size_t first, std::uint64_t file_size);

// The archive's last entry replaced by a stored entry of the same name holding `data` (whose
// CRC-32 is `crc`), laid out as ZipWriter lays out entries (zip_layout.h) from `position` on, its
// data aligned to `alignment`. Every other entry keeps its central record byte for byte, and the
// archive keeps its comment. `data` is borrowed by the result.
EntryTail lay_out_tail(const ZipDirectory& zip, std::uint64_t position, ByteSpan data,
                       std::uint32_t crc, std::uint32_t alignment);
// The entries from index `first` on (see entries_start) replaced by `entries`, the same way:
// the central records of the entries before `first` are kept byte for byte.
EntryTail lay_out_tail(const ZipDirectory& zip, std::size_t first, std::uint64_t position,
                       std::span<const TailEntry> entries, std::uint32_t alignment);

// The alignment A the archive declares (spec §3.6): the value of the first 0xD935 record of a
// local header, when it is a power of two in [64, 65536]; else 64. The headers are those the
// reader located, in file order, then those of the last four entries, from the last back (read
// now, for a directory).
std::uint32_t declared_alignment(const ZipDirectory& zip);

}  // namespace onnxzip::zip

#endif  // ONNXZIP_SRC_ZIP_TAIL_H_
