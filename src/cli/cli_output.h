// Printing for the onnxzip tool: aligned text tables and JSON. Private to src/cli/.
#ifndef ONNXZIP_CLI_OUTPUT_H_
#define ONNXZIP_CLI_OUTPUT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace onnxzip::cli {

// A text table: a header row and rows of cells, printed with columns padded to their widest
// cell (by code points; cells are expected to be printable() already). Right-aligned columns
// are for numbers.
class Table final {
 public:
  enum class Align { kLeft, kRight };
  struct Column {
    std::string title;
    Align align = Align::kLeft;
  };

  explicit Table(std::vector<Column> columns);
  // `cells` has one string per column.
  void add_row(std::vector<std::string> cells);
  bool empty() const noexcept { return rows_.empty(); }
  // The table, one line per row, each ending in '\n'; two spaces between columns.
  std::string render() const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// A JSON document built in order: objects, arrays, keys and values, indented by two spaces.
// Strings are arbitrary bytes: valid UTF-8 is kept, quotes, backslashes and control characters
// are escaped, and every byte that is not part of valid UTF-8 becomes \ufffd, so the output is
// always valid JSON (RFC 8259) whatever the model holds. The caller keeps keys and values paired.
class JsonWriter final {
 public:
  void begin_object();
  void end_object();
  void begin_array();
  void end_array();
  // The next value's key (inside an object).
  void key(std::string_view name);
  void string(std::string_view text);
  void number(std::uint64_t value);
  void number(std::int64_t value);
  void boolean(bool value);
  void null();

  // The document, ending in '\n'.
  std::string str() const { return out_ + "\n"; }

 private:
  void before_value();
  void newline();

  std::string out_;
  std::vector<bool> first_;  // Per open container: no element written yet.
  bool after_key_ = false;
};

// `text` as a JSON string literal, quotes included (see JsonWriter).
std::string json_string(std::string_view text);

}  // namespace onnxzip::cli

#endif  // ONNXZIP_CLI_OUTPUT_H_
