// CRC-32 as ZIP uses it (ISO-HDLC: reflected polynomial 0xEDB88320, initial and final XOR
// 0xFFFFFFFF), computed with ISA-L at memory speed. Chainable: crc32(b, crc32(a)) equals
// crc32(a followed by b). Internal to the library, not installed: any layer may use it.
#ifndef ONNXZIP_CRC32_H_
#define ONNXZIP_CRC32_H_

#include <cstdint>

#include "onnxzip/bytes.h"

namespace onnxzip {

std::uint32_t crc32(ByteSpan bytes, std::uint32_t previous = 0) noexcept;

}  // namespace onnxzip

#endif  // ONNXZIP_CRC32_H_
