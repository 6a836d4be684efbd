#include "support/progress_calls.h"

#include <gtest/gtest.h>

namespace onnxzip::test_support {

void expect_progress_well_formed(const std::vector<ProgressCall>& calls, std::uint64_t total) {
  ASSERT_GE(calls.size(), 2u);
  EXPECT_EQ(calls.front().done, 0u);
  EXPECT_EQ(calls.back().done, total);
  for (std::size_t i = 0; i < calls.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(calls[i].total, total);
    if (i > 0) {
      EXPECT_GE(calls[i].done, calls[i - 1].done);
    }
    if (i + 1 < calls.size() && total != 0) {
      EXPECT_LT(calls[i].done, total);
    }
  }
}

}  // namespace onnxzip::test_support
