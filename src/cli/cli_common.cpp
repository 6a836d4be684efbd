#include "cli_common.h"

#include <CLI/CLI.hpp>

#include <array>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <map>
#include <utility>

#include "onnxzip/error.h"
#include "onnxzip/internal/zip_reader.h"
#include "onnxzip/legacy.h"
#include "onnxzip/output_options.h"

namespace onnxzip::cli {
namespace {

std::string upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::uint64_t parse_size(std::string_view text, std::string_view flag) {
  const auto bad = [&]() -> UsageError {
    return UsageError(std::string(flag) + ": '" + printable(text) +
                      "' is not a size (a byte count such as 4096, 64K, 1MiB or 2GB)");
  };
  std::uint64_t number = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (ec == std::errc::result_out_of_range) {
    throw UsageError(std::string(flag) + ": " + printable(text) + " is too large");
  }
  if (ec != std::errc() || end == text.data()) throw bad();
  static constexpr std::array<std::pair<std::string_view, std::uint64_t>, 14> kUnits{{
      {"", 1},
      {"B", 1},
      {"K", 1ull << 10},
      {"KIB", 1ull << 10},
      {"KB", 1000ull},
      {"M", 1ull << 20},
      {"MIB", 1ull << 20},
      {"MB", 1000ull * 1000},
      {"G", 1ull << 30},
      {"GIB", 1ull << 30},
      {"GB", 1000ull * 1000 * 1000},
      {"T", 1ull << 40},
      {"TIB", 1ull << 40},
      {"TB", 1000ull * 1000 * 1000 * 1000},
  }};
  const std::string unit = upper(std::string_view(end, text.data() + text.size() - end));
  for (const auto& [name, factor] : kUnits) {
    if (unit != name) continue;
    if (number > UINT64_MAX / factor) {
      throw UsageError(std::string(flag) + ": " + printable(text) + " is too large");
    }
    return number * factor;
  }
  throw bad();
}

std::optional<std::uint64_t> SizeOption::value() const {
  if (option == nullptr || option->count() == 0) return std::nullopt;
  return parse_size(text, option->get_name());
}

void add_size_option(CLI::App& app, const std::string& name, SizeOption& size,
                     const std::string& description) {
  size.option = app.add_option(name, size.text, description)->type_name("SIZE");
}

void add_inflate_limit_options(CLI::App& app, InflateLimits& limits) {
  app.add_option("--max-ratio", limits.max_ratio,
                 "Refuse deflated entries over 1 MiB that inflate to more than N times their "
                 "compressed size, as zip bombs do (default " +
                     std::to_string(limits.max_ratio) +
                     "; 0: no limit). Runs of zeros deflate to ~1000:1: raise it for an archive "
                     "you trust")
      ->type_name("N");
  add_size_option(app, "--max-inflated-size", limits.max_inflated_size,
                  "Refuse deflated entries that inflate to more than SIZE (default " +
                      std::to_string(ZipReaderOptions{}.max_inflated_size >> 30) + "GiB)");
}

void add_wait_option(CLI::App& app, LockWait& wait) {
  app.add_option("--wait", wait.seconds,
                 "Wait up to SECONDS for the archive's lock, which readers hold for a moment "
                 "and another edit until it ends (default " +
                     std::to_string(kDefaultEditWait.count() / 1000) +
                     "); then give up, the archive unchanged")
      ->type_name("SECONDS");
}

std::chrono::milliseconds LockWait::duration() const {
  if (!seconds) return kDefaultEditWait;
  // A day at most: more is a typo, and the count of milliseconds stays far from overflowing.
  constexpr double kLongestWait = 86400;
  if (!(*seconds >= 0 && *seconds <= kLongestWait)) {
    std::array<char, 32> text{};
    std::snprintf(text.data(), text.size(), "%g", *seconds);
    throw UsageError("--wait: " + std::string(text.data()) +
                     " is not a number of seconds from 0 to 86400");
  }
  return std::chrono::milliseconds(static_cast<std::int64_t>(*seconds * 1000));
}

ZipReaderOptions InflateLimits::zip_options() const {
  ZipReaderOptions options;
  options.max_compression_ratio = max_ratio;
  options.max_compression_ratio_name = "--max-ratio N";
  options.max_inflated_size_name = "--max-inflated-size SIZE";
  if (const std::optional<std::uint64_t> size = max_inflated_size.value()) {
    options.max_inflated_size = *size;
  }
  return options;
}

void require_power_of_two(std::uint64_t value, std::uint64_t min, std::uint64_t max,
                          std::string_view flag) {
  if (value >= min && value <= max && (value & (value - 1)) == 0) return;
  throw UsageError(std::string(flag) + ": " + std::to_string(value) +
                   " is not a power of two from " + std::to_string(min) + " to " +
                   std::to_string(max));
}

void require_plain_file_name(std::string_view name, std::string_view flag) {
  if (name.empty() || name == "." || name == ".." ||
      name.find_first_of(std::string_view("/\\\0", 3)) != std::string_view::npos) {
    throw UsageError(std::string(flag) + ": '" + printable(name) +
                     "' is not a plain file name (the data file is written next to the model; "
                     "no folder part)");
  }
}

std::size_t utf8_sequence_length(std::string_view text) {
  if (text.empty()) return 0;
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(0);
  std::size_t length = 0;
  std::uint32_t code = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
    code = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    code = lead & 0x0F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    code = lead & 0x07;
  } else {
    return 0;
  }
  if (text.size() < length) return 0;
  for (std::size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xC0) != 0x80) return 0;
    code = (code << 6) | (byte(i) & 0x3F);
  }
  const bool overlong = (length == 3 && code < 0x800) || (length == 4 && code < 0x10000);
  const bool surrogate = code >= 0xD800 && code <= 0xDFFF;
  if (overlong || surrogate || code > 0x10FFFF) return 0;
  return length;
}

