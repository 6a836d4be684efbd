// The central directory of a ZIP archive: its records, read into entries, their names checked,
// and the entries put in file order (APPNOTE 4.3.12, 4.4, 4.5).
#include <algorithm>
#include <string>
#include <unordered_map>

#include "zip_parser.h"

namespace onnxzip {
namespace {

using detail::ascii_lower;
using detail::hex;
using detail::is_ascii_letter;
using detail::quote;
using detail::utf8_sequence_length;
using zip::as_chars;
using zip::kEncryptionFlags;
using zip::kMaxDeflateRatio;
using zip::with_context;

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

}  // namespace

void ZipReader::Parser::read_central_directory() {
  const Directory& d = directory_;
  const std::uint64_t directory_end = check_directory_extent();
  r_.central_directory_offset_ = d.offset;
  r_.central_directory_size_ = d.size;
  const auto count = static_cast<std::size_t>(d.entries);
  r_.entries_.reserve(count);
  r_.by_name_.reserve(count);
  unknown_extras_.resize(count);

  std::uint64_t position = d.offset;
  for (std::size_t i = 0; i < count; ++i) {
    if (position == directory_end) {
      fail_at(ErrorCode::kCorrupt, end_record_name(), r_.tail_offset_,
              "counts " + std::to_string(count) + " entries but the central directory ends after " +
                  std::to_string(i) + " records (offset " + std::to_string(position) + ")");
    }
    read_central_record(position, directory_end, i);
  }
  if (position != directory_end) {
    fail_at(ErrorCode::kCorrupt, end_record_name(), r_.tail_offset_,
            "counts " + std::to_string(count) + " entries but " +
                std::to_string(directory_end - position) +
                " bytes of the central directory follow the last of them (offset " +
                std::to_string(position) + ")");
  }
  note_case_only_duplicates();
}

std::uint64_t ZipReader::Parser::check_directory_extent() const {
  const Directory& d = directory_;
  const char* const record = end_record_name();
  const std::uint64_t record_offset = r_.tail_offset_;
  std::uint64_t directory_end = 0;
  if (__builtin_add_overflow(d.offset, d.size, &directory_end) ||
      directory_end != r_.tail_offset_) {
    fail_at(ErrorCode::kCorrupt, record, record_offset,
            "the central directory at offset " + std::to_string(d.offset) + " of " +
                std::to_string(d.size) +
                " bytes does not end where the end records start (offset " +
                std::to_string(r_.tail_offset_) + ")");
  }
  // Never reserve from an unchecked count: each record is at least 46 bytes.
  const std::uint64_t most = d.size / zip::CentralDirectoryHeader::kSize;
  if (d.entries > most) {
    fail_at(ErrorCode::kCorrupt, record, record_offset,
            "counts " + std::to_string(d.entries) + " entries but a central directory of " +
                std::to_string(d.size) + " bytes holds at most " + std::to_string(most));
  }
  if (d.entries > r_.options_.max_entries) {
    fail_at(ErrorCode::kLimitExceeded, record, record_offset,
            std::to_string(d.entries) + " entries exceed the limit of " +
                std::to_string(r_.options_.max_entries) + " (ZipReaderOptions::max_entries)");
  }
  return directory_end;
}

// Case-only duplicates (a problem on case-insensitive file systems, not for ZIP).
void ZipReader::Parser::note_case_only_duplicates() {
  const std::vector<ZipEntry>& entries = r_.entries_;
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

void ZipReader::Parser::read_central_record(std::uint64_t& position, std::uint64_t directory_end,
                                            std::size_t central_index) {
  const CentralRecord record = central_record_at(position, directory_end);
  position = record.end;
  const std::string_view name = as_chars(record.name);
  // Messages are built only when needed: open must stay cheap for millions of entries.
  const auto place = [&] { return central_place(name, record.offset); };
  check_name(name, record.offset);
  check_method(record.header, place);
  const std::optional<zip::ExtraRecord> zip64 =
      read_extra_field(record.extra, record.extra_offset, central_index, place, "");
  ZipEntry e = central_entry(record, central_index);
  apply_central_zip64(e, record.header, zip64, place);
  check_sizes(e, place);
  const auto [it, inserted] = r_.by_name_.emplace(name, central_index);
  if (!inserted) {
    fail(ErrorCode::kCorrupt, place(),
         "duplicate name: the central directory record at offset " +
             std::to_string(r_.entries_[it->second].central_header_offset) + " has the same name");
  }
  note_central_findings(e, record.header.flags);
  r_.entries_.push_back(std::move(e));
}

ZipReader::Parser::CentralRecord ZipReader::Parser::central_record_at(
    std::uint64_t offset, std::uint64_t directory_end) const {
  using Central = zip::CentralDirectoryHeader;
  const ByteSpan directory = file_.first(static_cast<std::size_t>(directory_end));
  const Central h = with_context([&] { return r_.source_name_; },
                                 [&] { return Central::decode(directory, offset); });
  const std::uint64_t variable = std::uint64_t{h.name_length} + h.extra_length + h.comment_length;
  if (!fits(offset + Central::kSize, variable, directory_end)) {
    fail_at(ErrorCode::kCorrupt, "central directory record", offset,
            "its name, extra field and comment (" + std::to_string(h.name_length) + " + " +
                std::to_string(h.extra_length) + " + " + std::to_string(h.comment_length) +
                " bytes) run past the end of the central directory at offset " +
                std::to_string(directory_end));
  }
  const std::uint64_t name_offset = offset + Central::kSize;
  const std::uint64_t extra_offset = name_offset + h.name_length;
  return {h,
          offset,
          file_.subspan(name_offset, h.name_length),
          file_.subspan(extra_offset, h.extra_length),
          extra_offset,
          file_.subspan(extra_offset + h.extra_length, h.comment_length),
          name_offset + variable};
}

template <typename Place>
void ZipReader::Parser::check_method(const zip::CentralDirectoryHeader& h,
                                     const Place& place) const {
  if ((h.flags & kEncryptionFlags) != 0 || h.method == zip::kMethodAesEncrypted) {
    fail(
        ErrorCode::kUnsupported, place(),
        "encrypted entry (flags " + hex(h.flags, 4) + ", method " + std::to_string(h.method) + ")");
  }
  if (h.method != zip::kMethodStored && h.method != zip::kMethodDeflated) {
    fail(ErrorCode::kUnsupported, place(),
         "compression method " + std::to_string(h.method) +
             " (only stored (0) and deflate (8) are supported)");
  }
}

// The entry as the central directory record says, before zip64 values replace sentinels.
ZipEntry ZipReader::Parser::central_entry(const CentralRecord& record,
                                          std::size_t central_index) const {
  const zip::CentralDirectoryHeader& h = record.header;
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
  e.has_data_descriptor = (h.flags & zip::kFlagDataDescriptor) != 0;
  e.central_extra = record.extra;
  e.comment = record.comment;
  return e;
}

// The zip64 record holds exactly the values whose 32-bit (16-bit for the disk) field is the
// sentinel (APPNOTE 4.5.3).
template <typename Place>
void ZipReader::Parser::apply_central_zip64(ZipEntry& e, const zip::CentralDirectoryHeader& h,
                                            const std::optional<zip::ExtraRecord>& zip64,
                                            const Place& place) const {
  std::uint64_t disk = h.disk_number_start;
  const bool need_size = h.uncompressed_size == zip::kSentinel32;
  const bool need_compressed = h.compressed_size == zip::kSentinel32;
  const bool need_offset = h.local_header_offset == zip::kSentinel32;
  const bool need_disk = h.disk_number_start == zip::kSentinel16;
  if (zip64) {
    e.zip64 = true;
    const zip::Zip64Extra z = with_context(place, [&] {
      return zip::Zip64Extra::decode(zip64->data, need_size, need_compressed, need_offset,
                                     need_disk, "extra field");
    });
    if (z.uncompressed_size) e.size = *z.uncompressed_size;
    if (z.compressed_size) e.compressed_size = *z.compressed_size;
    if (z.local_header_offset) e.local_header_offset = *z.local_header_offset;
    if (z.disk_number_start) disk = *z.disk_number_start;
  } else if (need_size || need_compressed || need_offset) {
    fail(ErrorCode::kCorrupt, place(),
         "a size or offset holds the zip64 sentinel 0xffffffff but there is no zip64 extra field");
  }
  if (disk != 0) {
    fail(ErrorCode::kUnsupported, place(),
         "multi-disk archive (the entry starts on disk " + std::to_string(disk) + ")");
  }
}

template <typename Place>
void ZipReader::Parser::check_sizes(const ZipEntry& e, const Place& place) const {
  if (e.is_stored() && e.compressed_size != e.size) {
    fail(ErrorCode::kCorrupt, place(),
         "stored entry with compressed size " + std::to_string(e.compressed_size) +
             " but uncompressed size " + std::to_string(e.size));
  }
  if (e.is_deflated() && e.size / kMaxDeflateRatio > e.compressed_size) {
    fail(ErrorCode::kCorrupt, place(),
         "deflated entry claims " + std::to_string(e.size) + " bytes from " +
             std::to_string(e.compressed_size) +
             " compressed bytes, beyond deflate's 1032:1 limit");
  }
}

void ZipReader::Parser::note_central_findings(const ZipEntry& e, std::uint16_t flags) {
  const std::uint64_t offset = e.central_header_offset;
  if ((flags & zip::kFlagUtf8) == 0 && !is_ascii(e.name)) {
    add_finding(ZipFindingKind::kNameEncoding, e.name, offset,
                "non-ASCII name without the UTF-8 flag (bit 11)");
  } else if ((flags & zip::kFlagUtf8) != 0 && !is_valid_utf8(e.name)) {
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
void ZipReader::Parser::check_name(std::string_view name, std::uint64_t offset) const {
  const auto place = [&] { return central_place(name, offset); };
  if (name.empty()) fail(ErrorCode::kCorrupt, place(), "empty entry name");
  if (name.find('\0') != std::string_view::npos) {
    fail(ErrorCode::kCorrupt, place(), "entry name contains a NUL byte");
  }
  if (name.find('\\') != std::string_view::npos) {
    fail(ErrorCode::kCorrupt, place(), "entry name contains a backslash");
  }
  if (name.front() == '/') fail(ErrorCode::kCorrupt, place(), "absolute entry name");
  const char first = name.front();
  if (name.size() >= 2 && name[1] == ':' && is_ascii_letter(first)) {
    fail(ErrorCode::kCorrupt, place(), "entry name starts with a drive letter");
  }
  std::size_t start = 0;
  while (start <= name.size()) {
    const std::size_t slash = std::min(name.find('/', start), name.size());
    if (name.substr(start, slash - start) == "..") {
      fail(ErrorCode::kCorrupt, place(), "entry name has a '..' path component");
    }
    start = slash + 1;
  }
}

void ZipReader::Parser::note_unknown_extras(const std::vector<zip::ExtraRecord>& records,
                                            std::vector<std::uint16_t>& unknown) const {
  for (const zip::ExtraRecord& record : records) {
    if (record.id == zip::kExtraZip64 || record.id == zip::kExtraAlignment) continue;
    if (std::find(unknown.begin(), unknown.end(), record.id) == unknown.end()) {
      unknown.push_back(record.id);
    }
  }
}

void ZipReader::Parser::order_entries() {
  std::vector<ZipEntry>& entries = r_.entries_;
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
  for (auto& [name, index] : r_.by_name_) index = file_index[index];
}

}  // namespace onnxzip
