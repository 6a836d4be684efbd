// Internal: switches for the fast paths that have no seam of their own, so that a bench can time
// each against its plain twin (bench/fast_path_bench.cpp) and a test can check that both write
// the same bytes (tests/fast_path_test.cpp). Every switch is on unless a bench or a test turns it
// off; nothing in the library does. The fast paths with seams of their own are the CRC-32 worker
// (crc_worker_testing.h), splice (output_file_testing.h) and the local-header read-ahead
// (zip_local_headers.h).
#ifndef ONNXZIP_SRC_FAST_PATH_H_
#define ONNXZIP_SRC_FAST_PATH_H_

#include <atomic>
#include <cstdint>

namespace onnxzip::detail {

enum class FastPath : std::uint8_t {
  kHugePageAdvice,  // advise_huge_pages (page_advice.h); plain: no advice.
  kDigestsAhead,    // An edit reads `__DIGESTS` on another thread (edit.cpp); plain: in turn.
  // Writers share a mapped file's blocks (FICLONERANGE, output_file.cpp); plain: they copy.
  kShareBlocks,
  // Writers allocate a large piece's blocks before writing it (fallocate, output_file.cpp);
  // plain: the file system allocates them as the bytes come.
  kAllocateAhead,
};

// One bit per FastPath that is switched off.
inline std::atomic<std::uint32_t> plain_fast_paths{0};

inline bool fast_path_on(FastPath path) noexcept {
  return (plain_fast_paths.load(std::memory_order_relaxed) &
          (std::uint32_t{1} << static_cast<unsigned>(path))) == 0;
}

inline void set_fast_path_on(FastPath path, bool on) noexcept {
  const std::uint32_t bit = std::uint32_t{1} << static_cast<unsigned>(path);
  if (on) {
    plain_fast_paths.fetch_and(~bit, std::memory_order_relaxed);
  } else {
    plain_fast_paths.fetch_or(bit, std::memory_order_relaxed);
  }
}

}  // namespace onnxzip::detail

#endif  // ONNXZIP_SRC_FAST_PATH_H_