std::string printable(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    const auto byte = static_cast<unsigned char>(text.front());
    if (byte >= 0x20 && byte < 0x7F) {
      out += text.front();
      text.remove_prefix(1);
      continue;
    }
    const std::size_t sequence = byte >= 0x80 ? utf8_sequence_length(text) : 0;
    // C1 control characters (U+0080..U+009F) steer terminals too.
    if (sequence != 0 &&
        !(sequence == 2 && byte == 0xC2 && static_cast<unsigned char>(text[1]) < 0xA0)) {
      out.append(text.substr(0, sequence));
      text.remove_prefix(sequence);
      continue;
    }
    out += "\\x";
    out += kHex[byte >> 4];
    out += kHex[byte & 0xF];
    text.remove_prefix(1);
  }
  return out;
}

std::string human_bytes(std::uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes) / 1024;
  std::size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  std::array<char, 32> text{};
  std::snprintf(text.data(), text.size(), "%.1f %s", value, kUnits[unit]);
  return text.data();
}

void note_kept_inline(const std::string& file, const std::vector<KeptInline>& kept,
                      const KeptInlineFlags& flags, const GlobalOptions& global) {
  if (global.quiet) return;
  using Reason = KeptInline::Reason;
  std::map<Reason, std::pair<std::size_t, std::uint64_t>> by_reason;  // Count and bytes.
  std::size_t count = 0;
  std::uint64_t bytes = 0;
  for (const KeptInline& tensor : kept) {
    if (tensor.reason == Reason::kSmall) continue;
    auto& [reason_count, reason_bytes] = by_reason[tensor.reason];
    ++reason_count;
    reason_bytes += tensor.size;
    ++count;
    bytes += tensor.size;
  }
  if (count == 0) return;
  std::string groups;
  for (const auto& [reason, totals] : by_reason) {
    const std::string& flag = reason == Reason::kAttribute ? flags.attribute
                              : reason == Reason::kSparse  ? flags.sparse
                                                           : std::string();
    groups += (groups.empty() ? "" : "; ") + std::to_string(totals.first) + " " +
              std::string(to_string(reason)) + ", " + human_bytes(totals.second) +
              (flag.empty() ? "" : ": " + flag + " moves them out");
  }
  std::fprintf(stderr, "onnxzip: note: %s: %zu tensor%s (%s) stay inline: %s\n",
               printable(file).c_str(), count, count == 1 ? "" : "s", human_bytes(bytes).c_str(),
               printable(groups).c_str());
}

void require_archive(const std::string& file) {
  if (detect_format(file) == ModelFormat::kOnnxz) return;
  std::filesystem::path archive = file;
  archive.replace_extension(".onnxz");
  throw Error(ErrorCode::kInvalidArgument, {.file = file},
              "not an .onnxz archive but a legacy model ('onnxzip convert " + file + " " +
                  archive.string() + "' turns it into one)");
}

std::string with_file(const std::filesystem::path& file, const Error& error) {
  if (!error.context().file.empty()) return error.message();
  return error.with_context({.file = file.string()}).message();
}

std::string with_file(const std::filesystem::path& file, std::string_view message) {
  return compose_message({.file = file.string()}, message);
}

}  // namespace onnxzip::cli
