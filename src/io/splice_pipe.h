// Internal: the pipes through which splice() moves page cache pages from one file to another,
// lent to AtomicOutputFile for its copies from mapped files (output_file.cpp says why a pipe of
// its own and not copy_file_range's). Private to the library and its tests.
#ifndef ONNXZIP_SRC_SPLICE_PIPE_H_
#define ONNXZIP_SRC_SPLICE_PIPE_H_

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <memory>

#include "posix_file.h"

namespace onnxzip::detail {

// A pipe that holds `capacity` bytes (fcntl F_SETPIPE_SZ), made by process `maker`.
struct SplicePipe {
  Fd read_end;
  Fd write_end;
  std::size_t capacity = 0;
  pid_t maker = 0;
};

// The pipe capacities asked for, largest first; a pipe that cannot get the smallest is not made.
// With 64 KiB (the default, and copy_file_range's own pipe) the copy measured slower than pread
// and pwrite through a buffer; with 1 MiB it matches cp (README "Interoperability and
// benchmarks").
inline constexpr std::size_t kSplicePipeCapacities[] = {std::size_t{1} << 20,
                                                        std::size_t{256} << 10};

// Lends pipes to the output files that are open. Making one costs about 7 µs (a few percent of
// copying a 1 MiB tensor), so one idle pipe is kept while any user is registered; none per user,
// since a legacy model's data files stay open together until the set is committed and would
// hold two more descriptors each; and none once the last user is gone, so that no descriptor of
// the library outlives the files it writes. Lock-free, hence safe to use in a child after fork()
// (whose copy of a parent's idle pipe is dropped, not shared with the parent).
class SplicePipeShelf final {
 public:
  static SplicePipeShelf& instance() noexcept;

  void add_user() noexcept;
  void remove_user() noexcept;
  // The idle pipe, or a new one; null when none can be made (no descriptors left, the user's
  // pipe memory limit reached).
  std::unique_ptr<SplicePipe> take();
  // Back on the shelf when it is empty (the pipe must be empty too), else closed.
  void give(std::unique_ptr<SplicePipe> pipe) noexcept;
  // Whether a pipe is idle on the shelf now (for tests).
  bool holds_a_pipe() const noexcept { return idle_.load() != nullptr; }

 private:
  SplicePipeShelf() = default;

  std::atomic<int> users_{0};
  // Owned: released from a unique_ptr in give(), taken back into one by take() and
  // remove_user(). Left to the system at exit (the shelf is never destroyed).
  std::atomic<SplicePipe*> idle_{nullptr};
};

}  // namespace onnxzip::detail

#endif  // ONNXZIP_SRC_SPLICE_PIPE_H_
