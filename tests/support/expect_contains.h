// Test support: EXPECT_CONTAINS(text, fragment), a gtest expectation that `text` (anything a
// std::string is made from) holds `fragment`, printing the whole text when it does not.
#ifndef ONNXZIP_TESTS_SUPPORT_EXPECT_CONTAINS_H_
#define ONNXZIP_TESTS_SUPPORT_EXPECT_CONTAINS_H_

#include <gtest/gtest.h>

#include <string>

#define EXPECT_CONTAINS(text, fragment) \
  EXPECT_NE(std::string(text).find(fragment), std::string::npos) << (text)

#endif  // ONNXZIP_TESTS_SUPPORT_EXPECT_CONTAINS_H_
