// Private to the zip layer: inflating a deflated entry in pieces (zip_inflate.cpp), for the
// reader's stream() and verify().
#ifndef ONNXZIP_SRC_ZIP_INFLATE_H_
#define ONNXZIP_SRC_ZIP_INFLATE_H_

#include <cstdint>
#include <functional>
#include <string>

#include "onnxzip/bytes.h"
#include "onnxzip/zip_reader.h"

namespace onnxzip::zip {

// Inflates the entry's deflate stream `raw` with zlib, handing the output to `consumer` in
// pieces of at most ZipReader::kStreamPieceBytes: memory stays bounded whatever the entry's size
// (libdeflate, faster, inflates only whole buffers). The stream must produce exactly e.size
// bytes -- no piece past them is handed on -- and end exactly at the end of `raw`. Returns the
// CRC-32 of the output. Errors name `place`.
std::uint32_t inflate_in_pieces(ByteSpan raw, const ZipEntry& e, const std::string& place,
                                const std::function<void(ByteSpan)>& consumer);

}  // namespace onnxzip::zip

#endif  // ONNXZIP_SRC_ZIP_INFLATE_H_
