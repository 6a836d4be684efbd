// The one JSON writer of the library and the tool: a pretty-printed document written in order
// straight into a string, laid out byte for byte as nlohmann/json's dump(2) lays it out. The
// integrity entries (`__DIGESTS`, `__SIGNATURE`) are written with it -- the spec's vectors and
// signatures over earlier archives were made by dump(2), so its bytes are pinned -- and so is the
// tool's --json output. No document tree: an edit re-encodes a statement of one item per entry,
// and a tree of a few thousand nodes built only to be printed was most of a signed edit's time.
// Internal (not installed); implemented in the integrity layer, which holds nlohmann/json.
#ifndef ONNXZIP_INTERNAL_JSON_TEXT_H_
#define ONNXZIP_INTERNAL_JSON_TEXT_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace onnxzip {

// Appends `text` as a JSON string, quoted, escaped as nlohmann's dump(ensure_ascii = false)
// escapes it; invalid UTF-8 becomes U+FFFD (its error_handler_t::replace), so the output is
// valid JSON (RFC 8259) whatever a model holds.
void append_json_string(std::string& out, std::string_view text);

// A pretty-printed JSON document (two spaces a level, "key": value, [] and {} when empty),
// written in document order. The caller opens and closes what it writes; a key is followed by
// exactly one value.
class JsonText final {
 public:
  // `expected_size`: what to reserve, a guess.
  explicit JsonText(std::size_t expected_size = 0) { text_.reserve(expected_size); }

  void begin_object() { open('{'); }
  void end_object() { close('}'); }
  void begin_array() { open('['); }
  void end_array() { close(']'); }
  void key(std::string_view name);
  void string(std::string_view value);
  // A string of ASCII that needs no escaping (hex, base64), written in place by
  // `write(char* out)`, which writes at most `capacity` characters and returns how many: a
  // statement's digests and a bundle's payload go into the text without a copy or a scan.
  template <class Write>
  void ascii_string(std::size_t capacity, const Write& write) {
    before_value();
    text_.push_back('"');
    const std::size_t start = text_.size();
    text_.resize(start + capacity);
    text_.resize(start + write(text_.data() + start));
    text_.push_back('"');
  }
  // The bytes as a string of lower-case hex digits, two a byte.
  void hex_string(std::span<const std::uint8_t> bytes);
  void number(std::uint64_t value);
  void number(std::int64_t value);
  void boolean(bool value);
  void null();
  // The document with a final newline.
  std::string finish() &&;

 private:
  void before_value();
  void open(char bracket);
  void close(char bracket);
  void new_line(std::size_t depth);

  std::string text_;
  std::size_t depth_ = 0;
  bool container_empty_ = true;  // Of the innermost open object or array.
  bool after_key_ = false;
};

}  // namespace onnxzip

#endif  // ONNXZIP_INTERNAL_JSON_TEXT_H_
