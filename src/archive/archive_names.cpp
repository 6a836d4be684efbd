// The .onnxz naming rule (spec §6), and payload entry names derived from tensor names (spec
// §6.1; the derivation itself is ours).
#include <cstdio>
#include <string>

#include "archive_internal.h"
#include "onnxzip/archive.h"
#include "onnxzip/error.h"

namespace onnxzip {
namespace {

constexpr std::size_t kMaxEntryNameLength = 255;

bool is_identifier_start(char c) noexcept {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

bool is_name_char(char c) noexcept { return is_identifier_start(c) || (c >= '0' && c <= '9'); }

std::string ascii_lower(std::string_view name) {
  std::string lowered(name);
  for (char& c : lowered) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return lowered;
}

}  // namespace

std::string entry_name_problem(std::string_view name, EntryNameKind kind) {
  if (name.empty()) return "is empty";
  if (name.size() > kMaxEntryNameLength) {
    return "is " + std::to_string(name.size()) + " bytes long, more than the 255 allowed";
  }
  if (!is_identifier_start(name[0])) {
    return "must start with an ASCII letter or an underscore (a C identifier)";
  }
  for (std::size_t i = 1; i < name.size(); ++i) {
    if (!is_name_char(name[i])) {
      char found[8];
      std::snprintf(found, sizeof found, "0x%02x", static_cast<unsigned char>(name[i]));
      return "byte " + std::to_string(i) + " (" + found +
             ") is not an ASCII letter, digit or underscore (a C identifier)";
    }
  }
  const bool reserved = name.starts_with("__");
  if (kind == EntryNameKind::kPayload && reserved) {
    return "names starting with '__' are reserved for the format";
  }
  if (kind == EntryNameKind::kReserved && !reserved) return "a reserved name must start with '__'";
  return {};
}

void archive_detail::check_entry_name(std::string_view name, EntryNameKind kind) {
  const std::string problem = entry_name_problem(name, kind);
  if (!problem.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "entry name " + detail::quote(name) + ": " + problem);
  }
}

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
  if (!name.empty() && name.front() >= '0' && name.front() <= '9') name.insert(0, 1, '_');
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
  archive_detail::check_entry_name(name, EntryNameKind::kPayload);
  return next_suffix_.try_emplace(ascii_lower(name), 2).second;
}

bool EntryNamer::is_taken(std::string_view name) const {
  return next_suffix_.contains(ascii_lower(name));
}

}  // namespace onnxzip
