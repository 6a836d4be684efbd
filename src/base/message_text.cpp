#include "message_text.h"

#include <cstdio>

namespace onnxzip::detail {

std::size_t utf8_sequence_length(std::string_view text, std::size_t i) noexcept {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  if (lead < 0x80) return 1;
  std::size_t length = 0;
  unsigned char low = 0x80;
  unsigned char high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (text.size() - i < length) return 0;
  if (byte(i + 1) < low || byte(i + 1) > high) return 0;
  for (std::size_t k = 2; k < length; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return length;
}

std::string quote(std::string_view name) {
  constexpr std::size_t kMaxShown = 200;
  std::string out = "'";
  for (std::size_t i = 0; i < name.size() && i < kMaxShown;) {
    const auto c = static_cast<unsigned char>(name[i]);
    const std::size_t n = utf8_sequence_length(name, i);
    if (c >= 0x80 && n > 1) {
      out.append(name.substr(i, n));
      i += n;
      continue;
    }
    if (c >= 0x20 && c < 0x7F && c != '\'' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char text[8];
      std::snprintf(text, sizeof text, "\\x%02x", c);
      out += text;
    }
    ++i;
  }
  if (name.size() > kMaxShown) out += "...";
  out += "'";
  return out;
}

}  // namespace onnxzip::detail
