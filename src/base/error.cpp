#include "onnxzip/error.h"

namespace onnxzip {
namespace {

std::string with_code(ErrorCode code, const std::string& message) {
  return std::string(to_string(code)) + ": " + message;
}

}  // namespace

std::string compose_message(const ErrorContext& context, std::string_view problem) {
  std::string message;
  for (const std::string* part : {&context.file, &context.tensor, &context.entry}) {
    if (!part->empty()) message.append(*part).append(": ");
  }
  return message.append(problem);
}

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
    case ErrorCode::kChanged:
      return "changed";
  }
  return "unknown";
}

Error::Error(ErrorCode code, const std::string& message)
    : std::runtime_error(with_code(code, message)),
      code_(code),
      problem_(message),
      message_(message) {}

Error::Error(ErrorCode code, ErrorContext context, std::string problem)
    : std::runtime_error(with_code(code, compose_message(context, problem))),
      code_(code),
      context_(std::move(context)),
      problem_(std::move(problem)),
      message_(compose_message(context_, problem_)) {}

Error Error::with_context(const ErrorContext& outer) const {
  ErrorContext context = context_;
  for (auto part : {&ErrorContext::file, &ErrorContext::tensor, &ErrorContext::entry,
                    &ErrorContext::entry_name, &ErrorContext::tensor_name, &ErrorContext::site}) {
    if ((context.*part).empty()) context.*part = outer.*part;
  }
  if (!context.offset) context.offset = outer.offset;
  return Error(code_, std::move(context), problem_);
}

}  // namespace onnxzip
