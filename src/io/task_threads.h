// Internal: independent tasks shared out over the caller's thread and a few more, for work that
// reads memory faster on two cores than on one (verify's CRC-32s and SHA-256s). Not installed.
#ifndef ONNXZIP_SRC_TASK_THREADS_H_
#define ONNXZIP_SRC_TASK_THREADS_H_

#include <cstddef>
#include <functional>

namespace onnxzip::detail {

// The threads for_each_task uses when asked for 0: the hardware's, at least 1.
std::size_t default_task_threads() noexcept;

// Runs task(i, on_caller) for every i in [0, count), each once, on up to `threads` threads (0:
// default_task_threads()) of which the caller's is one; tasks are taken in order of i by
// whichever thread is free, so which thread runs which task is not fixed. `on_caller` is true
// on the caller's thread, where what is not thread-safe (a progress callback) may be done.
// Returns when every task has run. When a task throws, no further task starts and the first
// exception is rethrown here once every thread has stopped. Without threads to be had, the
// caller runs the tasks alone.
void for_each_task(std::size_t count, std::size_t threads,
                   const std::function<void(std::size_t task, bool on_caller)>& task);

}  // namespace onnxzip::detail

#endif  // ONNXZIP_SRC_TASK_THREADS_H_
