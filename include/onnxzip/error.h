// The one error type of the library.
//
// Every failure the library detects is reported by throwing onnxzip::Error, which carries a
// machine-readable ErrorCode and a message that names the place of the problem (file, entry,
// tensor, byte offset). The library never prints, exits or aborts; callers (the CLI, tests,
// bindings) decide what to do with an Error. Any module may include this header.
#ifndef ONNXZIP_ERROR_H_
#define ONNXZIP_ERROR_H_

#include <stdexcept>
#include <string>
#include <string_view>

namespace onnxzip {

enum class ErrorCode {
  kCorrupt,          // The input breaks its format: truncated, contradictory, out of bounds.
  kUnsupported,      // Valid for its format but a feature this library does not implement.
  kNotFound,         // A named thing (entry, tensor, file) does not exist.
  kIo,               // The operating system refused a read, write, map, rename...
  kInvalidArgument,  // The caller passed something the API does not accept.
  kLimitExceeded,    // A configured safety limit (depth, count, size) was exceeded.
  kBadState,         // The call is not allowed in the object's current state.
};

// Stable lower-case name of a code ("corrupt", "not_found", ...), for messages and JSON.
std::string_view to_string(ErrorCode code) noexcept;

class Error final : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message);

  ErrorCode code() const noexcept { return code_; }
  // The message without the code: what() is "<code>: <message>". Bindings that carry the code
  // apart (Python's Error.code) show this one.
  const std::string& message() const noexcept { return message_; }

 private:
  ErrorCode code_;
  std::string message_;
};

}  // namespace onnxzip

#endif  // ONNXZIP_ERROR_H_
