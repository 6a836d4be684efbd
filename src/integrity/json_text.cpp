#include "onnxzip/internal/json_text.h"

#include <nlohmann/json.hpp>

namespace onnxzip {

void append_json_string(std::string& out, std::string_view text) {
  // Names, hex and base64: printable ASCII, copied as they are. Anything else takes nlohmann's
  // own escaping, so the two never disagree.
  bool plain = true;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte > 0x7e || c == '"' || c == '\\') {
      plain = false;
      break;
    }
  }
  if (plain) {
    out.push_back('"');
    out.append(text);
    out.push_back('"');
    return;
  }
  out += nlohmann::json(std::string(text))
             .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void JsonText::key(std::string_view name) {
  if (!container_empty_) text_.push_back(',');
  container_empty_ = false;
  new_line(depth_);
  append_json_string(text_, name);
  text_ += ": ";
  after_key_ = true;
}

void JsonText::string(std::string_view value) {
  before_value();
  append_json_string(text_, value);
}

void JsonText::hex_string(std::span<const std::uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  ascii_string(2 * bytes.size(), [&](char* out) {
    for (const std::uint8_t byte : bytes) {
      *out++ = kDigits[byte >> 4];
      *out++ = kDigits[byte & 15];
    }
    return 2 * bytes.size();
  });
}

void JsonText::number(std::uint64_t value) {
  before_value();
  text_ += std::to_string(value);
}

void JsonText::number(std::int64_t value) {
  before_value();
  text_ += std::to_string(value);
}

void JsonText::boolean(bool value) {
  before_value();
  text_ += value ? "true" : "false";
}

void JsonText::null() {
  before_value();
  text_ += "null";
}

std::string JsonText::finish() && {
  text_.push_back('\n');
  return std::move(text_);
}

void JsonText::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (depth_ == 0) return;  // The document itself.
  // An array item.
  if (!container_empty_) text_.push_back(',');
  container_empty_ = false;
  new_line(depth_);
}

void JsonText::open(char bracket) {
  before_value();
  text_.push_back(bracket);
  ++depth_;
  container_empty_ = true;
}

void JsonText::close(char bracket) {
  --depth_;
  if (!container_empty_) new_line(depth_);
  text_.push_back(bracket);
  // The container just closed is an item of the one around it.
  container_empty_ = false;
}

void JsonText::new_line(std::size_t depth) {
  text_.push_back('\n');
  text_.append(2 * depth, ' ');
}

}  // namespace onnxzip
