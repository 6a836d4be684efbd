#include "task_threads.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace onnxzip::detail {

std::size_t default_task_threads() noexcept {
  return std::max<std::size_t>(1, std::thread::hardware_concurrency());
}

void for_each_task(std::size_t count, std::size_t threads,
                   const std::function<void(std::size_t task, bool on_caller)>& task) {
  if (threads == 0) threads = default_task_threads();
  threads = std::min(threads, count);
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mutex;
  std::exception_ptr first_error;
  const auto work = [&](bool on_caller) {
    while (!failed.load(std::memory_order_relaxed)) {
      const std::size_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= count) return;
      try {
        task(i, on_caller);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(mutex);
        if (!first_error) first_error = std::current_exception();
        failed = true;
      }
    }
  };
  std::vector<std::jthread> helpers;
  for (std::size_t k = 1; k < threads; ++k) {
    try {
      helpers.emplace_back(work, false);
    } catch (const std::system_error&) {
      break;  // Fewer threads than asked for: the ones started share the tasks.
    }
  }
  work(true);
  helpers.clear();  // Joins them.
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace onnxzip::detail
