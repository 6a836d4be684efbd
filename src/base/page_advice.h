// Internal: hints to the kernel about large buffers the library is about to fill.
#ifndef ONNXZIP_PAGE_ADVICE_H_
#define ONNXZIP_PAGE_ADVICE_H_

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>

#include "fast_path.h"

namespace onnxzip::detail {

// Buffers at least this large are worth backing with transparent huge pages.
inline constexpr std::size_t kHugePageAdviceBytes = std::size_t{4} << 20;

// Asks for transparent huge pages over the whole 2 MiB pages inside [p, p + size), for a fresh
// buffer about to be written in full: one page fault per 2 MiB instead of one per 4 KiB, which is
// most of the cost of filling a new buffer of hundreds of megabytes. A hint only: without THP
// (or with THP disabled) nothing changes.
inline void advise_huge_pages(void* p, std::size_t size) noexcept {
#ifdef MADV_HUGEPAGE
  if (size < kHugePageAdviceBytes || !fast_path_on(FastPath::kHugePageAdvice)) return;
  constexpr std::uintptr_t kHugePage = std::uintptr_t{2} << 20;
  const auto begin = (reinterpret_cast<std::uintptr_t>(p) + kHugePage - 1) & ~(kHugePage - 1);
  const auto end = (reinterpret_cast<std::uintptr_t>(p) + size) & ~(kHugePage - 1);
  if (end > begin) {
    ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
  }
#else
  (void)p;
  (void)size;
#endif
}

}  // namespace onnxzip::detail

#endif  // ONNXZIP_PAGE_ADVICE_H_
