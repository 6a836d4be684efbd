#include "crc32.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string_view>
#include <vector>

namespace onnxzip {
namespace {

ByteSpan as_bytes(std::string_view s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

// Bit-at-a-time reference, straight from the polynomial, to check ISA-L against.
std::uint32_t reference_crc32(ByteSpan bytes) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (const std::uint8_t byte : bytes) {
    crc ^= byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

TEST(Crc32, MatchesTheStandardCheckValue) {
  EXPECT_EQ(crc32(as_bytes("123456789")), 0xCBF43926u);
  EXPECT_EQ(crc32(ByteSpan()), 0u);
}

TEST(Crc32, MatchesTheReferenceOverManySizesAndChains) {
  std::vector<std::uint8_t> data(70000);
  std::uint32_t state = 12345;
  for (auto& b : data) {
    state = state * 1103515245u + 12345u;
    b = static_cast<std::uint8_t>(state >> 24);
  }
  for (const std::size_t size : {0u, 1u, 15u, 16u, 63u, 64u, 65u, 4097u, 70000u}) {
    const ByteSpan piece(data.data(), size);
    const std::uint32_t whole = crc32(piece);
    EXPECT_EQ(whole, reference_crc32(piece)) << size;
    const std::size_t half = size / 3;
    EXPECT_EQ(crc32(piece.subspan(half), crc32(piece.first(half))), whole) << size;
  }
}

}  // namespace
}  // namespace onnxzip
