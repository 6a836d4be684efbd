// The Error a callable throws, for tests that check its code and message. Tests only.
#pragma once

#include <gtest/gtest.h>

#include <utility>

#include "onnxzip/error.h"

namespace onnxzip::test_support {

// What `f` throws; a test failure, and a kBadState Error, when it throws nothing.
template <typename F>
Error error_of(F&& f) {
  try {
    std::forward<F>(f)();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no Error thrown";
  return Error(ErrorCode::kBadState, "none");
}

}  // namespace onnxzip::test_support
