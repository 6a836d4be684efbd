// Private to the zip layer: the central directory of a ZIP archive -- its records read into
// entries, their names checked, the entries put in file order (APPNOTE 4.3.12, 4.4, 4.5).
#ifndef ONNXZIP_SRC_ZIP_CENTRAL_DIRECTORY_H_
#define ONNXZIP_SRC_ZIP_CENTRAL_DIRECTORY_H_

#include <cstddef>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "onnxzip/internal/zip_reader.h"
#include "zip_end_records.h"
#include "zip_held_bytes.h"
#include "zip_parse.h"

namespace onnxzip::zip {

struct CentralDirectory {
  // In file order (ascending local header offset), their local header fields not yet set.
  std::vector<ZipEntry> entries;
  // Name -> index in `entries`. The keys view the names held by the HeldBytes.
  std::unordered_map<std::string_view, std::size_t> by_name;
  std::vector<ZipFinding> findings;
  UnknownExtras unknown_extras;  // By central_index.
};

// Reads the central directory `end` locates, holding its bytes in `held` -- and, for a source
// that reads ranges, in the same read the bytes of the entry it lists last, when its record
// tells where they start (see ZipReaderOptions::tail_read_size). Errors name `places`.
CentralDirectory read_central_directory(HeldBytes& held, const ArchiveEnd& end,
                                        const ZipPlaces& places, const ZipReaderOptions& options);

}  // namespace onnxzip::zip

#endif  // ONNXZIP_SRC_ZIP_CENTRAL_DIRECTORY_H_
