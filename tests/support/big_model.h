// Test support: models whose weights are gigabytes, for the *Slow* suites. The payloads are
// computed from (seed, byte index) and written in pieces, so no test holds them in memory and a
// test can check any byte of any copy without keeping the original.
#ifndef ONNXZIP_TESTS_SUPPORT_BIG_MODEL_H_
#define ONNXZIP_TESTS_SUPPORT_BIG_MODEL_H_

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "onnxzip/bytes.h"

namespace onnxzip::test_support {

// Byte `index` of the payload numbered `seed`: a hash of the 8-byte word holding it, so bytes
// 4 GiB apart differ (a truncated 32-bit offset would read the wrong bytes).
std::uint8_t big_byte(std::uint32_t seed, std::uint64_t index);
// Bytes [at, at + out.size()) of payload `seed`, a word at a time.
void fill_big_bytes(std::uint32_t seed, std::uint64_t at, MutableByteSpan out);
// The byte indices a test samples: the first, middle and last `window` bytes of a payload of
// `length` bytes (fewer when they overlap), as [begin, end) ranges.
std::vector<std::pair<std::uint64_t, std::uint64_t>> sample_ranges(std::uint64_t length,
                                                                   std::uint64_t window = 4096);
// True when `bytes` equals bytes [at, at + bytes.size()) of payload `seed`.
bool equals_big_bytes(std::uint32_t seed, std::uint64_t at, ByteSpan bytes);

struct BigTensorSpec {
  std::string name;
  std::uint64_t length = 0;      // UINT8[length].
  std::uint64_t gap_before = 0;  // Extra zero bytes before the payload (after 4096 alignment).
};

struct BigTensor {
  std::string name;
  std::uint32_t seed = 0;  // The payload is big_byte(seed, 0 .. length - 1).
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};

// Writes `<dir>/<data_file>` with the payload of each tensor at the next multiple of 4096 plus
// its gap_before (zero bytes in between; seeds 1, 2, ... in order), and `<dir>/model.onnx`, a
// model (IR 8, opset 17, graph "big") whose initializers are UINT8[length] tensors referring to
// it with location, offset and length. Returns the layout. Throws std::runtime_error when a file
// cannot be written.
std::vector<BigTensor> write_big_external_model(const std::filesystem::path& dir,
                                                const std::vector<BigTensorSpec>& tensors,
                                                const std::string& data_file = "weights.bin");

}  // namespace onnxzip::test_support

#endif  // ONNXZIP_TESTS_SUPPORT_BIG_MODEL_H_
