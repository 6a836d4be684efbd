// Printing for the onnxzip tool: aligned text tables (JSON: onnxzip/internal/json_text.h).
// Private to src/cli/.
#ifndef ONNXZIP_CLI_OUTPUT_H_
#define ONNXZIP_CLI_OUTPUT_H_

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

}  // namespace onnxzip::cli

#endif  // ONNXZIP_CLI_OUTPUT_H_
