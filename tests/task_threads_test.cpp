// for_each_task (task_threads.h): every task runs once, on the caller's thread and the others,
// and the first exception stops the rest and reaches the caller.
#include "task_threads.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

namespace onnxzip::detail {
namespace {

TEST(TaskThreadsTest, EveryTaskRunsOnceWhateverTheNumberOfThreads) {
  for (const std::size_t threads : {1u, 2u, 7u, 0u}) {
    for (const std::size_t count : {0u, 1u, 2u, 100u}) {
      std::vector<std::atomic<int>> runs(count);
      std::mutex mutex;
      std::set<std::thread::id> callers;
      for_each_task(count, threads, [&](std::size_t i, bool on_caller) {
        runs[i].fetch_add(1);
        if (on_caller) {
          const std::lock_guard<std::mutex> lock(mutex);
          callers.insert(std::this_thread::get_id());
        }
      });
      for (std::size_t i = 0; i < count; ++i) EXPECT_EQ(runs[i].load(), 1) << i;
      // on_caller means the caller's thread, and only it.
      EXPECT_TRUE(callers.empty() ||
                  (callers.size() == 1 && *callers.begin() == std::this_thread::get_id()));
    }
  }
}

TEST(TaskThreadsTest, TheFirstExceptionStopsTheTasksAndReachesTheCaller) {
  for (const std::size_t threads : {1u, 2u}) {
    std::atomic<std::size_t> ran{0};
    try {
      for_each_task(1000, threads, [&](std::size_t i, bool) {
        ran.fetch_add(1);
        if (i == 3) throw std::runtime_error("task 3");
      });
      ADD_FAILURE() << "no exception";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "task 3");
    }
    // Alone, the caller takes the tasks in order and stops at the one that threw. (With another
    // thread, how many tasks start before the failure is seen depends on the scheduler.)
    if (threads == 1) {
      EXPECT_EQ(ran.load(), 4u);
    }
  }
}

}  // namespace
}  // namespace onnxzip::detail
