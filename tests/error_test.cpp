#include "onnxzip/error.h"

#include <gtest/gtest.h>

#include <string>

namespace onnxzip {
namespace {

// Bindings show message() next to code(); what() keeps "<code>: <message>" for C++ callers.
TEST(Error, MessageIsWhatWithoutTheCode) {
  const Error error(ErrorCode::kNotFound, "model.onnxz: no entry \"w\"");
  EXPECT_EQ(error.code(), ErrorCode::kNotFound);
  EXPECT_EQ(error.message(), "model.onnxz: no entry \"w\"");
  EXPECT_EQ(std::string(error.what()), "not_found: model.onnxz: no entry \"w\"");
}

TEST(Error, EveryCodeHasItsName) {
  EXPECT_EQ(to_string(ErrorCode::kCorrupt), "corrupt");
  EXPECT_EQ(to_string(ErrorCode::kUnsupported), "unsupported");
  EXPECT_EQ(to_string(ErrorCode::kNotFound), "not_found");
  EXPECT_EQ(to_string(ErrorCode::kIo), "io");
  EXPECT_EQ(to_string(ErrorCode::kInvalidArgument), "invalid_argument");
  EXPECT_EQ(to_string(ErrorCode::kLimitExceeded), "limit_exceeded");
  EXPECT_EQ(to_string(ErrorCode::kBadState), "bad_state");
}

}  // namespace
}  // namespace onnxzip
