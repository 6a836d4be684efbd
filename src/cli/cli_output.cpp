#include "cli_output.h"

#include <algorithm>
#include <utility>

namespace onnxzip::cli {
namespace {

// Code points in valid UTF-8 (continuation bytes do not count), for column widths.
std::size_t display_width(std::string_view text) {
  return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

}  // namespace

Table::Table(std::vector<Column> columns) : columns_(std::move(columns)) {}

void Table::add_row(std::vector<std::string> cells) {
  cells.resize(columns_.size());
  rows_.push_back(std::move(cells));
}

std::string Table::render() const {
  std::vector<std::size_t> widths;
  for (const Column& column : columns_) widths.push_back(display_width(column.title));
  for (const auto& row : rows_) {
    for (std::size_t i = 0; i < row.size(); ++i) {
      widths[i] = std::max(widths[i], display_width(row[i]));
    }
  }
  std::string out;
  const auto emit = [&](const std::vector<std::string>& cells) {
    std::string line;
    for (std::size_t i = 0; i < cells.size(); ++i) {
      const std::string padding(widths[i] - display_width(cells[i]), ' ');
      const bool last = i + 1 == cells.size();
      if (columns_[i].align == Align::kRight) {
        line += padding + cells[i];
      } else {
        line += cells[i];
        if (!last) line += padding;
      }
      if (!last) line += "  ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  };
  std::vector<std::string> titles;
  for (const Column& column : columns_) titles.push_back(column.title);
  emit(titles);
  for (const auto& row : rows_) emit(row);
  return out;
}

}  // namespace onnxzip::cli
