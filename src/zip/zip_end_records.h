// Private to the zip layer: the end of a ZIP archive -- the end of central directory record, found
// by its comment reaching the end of the file, and the zip64 end record and locator before it
// (APPNOTE 4.3.14 to 4.3.16) -- which locate its central directory.
#ifndef ONNXZIP_SRC_ZIP_END_RECORDS_H_
#define ONNXZIP_SRC_ZIP_END_RECORDS_H_

#include <cstdint>
#include <optional>

#include "onnxzip/bytes.h"
#include "onnxzip/internal/zip_reader.h"
#include "zip_held_bytes.h"
#include "zip_parse.h"

namespace onnxzip::zip {

// What the end records say, the zip64 values in place of the sentinels.
struct ArchiveEnd {
  std::uint64_t size = 0;  // The archive is the source's first `size` bytes.
  std::uint64_t end_record_offset = 0;
  // Where the end records start: the zip64 end record's offset when there is one, else the end
  // record's.
  std::uint64_t tail_offset = 0;
  bool zip64 = false;
  ByteSpan comment;  // The archive comment, held by the HeldBytes.
  std::uint64_t entries = 0;
  std::uint64_t directory_size = 0;
  std::uint64_t directory_offset = 0;
  std::optional<ZipTrailer> trailer;  // What `trailer` found after the archive.
};

// Finds and checks the end records of the archive `held` holds the bytes of (holding what it
// reads), against each other, not yet against the central directory; `trailer`, when given, is
// asked what follows an archive whose end record does not end the source. Errors name `places`.
ArchiveEnd read_archive_end(HeldBytes& held, const ZipPlaces& places,
                            const ZipTrailerResolver& trailer);

}  // namespace onnxzip::zip

#endif  // ONNXZIP_SRC_ZIP_END_RECORDS_H_
