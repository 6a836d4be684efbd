#include "crc32.h"

#include <isa-l/crc.h>

#include <algorithm>

namespace onnxzip {

std::uint32_t crc32(ByteSpan bytes, std::uint32_t previous) noexcept {
  // ISA-L takes a 64-bit length; feeding at most 1 GiB per call keeps every platform's length
  // type happy and costs nothing measurable.
  constexpr std::size_t kPiece = std::size_t{1} << 30;
  std::uint32_t crc = previous;
  const std::uint8_t* data = bytes.data();
  std::size_t left = bytes.size();
  while (left > 0) {
    const std::size_t n = std::min(left, kPiece);
    crc = crc32_gzip_refl(crc, data, n);
    data += n;
    left -= n;
  }
  return crc;
}

}  // namespace onnxzip
