#include "onnxzip/error.h"

#include <gtest/gtest.h>

#include <optional>
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

// The place apart from the problem: message() joins the parts present, in one order.
TEST(Error, ContextPartsComeFirstInOneOrder) {
  const Error error(
      ErrorCode::kCorrupt,
      {.file = "m.onnxz", .tensor = "tensor 'W' at graph/initializer[0]", .entry = "entry 'w'"},
      "length '9' differs from the entry's 16 bytes");
  EXPECT_EQ(error.message(),
            "m.onnxz: tensor 'W' at graph/initializer[0]: entry 'w': length '9' differs from the "
            "entry's 16 bytes");
  EXPECT_EQ(error.problem(), "length '9' differs from the entry's 16 bytes");
  EXPECT_EQ(error.context().entry, "entry 'w'");
  EXPECT_EQ(std::string(error.what()), "corrupt: " + error.message());
  // Empty parts leave no separator behind.
  EXPECT_EQ(Error(ErrorCode::kIo, {.file = "m.onnx"}, "cannot read").message(),
            "m.onnx: cannot read");
  EXPECT_EQ(Error(ErrorCode::kIo, {.entry = "entry 'w'"}, "bad").message(), "entry 'w': bad");
}

// The example: an inner error that names only the dims, wrapped by a reader that knows
// the file, then the tensor and its place, then the entry: each once, no code word inside.
TEST(Error, WithContextNamesEachPlaceOnce) {
  const Error inner(ErrorCode::kCorrupt,
                    "dims: element count: 4294967296 * 4294967296 overflows 64 bits");
  const Error outer = inner.with_context({.file = "m.onnx",
                                          .tensor = "tensor 'W' at graph/initializer[0]",
                                          .entry = "location 'w.bin'"});
  EXPECT_EQ(outer.code(), ErrorCode::kCorrupt);
  EXPECT_EQ(outer.message(),
            "m.onnx: tensor 'W' at graph/initializer[0]: location 'w.bin': dims: element count: "
            "4294967296 * 4294967296 overflows 64 bits");
  EXPECT_EQ(outer.problem(), inner.message());
}

// A part the error names already is kept, and the parts keep their order whichever layer added
// which: the entry from the thrower, the tensor and the file from callers further out.
TEST(Error, WithContextKeepsThePartsTheErrorHas) {
  const Error thrown(ErrorCode::kCorrupt, {.entry = "entry 'w' (local header at offset 64)"},
                     "CRC-32 mismatch");
  const Error by_tensor =
      thrown.with_context({.tensor = "tensor 'W' at graph/initializer[0]", .entry = "entry 'w'"});
  const Error by_file = by_tensor.with_context({.file = "m.onnxz", .tensor = "tensor 'X'"});
  EXPECT_EQ(by_file.message(),
            "m.onnxz: tensor 'W' at graph/initializer[0]: entry 'w' (local header at offset 64): "
            "CRC-32 mismatch");
  EXPECT_EQ(by_file.context().file, "m.onnxz");
  EXPECT_EQ(by_file.problem(), "CRC-32 mismatch");
}

// The same place as plain values (what Python's Error fields show) travels with the phrases:
// each part kept from the layer that knew it, never taken back out of a phrase.
TEST(Error, WithContextCarriesThePlainPlace) {
  const Error thrown(
      ErrorCode::kCorrupt,
      {.entry = "entry 'w' (local header at offset 64)", .entry_name = "w", .offset = 64},
      "CRC-32 mismatch");
  const Error outer = thrown.with_context({.file = "m.onnxz",
                                           .tensor = "tensor 'W' at graph/initializer[0]",
                                           .entry_name = "x",
                                           .tensor_name = "W",
                                           .site = "graph/initializer[0]",
                                           .offset = 8});
  const ErrorContext& place = outer.context();
  EXPECT_EQ(place.entry_name, "w");
  EXPECT_EQ(place.offset, 64u);
  EXPECT_EQ(place.tensor_name, "W");
  EXPECT_EQ(place.site, "graph/initializer[0]");
  EXPECT_EQ(outer.message(),
            "m.onnxz: tensor 'W' at graph/initializer[0]: entry 'w' (local header at offset 64): "
            "CRC-32 mismatch");
  EXPECT_EQ(Error(ErrorCode::kIo, "m.onnxz: cannot read").context().offset, std::nullopt);
}

TEST(Error, WithErrorContextBuildsThePlaceOnlyOnFailure) {
  int built = 0;
  const auto context = [&] {
    ++built;
    return ErrorContext{.file = "m.onnxz"};
  };
  EXPECT_EQ(with_error_context(context, [] { return 7; }), 7);
  EXPECT_EQ(built, 0);
  try {
    with_error_context(context, []() -> int { throw Error(ErrorCode::kNotFound, "no entry 'w'"); });
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_EQ(e.message(), "m.onnxz: no entry 'w'");
  }
  EXPECT_EQ(built, 1);
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
