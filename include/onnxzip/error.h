// The one error type of the library.
//
// Every failure the library detects is reported by throwing onnxzip::Error, which carries a
// machine-readable ErrorCode and a message that names the place of the problem (file, entry,
// tensor, byte offset). The library never prints, exits or aborts; callers (the CLI, tests,
// bindings) decide what to do with an Error. Any module may include this header.
//
// Code and message are kept apart: message() never contains the code, and what() composes
// "<code>: <message>" once, for C++ callers that print an exception. Nothing takes either apart
// again: a layer that knows more of the place adds it with with_context (below), which composes
// the parts in one order and names each once.
#ifndef ONNXZIP_ERROR_H_
#define ONNXZIP_ERROR_H_

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace onnxzip {

enum class ErrorCode {
  kCorrupt,          // The input breaks its format: truncated, contradictory, out of bounds.
  kUnsupported,      // Valid for its format but a feature this library does not implement.
  kNotFound,         // A named thing (entry, tensor, file) does not exist.
  kIo,               // The operating system refused a read, write, map, rename...
  kInvalidArgument,  // The caller passed something the API does not accept.
  kLimitExceeded,    // A configured safety limit (depth, count, size) was exceeded.
  kBadState,         // The call is not allowed in the object's current state.
  kChanged,          // The file changed while it was being read: retrying may succeed.
};

// Stable lower-case name of a code ("corrupt", "not_found", ...), for messages and JSON.
std::string_view to_string(ErrorCode code) noexcept;

// Where a problem lies, outermost first. Each part is a finished phrase, "" when not known:
//   file    the file the caller named ("model.onnxz", "model.onnx");
//   tensor  the tensor and its place in the model ("tensor 'W' at graph/initializer[0]");
//   entry   the archive entry, or a legacy model's data file ("entry 'w'", "location 'w.bin'").
// The rest is the same place as plain values, where the thrower knows them, for a face that hands
// the parts out as fields (Python's Error.entry, spec/names.md "Error codes"); the message is
// made of the phrases alone.
struct ErrorContext {
  std::string file{};
  std::string tensor{};
  std::string entry{};
  std::string entry_name{};               // The entry's ZIP name.
  std::string tensor_name{};              // The tensor's TensorProto.name.
  std::string site{};                     // The tensor's site ("graph/initializer[0]").
  std::optional<std::uint64_t> offset{};  // The file offset the entry phrase names.
};

// "<file>: <tensor>: <entry>: <problem>" over the parts of `context` that are not empty: the one
// way a place and a problem become a line (Error::message() and the verify findings use it).
std::string compose_message(const ErrorContext& context, std::string_view problem);

class Error final : public std::runtime_error {
 public:
  // `message` says what is wrong and names whatever place the thrower knows.
  Error(ErrorCode code, const std::string& message);
  // The place apart from the problem: message() is "<file>: <tensor>: <entry>: <problem>", over
  // the parts that are not empty.
  Error(ErrorCode code, ErrorContext context, std::string problem);

  ErrorCode code() const noexcept { return code_; }
  // The whole message without the code (what() is "<code>: <message>"). Bindings that carry the
  // code apart (Python's Error.code) and the CLI's error line show this one.
  const std::string& message() const noexcept { return message_; }
  // The message without the parts of context(): for a caller that names the place itself.
  const std::string& problem() const noexcept { return problem_; }
  // The parts of the place given apart (empty for an Error built from one message).
  const ErrorContext& context() const noexcept { return context_; }

  // This error with each part of `outer` that it does not name yet: the one way to add place to
  // an Error as it propagates out of a layer that knows more of it. A part this error has is
  // kept (its thrower knew it best), so no part is named twice, and the parts stay in the order
  // file, tensor, entry whichever layer added which. The code is kept.
  Error with_context(const ErrorContext& outer) const;

 private:
  ErrorCode code_;
  ErrorContext context_;
  std::string problem_;
  std::string message_;
};

// Calls f() and returns its result; an Error it throws is rethrown as
// error.with_context(context()). `context` runs only on that path, so a caller walking many
// tensors builds no label unless one fails.
template <typename F, typename MakeContext>
decltype(auto) with_error_context(MakeContext&& context, F&& f) {
  try {
    return std::forward<F>(f)();
  } catch (const Error& error) {
    throw error.with_context(std::forward<MakeContext>(context)());
  }
}

}  // namespace onnxzip

#endif  // ONNXZIP_ERROR_H_
