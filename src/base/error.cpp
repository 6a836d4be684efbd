#include "onnxzip/error.h"

namespace onnxzip {

std::string_view to_string(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::kCorrupt:
      return "corrupt";
    case ErrorCode::kUnsupported:
      return "unsupported";
    case ErrorCode::kNotFound:
      return "not_found";
    case ErrorCode::kIo:
      return "io";
    case ErrorCode::kInvalidArgument:
      return "invalid_argument";
    case ErrorCode::kLimitExceeded:
      return "limit_exceeded";
    case ErrorCode::kBadState:
      return "bad_state";
  }
  return "unknown";
}

Error::Error(ErrorCode code, const std::string& message)
    : std::runtime_error(std::string(to_string(code)) + ": " + message),
      code_(code),
      message_(message) {}

}  // namespace onnxzip
