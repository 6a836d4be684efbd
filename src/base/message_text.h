// Private to the library: how error messages and findings show text that came from a file
// (entry names, tensor names, locations), so that every module shows it the same way.
#ifndef ONNXZIP_SRC_MESSAGE_TEXT_H_
#define ONNXZIP_SRC_MESSAGE_TEXT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace onnxzip::detail {

// Length of the valid UTF-8 sequence starting at text[i] (overlongs, surrogates and values past
// U+10FFFF excluded), or 0 when there is none.
std::size_t utf8_sequence_length(std::string_view text, std::size_t i) noexcept;

// `text` in single quotes, with control bytes, quotes, backslashes and invalid UTF-8 escaped as
// \xNN so that a message stays one printable line; text past 200 bytes is cut and ends in "...".
std::string quote(std::string_view text);

// `value` as "0x" and exactly `digits` lower-case hex digits (more when the value needs them),
// as messages show flags, signatures and CRC-32s: hex(0x8, 4) == "0x0008".
std::string hex(std::uint64_t value, int digits);

// ASCII letters and digits only: names in the formats are compared byte for byte, and a locale
// must not change what a name is.
constexpr bool is_ascii_letter(char c) noexcept {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}
constexpr bool is_ascii_digit(char c) noexcept { return c >= '0' && c <= '9'; }
constexpr char ascii_lower(char c) noexcept {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}
// `text` with A-Z lowered to a-z and every other byte (UTF-8 included) unchanged, as the
// case-insensitive name checks of ZIP readers on case-folding file systems compare names.
std::string ascii_lower(std::string_view text);

}  // namespace onnxzip::detail

#endif  // ONNXZIP_SRC_MESSAGE_TEXT_H_
