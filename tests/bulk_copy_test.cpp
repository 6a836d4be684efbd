#include "bulk_copy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace onnxzip::detail {
namespace {

// Streaming copies must give memcpy's result for every size around the switch-over and every
// misalignment of source and destination, and leave the bytes around the destination alone.
TEST(BulkCopy, CopiesExactlyAtEverySizeAndAlignment) {
  const std::size_t largest = kStreamingCopyBytes + 200;
  std::vector<std::uint8_t> source(largest + 64);
  for (std::size_t i = 0; i < source.size(); ++i) {
    source[i] = static_cast<std::uint8_t>(i * 131 + (i >> 9));
  }
  std::vector<std::uint8_t> target(largest + 192);
  for (const std::size_t size :
       {std::size_t{0}, std::size_t{1}, std::size_t{63}, std::size_t{4096}, kStreamingCopyBytes - 1,
        kStreamingCopyBytes, kStreamingCopyBytes + 1, kStreamingCopyBytes + 127, largest}) {
    for (const std::size_t from : {0, 1, 17, 63}) {
      for (const std::size_t to : {64, 65, 100, 127}) {
        std::fill(target.begin(), target.end(), std::uint8_t{0xEE});
        copy_bytes(target.data() + to, source.data() + from, size);
        for (std::size_t i = 0; i < target.size(); ++i) {
          const bool inside = i >= to && i < to + size;
          const std::uint8_t expected = inside ? source[from + i - to] : std::uint8_t{0xEE};
          if (target[i] != expected) {
            FAIL() << "size " << size << ", from +" << from << ", to +" << to << ": byte " << i;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace onnxzip::detail
