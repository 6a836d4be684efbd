// Test support: the calls a ProgressCallback received, and progress.h's promise about them.
#ifndef ONNXZIP_TESTS_SUPPORT_PROGRESS_CALLS_H_
#define ONNXZIP_TESTS_SUPPORT_PROGRESS_CALLS_H_

#include <cstdint>
#include <vector>

#include "onnxzip/progress.h"

namespace onnxzip::test_support {

struct ProgressCall {
  std::uint64_t done;
  std::uint64_t total;
  friend bool operator==(const ProgressCall&, const ProgressCall&) = default;
};

// Keeps every call of the callback it hands out (valid while it lives).
struct ProgressRecorder {
  std::vector<ProgressCall> calls;
  ProgressCallback callback() {
    return [this](std::uint64_t done, std::uint64_t total) { calls.push_back({done, total}); };
  }
};

// progress.h's promise: a first call at 0, `total` the same in every call, `done` never
// decreasing and below `total` until the one last call at `total` (a total of 0 is reached at
// once). Adds a test failure for each broken rule.
void expect_progress_well_formed(const std::vector<ProgressCall>& calls, std::uint64_t total);

}  // namespace onnxzip::test_support

#endif  // ONNXZIP_TESTS_SUPPORT_PROGRESS_CALLS_H_
