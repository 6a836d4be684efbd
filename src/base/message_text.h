// Private to the library: how error messages and findings show text that came from a file
// (entry names, tensor names, locations), so that every module shows it the same way.
#ifndef ONNXZIP_SRC_MESSAGE_TEXT_H_
#define ONNXZIP_SRC_MESSAGE_TEXT_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace onnxzip::detail {

// Length of the valid UTF-8 sequence starting at text[i] (overlongs, surrogates and values past
// U+10FFFF excluded), or 0 when there is none.
std::size_t utf8_sequence_length(std::string_view text, std::size_t i) noexcept;

// `text` in single quotes, with control bytes, quotes, backslashes and invalid UTF-8 escaped as
// \xNN so that a message stays one printable line; text past 200 bytes is cut and ends in "...".
std::string quote(std::string_view text);

}  // namespace onnxzip::detail

#endif  // ONNXZIP_SRC_MESSAGE_TEXT_H_
