#include "zip_central_directory.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "little_endian.h"
#include "onnxzip/internal/zip_reader.h"

namespace onnxzip::zip {
namespace {

using detail::ascii_lower;
using detail::hex;
using detail::is_ascii_letter;
using detail::load_le16;
using detail::load_le32;
using detail::load_le64;
using detail::quote;
using detail::utf8_sequence_length;
using Central = CentralDirectoryHeader;

bool is_valid_utf8(std::string_view text) noexcept {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = utf8_sequence_length(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

bool is_ascii(std::string_view text) noexcept {
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

// Hashing and equality of names under ASCII lower-casing, without copying them.
struct AsciiCaseHash {
  std::size_t operator()(std::string_view text) const noexcept {
    std::uint64_t hash = 0xcbf29ce484222325u;  // FNV-1a.
    for (const char c : text) {
      hash = (hash ^ static_cast<unsigned char>(ascii_lower(c))) * 0x100000001b3u;
    }
    return static_cast<std::size_t>(hash);
  }
};
struct AsciiCaseEqual {
  bool operator()(std::string_view a, std::string_view b) const noexcept {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
             return ascii_lower(x) == ascii_lower(y);
           });
  }
};

// The local header offset in a zip64 extra field of a central record whose 32-bit sizes `size`
// and `compressed` (sentinels or not) precede it there (APPNOTE 4.5.3).
std::optional<std::uint64_t> zip64_local_header_offset(ByteSpan extra, std::uint32_t size,
                                                       std::uint32_t compressed) noexcept {
  for (std::size_t at = 0; at + kExtraHeaderSize <= extra.size();) {
    const std::uint16_t id = load_le16(extra.data() + at);
    const std::size_t length = load_le16(extra.data() + at + 2);
    const ByteSpan data = extra.subspan(at + kExtraHeaderSize,
                                        std::min(length, extra.size() - at - kExtraHeaderSize));
    if (id == kExtraZip64) {
      const std::size_t skip = (size == kSentinel32 ? 8 : 0) + (compressed == kSentinel32 ? 8 : 0);
      if (data.size() < skip + 8) return std::nullopt;
      return load_le64(data.data() + skip);
    }
    at += kExtraHeaderSize + length;
  }
  return std::nullopt;
}

// Where the entry the central directory lists last starts, from its record, which ends where the
// directory ends: found by scanning back from there through the bytes `held` holds. For the read
// plan only, never trusted: a name or comment may hold what looks like a record.
std::optional<std::uint64_t> last_listed_local_header(const HeldBytes& held,
                                                      std::uint64_t directory_end) noexcept {
  constexpr std::uint64_t kLongestRecord = Central::kSize + 3 * std::uint64_t{0xFFFF};
  if (directory_end < held.start() + Central::kSize) return std::nullopt;
  const std::uint64_t lowest =
      std::max(held.start(), directory_end - std::min(directory_end, kLongestRecord));
  const ByteSpan bytes = held.at(lowest, directory_end - lowest);
  for (std::uint64_t pos = bytes.size() - Central::kSize + 1; pos-- > 0;) {
    const std::uint8_t* p = bytes.data() + pos;
    if (load_le32(p) != Central::kSignature) continue;
    const std::uint64_t name = load_le16(p + 28);
    const std::uint64_t extra = load_le16(p + 30);
    if (pos + Central::kSize + name + extra + load_le16(p + 32) != bytes.size()) continue;
    const std::uint32_t offset = load_le32(p + 42);
    if (offset != kSentinel32) return offset;
    return zip64_local_header_offset(bytes.subspan(pos + Central::kSize + name, extra),
                                     load_le32(p + 24), load_le32(p + 20));
  }
  return std::nullopt;
}

class CentralDirectoryReader final {
 public:
  CentralDirectoryReader(HeldBytes& held, const ArchiveEnd& end, const ZipPlaces& places,
                         const ZipReaderOptions& options)
      : held_(held), end_(end), places_(places), options_(options) {}

  CentralDirectory read();

 private:
  // A central directory record: its fixed part and where its variable parts are.
  struct CentralRecord {
    Central header;
    std::uint64_t offset = 0;
    ByteSpan name;
    ByteSpan extra;
    std::uint64_t extra_offset = 0;
    ByteSpan comment;
    std::uint64_t end = 0;  // Where the next record starts.
  };

  // The record that locates the central directory, for messages.
  const char* end_record_name() const {
    return end_.zip64 ? "zip64 end of central directory record" : "end of central directory record";
  }
  void add_finding(ZipFindingKind kind, const std::string& entry, std::uint64_t offset,
                   std::string message) {
    out_.findings.push_back({kind, entry, offset, std::move(message)});
  }
  // Checks the end records' offset, size and count of the central directory against each other
  // and the limits; returns where the directory ends.
  std::uint64_t check_directory_extent() const;
  void hold_directory(std::uint64_t directory_end);
  void hold_last_entry();
  // Reads the record at `position` into the next entry (central_index) and moves `position`
  // past it.
  void read_central_record(std::uint64_t& position, std::uint64_t directory_end,
                           std::size_t central_index);
  CentralRecord central_record_at(std::uint64_t offset, std::uint64_t directory_end) const;
  // `place` (a callable returning the entry's place for messages) runs only on failure.
  template <typename Place>
  void check_method(const Central& h, const Place& place) const;
  ZipEntry central_entry(const CentralRecord& record, std::size_t central_index) const;
  template <typename Place>
  void apply_central_zip64(ZipEntry& e, const Central& h, const std::optional<ExtraRecord>& zip64,
                           const Place& place) const;
  template <typename Place>
  void check_sizes(const ZipEntry& e, const Place& place) const;
  void note_central_findings(const ZipEntry& e, std::uint16_t flags);
  void check_name(std::string_view name, std::uint64_t offset) const;
  void note_case_only_duplicates();
  void order_entries();

  HeldBytes& held_;
  const ArchiveEnd& end_;
  const ZipPlaces& places_;
  const ZipReaderOptions& options_;
  CentralDirectory out_;
};

CentralDirectory CentralDirectoryReader::read() {
  const std::uint64_t directory_end = check_directory_extent();
  hold_directory(directory_end);
  const auto count = static_cast<std::size_t>(end_.entries);
  out_.entries.reserve(count);
  out_.by_name.reserve(count);
  out_.unknown_extras.resize(count);

  std::uint64_t position = end_.directory_offset;
  for (std::size_t i = 0; i < count; ++i) {
    if (position == directory_end) {
      places_.fail_at(ErrorCode::kCorrupt, end_record_name(), end_.tail_offset,
                      "counts " + std::to_string(count) +
                          " entries but the central directory ends after " + std::to_string(i) +
                          " records (offset " + std::to_string(position) + ")");
    }
    read_central_record(position, directory_end, i);
  }
  if (position != directory_end) {
    places_.fail_at(ErrorCode::kCorrupt, end_record_name(), end_.tail_offset,
                    "counts " + std::to_string(count) + " entries but " +
                        std::to_string(directory_end - position) +
                        " bytes of the central directory follow the last of them (offset " +
                        std::to_string(position) + ")");
  }
  note_case_only_duplicates();
  order_entries();
  hold_last_entry();
  return std::move(out_);
}

std::uint64_t CentralDirectoryReader::check_directory_extent() const {
  const char* const record = end_record_name();
  const std::uint64_t record_offset = end_.tail_offset;
  std::uint64_t directory_end = 0;
  if (__builtin_add_overflow(end_.directory_offset, end_.directory_size, &directory_end) ||
      directory_end != end_.tail_offset) {
    places_.fail_at(ErrorCode::kCorrupt, record, record_offset,
                    "the central directory at offset " + std::to_string(end_.directory_offset) +
                        " of " + std::to_string(end_.directory_size) +
                        " bytes does not end where the end records start (offset " +
                        std::to_string(end_.tail_offset) + ")");
  }
  // Never reserve from an unchecked count: each record is at least 46 bytes.
  const std::uint64_t most = end_.directory_size / Central::kSize;
  if (end_.entries > most) {
    places_.fail_at(
        ErrorCode::kCorrupt, record, record_offset,
        "counts " + std::to_string(end_.entries) + " entries but a central directory of " +
            std::to_string(end_.directory_size) + " bytes holds at most " + std::to_string(most));
  }
  if (end_.entries > options_.max_entries) {
    places_.fail_at(ErrorCode::kLimitExceeded, record, record_offset,
                    std::to_string(end_.entries) + " entries exceed the limit of " +
                        std::to_string(options_.max_entries) + " (ZipReaderOptions::max_entries)");
  }
  return directory_end;
}

// One read for the rest of the directory and, when the record it lists last tells where (as in an
// .onnxz, whose model is last), that entry's bytes before it.
void CentralDirectoryReader::hold_directory(std::uint64_t directory_end) {
  const std::uint64_t offset = end_.directory_offset;
  if (held_.holds(offset, directory_end - offset)) return;
  std::uint64_t from = offset;
  const std::optional<std::uint64_t> last = last_listed_local_header(held_, directory_end);
  if (last && *last < offset && offset - *last <= kMaxHeldLastEntry) from = *last;
  held_.hold_from(from);
}

// The last entry's bytes, when the directory's read did not bring them (the last entry in the
// file is not the one listed last, or its bytes are more than the first read held), with those of
// the entries directly before it that the caller holds with it.
void CentralDirectoryReader::hold_last_entry() {
  if (out_.entries.empty()) return;
  const std::vector<std::string>& with_last = options_.held_with_last;
  std::size_t first = out_.entries.size() - 1;
  while (first > 0 && std::find(with_last.begin(), with_last.end(), out_.entries[first - 1].name) !=
                          with_last.end()) {
    --first;
  }
  const std::uint64_t offset = out_.entries[first].local_header_offset;
  const std::uint64_t directory = end_.directory_offset;
  if (offset < directory && directory - offset <= kMaxHeldLastEntry) held_.hold_from(offset);
}

void CentralDirectoryReader::read_central_record(std::uint64_t& position,
                                                 std::uint64_t directory_end,
                                                 std::size_t central_index) {
  const CentralRecord record = central_record_at(position, directory_end);
  position = record.end;
  const std::string_view name = as_chars(record.name);
  // Messages are built only when needed: open must stay cheap for millions of entries.
  const auto place = [&] { return places_.central_place(name, record.offset); };
  check_name(name, record.offset);
  check_method(record.header, place);
  const std::optional<ExtraRecord> zip64 = read_extra_field(
      places_, record.extra, record.extra_offset, place, "", &out_.unknown_extras[central_index]);
  ZipEntry e = central_entry(record, central_index);
  apply_central_zip64(e, record.header, zip64, place);
  check_sizes(e, place);
  const auto [it, inserted] = out_.by_name.emplace(name, central_index);
  if (!inserted) {
    places_.fail(ErrorCode::kCorrupt, place(),
                 "duplicate name: the central directory record at offset " +
                     std::to_string(out_.entries[it->second].central_header_offset) +
                     " has the same name");
  }
  note_central_findings(e, record.header.flags);
  out_.entries.push_back(std::move(e));
}

CentralDirectoryReader::CentralRecord CentralDirectoryReader::central_record_at(
    std::uint64_t offset, std::uint64_t directory_end) const {
  const Central h =
      with_error_context([&] { return places_.file_place(); },
                         [&] { return Central::decode(held_.up_to(directory_end), offset); });
  const std::uint64_t variable = std::uint64_t{h.name_length} + h.extra_length + h.comment_length;
  if (!fits(offset + Central::kSize, variable, directory_end)) {
    places_.fail_at(ErrorCode::kCorrupt, "central directory record", offset,
                    "its name, extra field and comment (" + std::to_string(h.name_length) + " + " +
                        std::to_string(h.extra_length) + " + " + std::to_string(h.comment_length) +
                        " bytes) run past the end of the central directory at offset " +
                        std::to_string(directory_end));
  }
  const std::uint64_t name_offset = offset + Central::kSize;
  const std::uint64_t extra_offset = name_offset + h.name_length;
  return {h,
          offset,
          held_.at(name_offset, h.name_length),
          held_.at(extra_offset, h.extra_length),
          extra_offset,
          held_.at(extra_offset + h.extra_length, h.comment_length),
          name_offset + variable};
}

template <typename Place>
void CentralDirectoryReader::check_method(const Central& h, const Place& place) const {
  if ((h.flags & kEncryptionFlags) != 0 || h.method == kMethodAesEncrypted) {
    places_.fail(
        ErrorCode::kUnsupported, place(),
        "encrypted entry (flags " + hex(h.flags, 4) + ", method " + std::to_string(h.method) + ")");
  }
  if (h.method != kMethodStored && h.method != kMethodDeflated) {
    places_.fail(ErrorCode::kUnsupported, place(),
                 "compression method " + std::to_string(h.method) +
                     " (only stored (0) and deflate (8) are supported)");
  }
}

// The entry as the central directory record says, before zip64 values replace sentinels.
ZipEntry CentralDirectoryReader::central_entry(const CentralRecord& record,
                                               std::size_t central_index) const {
  const Central& h = record.header;
  ZipEntry e;
  e.name = std::string(as_chars(record.name));
  e.central_index = central_index;
  e.central_header_offset = record.offset;
  e.compressed_size = h.compressed_size;
  e.size = h.uncompressed_size;
  e.local_header_offset = h.local_header_offset;
  e.crc32 = h.crc32;
  e.method = h.method;
  e.flags = h.flags;
  e.version_made_by = h.version_made_by;
  e.version_needed = h.version_needed;
  e.modified_time = h.modified_time;
  e.modified_date = h.modified_date;
  e.internal_attributes = h.internal_attributes;
  e.external_attributes = h.external_attributes;
  e.has_data_descriptor = (h.flags & kFlagDataDescriptor) != 0;
  e.central_extra = record.extra;
  e.comment = record.comment;
  return e;
}

// The zip64 record holds exactly the values whose 32-bit (16-bit for the disk) field is the
// sentinel (APPNOTE 4.5.3).
template <typename Place>
void CentralDirectoryReader::apply_central_zip64(ZipEntry& e, const Central& h,
                                                 const std::optional<ExtraRecord>& zip64,
                                                 const Place& place) const {
  std::uint64_t disk = h.disk_number_start;
  const bool need_size = h.uncompressed_size == kSentinel32;
  const bool need_compressed = h.compressed_size == kSentinel32;
  const bool need_offset = h.local_header_offset == kSentinel32;
  const bool need_disk = h.disk_number_start == kSentinel16;
  if (zip64) {
    e.zip64 = true;
    const Zip64Extra z = with_error_context(place, [&] {
      return Zip64Extra::decode(zip64->data, need_size, need_compressed, need_offset, need_disk,
                                "extra field");
    });
    if (z.uncompressed_size) e.size = *z.uncompressed_size;
    if (z.compressed_size) e.compressed_size = *z.compressed_size;
    if (z.local_header_offset) e.local_header_offset = *z.local_header_offset;
    if (z.disk_number_start) disk = *z.disk_number_start;
  } else if (need_size || need_compressed || need_offset) {
    places_.fail(
        ErrorCode::kCorrupt, place(),
        "a size or offset holds the zip64 sentinel 0xffffffff but there is no zip64 extra field");
  }
  if (disk != 0) {
    places_.fail(ErrorCode::kUnsupported, place(),
                 "multi-disk archive (the entry starts on disk " + std::to_string(disk) + ")");
  }
}

template <typename Place>
void CentralDirectoryReader::check_sizes(const ZipEntry& e, const Place& place) const {
  if (e.is_stored() && e.compressed_size != e.size) {
    places_.fail(ErrorCode::kCorrupt, place(),
                 "stored entry with compressed size " + std::to_string(e.compressed_size) +
                     " but uncompressed size " + std::to_string(e.size));
  }
  if (e.is_deflated() && e.size / kMaxDeflateRatio > e.compressed_size) {
    places_.fail(ErrorCode::kCorrupt, place(),
                 "deflated entry claims " + std::to_string(e.size) + " bytes from " +
                     std::to_string(e.compressed_size) +
                     " compressed bytes, beyond deflate's 1032:1 limit");
  }
}

void CentralDirectoryReader::note_central_findings(const ZipEntry& e, std::uint16_t flags) {
  const std::uint64_t offset = e.central_header_offset;
  if ((flags & kFlagUtf8) == 0 && !is_ascii(e.name)) {
    add_finding(ZipFindingKind::kNameEncoding, e.name, offset,
                "non-ASCII name without the UTF-8 flag (bit 11)");
  } else if ((flags & kFlagUtf8) != 0 && !is_valid_utf8(e.name)) {
    add_finding(ZipFindingKind::kNameEncoding, e.name, offset,
                "name is not valid UTF-8 despite the UTF-8 flag (bit 11)");
  }
  if (e.is_directory()) {
    add_finding(ZipFindingKind::kDirectory, e.name, offset, "directory entry");
  }
  if (!e.comment.empty()) {
    add_finding(ZipFindingKind::kEntryComment, e.name, offset,
                "entry comment of " + std::to_string(e.comment.size()) + " bytes");
  }
}

// Names that could escape the extraction folder, or that no file system can hold, are refused.
void CentralDirectoryReader::check_name(std::string_view name, std::uint64_t offset) const {
  const auto place = [&] { return places_.central_place(name, offset); };
  if (name.empty()) places_.fail(ErrorCode::kCorrupt, place(), "empty entry name");
  if (name.find('\0') != std::string_view::npos) {
    places_.fail(ErrorCode::kCorrupt, place(), "entry name contains a NUL byte");
  }
  if (name.find('\\') != std::string_view::npos) {
    places_.fail(ErrorCode::kCorrupt, place(), "entry name contains a backslash");
  }
  if (name.front() == '/') places_.fail(ErrorCode::kCorrupt, place(), "absolute entry name");
  if (name.size() >= 2 && name[1] == ':' && is_ascii_letter(name.front())) {
    places_.fail(ErrorCode::kCorrupt, place(), "entry name starts with a drive letter");
  }
  std::size_t start = 0;
  while (start <= name.size()) {
    const std::size_t slash = std::min(name.find('/', start), name.size());
    if (name.substr(start, slash - start) == "..") {
      places_.fail(ErrorCode::kCorrupt, place(), "entry name has a '..' path component");
    }
    start = slash + 1;
  }
}

// Case-only duplicates (a problem on case-insensitive file systems, not for ZIP).
void CentralDirectoryReader::note_case_only_duplicates() {
  const std::vector<ZipEntry>& entries = out_.entries;
  std::unordered_map<std::string_view, std::size_t, AsciiCaseHash, AsciiCaseEqual> lowered;
  lowered.reserve(entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const ZipEntry& e = entries[i];
    const auto [it, inserted] = lowered.emplace(e.name, i);
    if (!inserted) {
      const ZipEntry& other = entries[it->second];
      add_finding(ZipFindingKind::kCaseOnlyDuplicate, e.name, e.local_header_offset,
                  "name " + quote(e.name) + " differs only in case from " + quote(other.name) +
                      " (local header at offset " + std::to_string(other.local_header_offset) +
                      ")");
    }
  }
}

void CentralDirectoryReader::order_entries() {
  std::vector<ZipEntry>& entries = out_.entries;
  const auto file_order = [](const ZipEntry& a, const ZipEntry& b) {
    return a.local_header_offset != b.local_header_offset
               ? a.local_header_offset < b.local_header_offset
               : a.central_index < b.central_index;
  };
  // Writers usually list the central directory in file order already.
  if (!std::is_sorted(entries.begin(), entries.end(), file_order)) {
    std::sort(entries.begin(), entries.end(), file_order);
  }
  std::vector<std::size_t> file_index(entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    entries[i].index = i;
    file_index[entries[i].central_index] = i;
  }
  for (auto& [name, index] : out_.by_name) index = file_index[index];
}

}  // namespace

CentralDirectory read_central_directory(HeldBytes& held, const ArchiveEnd& end,
                                        const ZipPlaces& places, const ZipReaderOptions& options) {
  return CentralDirectoryReader(held, end, places, options).read();
}

}  // namespace onnxzip::zip
