#include "check.h"

#include <gtest/gtest.h>

namespace onnxzip {
namespace {

// CMake defines NDEBUG in every configuration but Debug, and Debug must check invariants.
TEST(Dcheck, OnInEveryDebugBuild) {
#ifdef NDEBUG
  GTEST_SKIP() << "an optimized build: checks are on only with sanitizers or libFuzzer";
#else
  EXPECT_TRUE(detail::kDchecksOn);
#endif
}

TEST(Dcheck, HoldingConditionPasses) {
  int evaluated = 0;
  ONNXZIP_DCHECK(++evaluated == 1);
  EXPECT_EQ(evaluated, detail::kDchecksOn ? 1 : 0);
}

#ifdef ONNXZIP_DCHECK_ON
TEST(DcheckDeathTest, BrokenInvariantAbortsNamingTheCondition) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const int lines = 3;
  EXPECT_DEATH(ONNXZIP_DCHECK(lines % 2 == 0), "ONNXZIP_DCHECK\\(lines % 2 == 0\\) failed");
}
#else
TEST(Dcheck, OffCompilesTheConditionButNeverEvaluatesIt) {
  int evaluated = 0;
  ONNXZIP_DCHECK(++evaluated == 2);  // False, and not run.
  EXPECT_EQ(evaluated, 0);
}
#endif

}  // namespace
}  // namespace onnxzip
