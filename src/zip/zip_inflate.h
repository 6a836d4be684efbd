// Private to the zip layer: inflating deflated entries -- whole into owned memory (libdeflate),
// or in pieces (zlib) into a spill file or straight to a consumer -- after the limits that refuse
// zip bombs (zip_reader.h). Each stream must produce exactly the entry's size and end exactly at
// the end of its compressed bytes; errors name `place`.
#ifndef ONNXZIP_SRC_ZIP_INFLATE_H_
#define ONNXZIP_SRC_ZIP_INFLATE_H_

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "onnxzip/bytes.h"
#include "onnxzip/error.h"
#include "onnxzip/internal/zip_reader.h"

namespace onnxzip::zip {

// Error(kLimitExceeded) when inflating `e` would pass max_inflated_size or
// max_compression_ratio: checked before anything is read or allocated for it.
void check_inflate_limits(const ZipEntry& e, const ZipReaderOptions& options,
                          const ErrorContext& place);

// The inflating functions take `e` located (ZipEntry::local set): their messages name where its
// data lies.

// The entry's bytes, inflated from `raw` into owned memory.
TensorBytes inflate_whole(ByteSpan raw, const ZipEntry& e, const ErrorContext& place);

// Inflates `raw` with zlib, handing the output to `consumer` in pieces of at most
// ZipDirectory::kStreamPieceBytes: memory stays bounded whatever the entry's size (libdeflate,
// faster, inflates only whole buffers); no piece past e.size bytes is handed on. Returns the
// CRC-32 of the output.
std::uint32_t inflate_in_pieces(ByteSpan raw, const ZipEntry& e, const ErrorContext& place,
                                const std::function<void(ByteSpan)>& consumer);

// Inflates `raw` in pieces into an unlinked temporary file in `directory` ($TMPDIR, or /tmp,
// when empty), hands its CRC-32 to `check_crc`, then maps it: the bytes are borrowed with the
// mapping as owner token. Error(kIo) when the file cannot be made or written.
TensorBytes inflate_to_spill_file(ByteSpan raw, const ZipEntry& e, const ErrorContext& place,
                                  std::filesystem::path directory,
                                  const std::function<void(std::uint32_t)>& check_crc);

}  // namespace onnxzip::zip

#endif  // ONNXZIP_SRC_ZIP_INFLATE_H_
