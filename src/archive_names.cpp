// Payload entry names derived from tensor names (spec §6.1; the derivation itself is ours).
#include <string>

#include "message_text.h"
#include "onnxzip/archive.h"
#include "onnxzip/zip_writer.h"

namespace onnxzip {
namespace {

using detail::ascii_lower;

bool is_name_char(char c) noexcept {
  return detail::is_ascii_letter(c) || detail::is_ascii_digit(c) || c == '_';
}

}  // namespace

std::string EntryNamer::sanitize(std::string_view tensor_name) {
  std::string name;
  name.reserve(std::min(tensor_name.size(), kMaxBaseLength));
  // True while the last character of `name` replaced a disallowed byte: an '_' that follows is
  // absorbed and one at the very end is dropped, so "onnx::Conv" reads "onnx_Conv".
  bool replaced = false;
  for (const char c : tensor_name) {
    if (is_name_char(c)) {
      if (!(c == '_' && replaced)) name += c;
      replaced = false;
    } else if (!name.empty() && name.back() != '_') {
      name += '_';
      replaced = true;
    }
  }
  if (replaced) name.pop_back();
  if (!name.empty() && detail::is_ascii_digit(name.front())) name.insert(0, 1, '_');
  // "__" starts the reserved names (spec §6.2): keep a single leading underscore.
  const std::size_t underscores = name.find_first_not_of('_');
  const std::size_t leading = underscores == std::string::npos ? name.size() : underscores;
  if (leading >= 2) name.erase(0, leading - 1);
  if (name.empty()) name = "tensor";
  if (name.size() > kMaxBaseLength) name.resize(kMaxBaseLength);
  return name;
}

std::string EntryNamer::name_for(std::string_view tensor_name) {
  const std::string base = sanitize(tensor_name);
  const std::string lowered = ascii_lower(base);
  const auto [found, inserted] = next_suffix_.try_emplace(lowered, 2);
  if (inserted) return base;
  // A taken base hands out base_2, base_3...; each candidate may itself be taken by a tensor
  // whose own name sanitized to it, so every candidate is checked.
  for (std::uint64_t n = found->second;; ++n) {
    std::string candidate = base + "_" + std::to_string(n);
    if (next_suffix_.try_emplace(ascii_lower(candidate), 2).second) {
      next_suffix_[lowered] = n + 1;
      return candidate;
    }
  }
}

bool EntryNamer::reserve(std::string_view name) {
  ZipWriter::validate_name(name, NameKind::kTensor);
  return next_suffix_.try_emplace(ascii_lower(name), 2).second;
}

bool EntryNamer::is_taken(std::string_view name) const {
  return next_suffix_.contains(ascii_lower(name));
}

}  // namespace onnxzip
