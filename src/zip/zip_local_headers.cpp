// The local headers of a ZIP archive's entries, checked against their central records, read
// ahead on a second thread, and the data descriptors after their data (APPNOTE 4.3.7 to 4.3.9).
#include <unistd.h>

#include <algorithm>
#include <iterator>
#include <string>
#include <system_error>
#include <thread>

#include "little_endian.h"
#include "zip_parser.h"

namespace onnxzip {
namespace {

using detail::hex;
using detail::load_le32;
using detail::load_le64;
using detail::quote;
using zip::as_chars;
using zip::kLocalHeaderChunk;
using zip::kMaxLocalHeaderCopies;
using zip::kPrefetchMinEntries;
using zip::kStructuralFlags;
using zip::kWantedAlignment;

}  // namespace

void ZipReader::Parser::read_local_headers() {
  std::vector<ZipEntry>& entries = r_.entries_;
  const std::uint64_t directory = r_.central_directory_offset_;
  if (entries.empty()) {
    if (directory > 0) {
      add_finding(ZipFindingKind::kGap, "", 0,
                  std::to_string(directory) +
                      " bytes before the central directory belong to no "
                      "entry");
    }
    return;
  }
  const ZipEntry& last = entries.back();
  if (last.local_header_offset >= directory) {
    fail(ErrorCode::kCorrupt, central_place(last.name, last.central_header_offset),
         "local header offset " + std::to_string(last.local_header_offset) +
             " is not before the central directory at offset " + std::to_string(directory));
  }
  if (entries.front().local_header_offset > 0) {
    add_finding(ZipFindingKind::kGap, "", 0,
                std::to_string(entries.front().local_header_offset) +
                    " bytes before the first local header belong to no entry");
  }
  // The entries before `first` keep what their central records say (LocalHeaderScope::kTail).
  const std::size_t first =
      r_.options_.local_headers == LocalHeaderScope::kTail && entries.size() > 2
          ? entries.size() - 2
          : 0;
  if (first == 0) prefetch_local_headers();
  for (std::size_t i = 0; i < entries.size(); ++i) {
    ZipEntry& e = entries[i];
    const ZipEntry* const next = i + 1 < entries.size() ? &entries[i + 1] : nullptr;
    if (next != nullptr && next->local_header_offset == e.local_header_offset) {
      fail(ErrorCode::kCorrupt, local_place(e),
           "shares its local header with entry " + quote(next->name) + " (overlapping entries)");
    }
    if (i >= first) read_local_header(e, next);
  }
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto& unknown = unknown_extras_[entries[i].central_index];
    if (unknown.empty()) continue;
    std::string ids;
    for (const std::uint16_t id : unknown) ids += (ids.empty() ? "" : ", ") + hex(id, 4);
    add_finding(ZipFindingKind::kUnknownExtraField, entries[i].name, entries[i].local_header_offset,
                "extra fields this reader ignores: " + ids);
  }
}

void ZipReader::Parser::read_local_header(ZipEntry& e, const ZipEntry* next) {
  using Local = zip::LocalFileHeader;
  const auto place = [&] { return local_place(e); };
  const LocalRecord record = local_record_of(e, next);
  const Local& h = record.header;
  check_local_agrees(e, h, as_chars(record.bytes.subspan(Local::kSize, h.name_length)));
  const std::uint64_t extra_offset = e.local_header_offset + Local::kSize + h.name_length;
  e.local_extra = record.bytes.subspan(Local::kSize + h.name_length, h.extra_length);
  const std::optional<zip::ExtraRecord> zip64 =
      read_extra_field(e.local_extra, extra_offset, e.central_index, place, " in the local header");
  if (zip64) e.zip64 = true;
  compare_local_sizes(e, h, local_sizes(h, zip64, place));
  if (h.modified_time != e.modified_time || h.modified_date != e.modified_date) {
    add_finding(ZipFindingKind::kHeaderMismatch, e.name, e.local_header_offset,
                "local and central modification time/date differ (" + hex(h.modified_date, 4) +
                    "/" + hex(h.modified_time, 4) + " vs " + hex(e.modified_date, 4) + "/" +
                    hex(e.modified_time, 4) + ")");
  }
  e.data_offset = e.local_header_offset + record.bytes.size();
  locate_entry_data(e, next);
  e.local_header_read = true;
}

ZipReader::Parser::LocalRecord ZipReader::Parser::local_record_of(const ZipEntry& e,
                                                                  const ZipEntry* next) {
  using Local = zip::LocalFileHeader;
  const std::uint64_t limit = limit_of(next);
  const auto place = [&] { return local_place(e); };
  const std::uint64_t offset = e.local_header_offset;
  if (!fits(offset, Local::kSize, limit)) {
    fail(ErrorCode::kCorrupt, place(), "the 30-byte local header runs into " + limit_text(next));
  }
  // The fixed part, the name and (usually) the whole extra field in one read.
  ByteSpan header = e.index < prefetched_.size() && !prefetched_[e.index].empty()
                        ? prefetched_[e.index]
                        : local_bytes(offset, first_read_size(e, next));
  if (load_le32(header.data()) != Local::kSignature) {
    fail(ErrorCode::kCorrupt, place(),
         "local file header at offset " + std::to_string(offset) + ": bad signature " +
             hex(load_le32(header.data()), 8));
  }
  const Local h = Local::decode(header, 0);
  const std::uint64_t header_size = Local::kSize + h.name_length + h.extra_length;
  if (offset + header_size > limit) {
    fail(ErrorCode::kCorrupt, place(),
         "the local name and extra field (" + std::to_string(h.name_length) + " + " +
             std::to_string(h.extra_length) + " bytes) run into " + limit_text(next));
  }
  if (header.size() < header_size) header = local_bytes(offset, header_size);
  return {h, header.first(static_cast<std::size_t>(header_size))};
}

// Name, method and the flags that change how the entry is read must match the central record.
void ZipReader::Parser::check_local_agrees(const ZipEntry& e, const zip::LocalFileHeader& h,
                                           std::string_view local_name) const {
  if (local_name != e.name) {
    fail(ErrorCode::kCorrupt, local_place(e),
         "the local header names the entry " + quote(local_name) + ", the central directory " +
             quote(e.name));
  }
  if (h.method != e.method) {
    fail(ErrorCode::kCorrupt, local_place(e),
         "the local header says compression method " + std::to_string(h.method) +
             ", the central directory " + std::to_string(e.method));
  }
  if ((h.flags & kStructuralFlags) != (e.flags & kStructuralFlags)) {
    fail(ErrorCode::kCorrupt, local_place(e),
         "the local header flags " + hex(h.flags, 4) + " and the central directory flags " +
             hex(e.flags, 4) + " disagree on bits 0, 3, 6 or 13");
  }
}

template <typename Place>
ZipReader::Parser::LocalSizes ZipReader::Parser::local_sizes(
    const zip::LocalFileHeader& h, const std::optional<zip::ExtraRecord>& zip64,
    const Place& place) const {
  LocalSizes sizes{h.compressed_size, h.uncompressed_size};
  std::uint64_t& compressed = sizes.compressed;
  std::uint64_t& size = sizes.uncompressed;
  if (compressed != zip::kSentinel32 && size != zip::kSentinel32) return sizes;
  if (!zip64) {
    fail(ErrorCode::kCorrupt, place(),
         "a local size holds the zip64 sentinel 0xffffffff but there is no zip64 extra field");
  }
  // APPNOTE 4.5.3 wants both sizes in the local zip64 field; some writers store only the
  // one whose 32-bit field overflowed, which is unambiguous when just one is the sentinel.
  const ByteSpan data = zip64->data;
  if (data.size() >= 16) {
    if (size == zip::kSentinel32) size = load_le64(data.data());
    if (compressed == zip::kSentinel32) compressed = load_le64(data.data() + 8);
  } else if (data.size() >= 8 && (size != zip::kSentinel32 || compressed != zip::kSentinel32)) {
    (size == zip::kSentinel32 ? size : compressed) = load_le64(data.data());
  } else {
    fail(ErrorCode::kCorrupt, place(),
         "the local zip64 extra field of " + std::to_string(data.size()) +
             " bytes is too short for the sizes");
  }
  return sizes;
}

void ZipReader::Parser::compare_local_sizes(const ZipEntry& e, const zip::LocalFileHeader& h,
                                            const LocalSizes& sizes) const {
  const auto compare = [&](const char* field, std::uint64_t local, std::uint64_t central,
                           bool as_hex) {
    if (local == central) return;
    // With a data descriptor, the local header may hold zeros instead (APPNOTE 4.4.4 bit 3).
    if (e.has_data_descriptor && local == 0) return;
    const auto show = [&](std::uint64_t v) {
      return as_hex ? hex(static_cast<std::uint32_t>(v), 8) : std::to_string(v);
    };
    fail(ErrorCode::kCorrupt, local_place(e),
         std::string("the local header says ") + field + " " + show(local) +
             ", the central directory " + show(central));
  };
  compare("CRC-32", h.crc32, e.crc32, true);
  compare("compressed size", sizes.compressed, e.compressed_size, false);
  compare("uncompressed size", sizes.uncompressed, e.size, false);
}

// Sets e.end_offset (after the data and its descriptor, if any) and notes what a reader of the
// entry's data should know.
void ZipReader::Parser::locate_entry_data(ZipEntry& e, const ZipEntry* next) {
  const std::uint64_t limit = limit_of(next);
  std::uint64_t data_end = 0;
  if (__builtin_add_overflow(e.data_offset, e.compressed_size, &data_end) || data_end > limit) {
    fail(ErrorCode::kCorrupt, local_place(e),
         "the data at offset " + std::to_string(e.data_offset) + " of " +
             std::to_string(e.compressed_size) + " bytes overlaps " + limit_text(next));
  }
  e.end_offset = e.has_data_descriptor ? read_data_descriptor(e, data_end, limit, next) : data_end;
  if (e.end_offset < limit) {
    add_finding(ZipFindingKind::kGap, e.name, e.end_offset,
                std::to_string(limit - e.end_offset) +
                    " bytes after the entry belong to no "
                    "entry");
  }
  if (e.is_deflated()) {
    add_finding(ZipFindingKind::kDeflated, e.name, e.local_header_offset,
                "deflated; not zero-copy");
  } else if (!e.is_directory() && e.alignment() < kWantedAlignment) {
    add_finding(ZipFindingKind::kUnaligned, e.name, e.data_offset,
                "data at offset " + std::to_string(e.data_offset) + " is aligned to only " +
                    std::to_string(e.alignment()) + " bytes");
  }
  if (e.has_data_descriptor) {
    add_finding(ZipFindingKind::kDataDescriptor, e.name, data_end,
                "data descriptor at offset " + std::to_string(data_end));
  }
}

// Bytes [offset, offset + size) of the archive (within it: the caller checked the limit). When
// the archive was opened from a path they are read with pread() into a copy the reader keeps,
// not through the mapping: touching one page per entry of a mapping costs a page fault that also
// maps the pages around it and a page table per 2 MiB of archive, all torn down again when the
// mapping goes. That made opening an archive of the same entries cost more the more bytes lay
// between them (1,000 entries: about 6 ms for 1 GiB, 8 ms for 4 GiB, against under 1 ms of
// pread). A failed or short read falls back to the mapping, which then reports what it finds.
ByteSpan ZipReader::Parser::local_bytes(std::uint64_t offset, std::uint64_t size) {
  const ByteSpan mapped =
      file_.subspan(static_cast<std::size_t>(offset), static_cast<std::size_t>(size));
  if (local_fd_ < 0 || local_copied_ + size > kMaxLocalHeaderCopies) return mapped;
  // Copies are packed into chunks that never grow past their reserved capacity, so a span into
  // one stays valid, and a thousand headers cost a few allocations rather than a thousand.
  std::vector<std::vector<std::uint8_t>>& chunks = header_copies();
  const std::size_t wanted = static_cast<std::size_t>(size);
  if (chunks.empty() || chunks.back().capacity() - chunks.back().size() < wanted) {
    chunks.emplace_back().reserve(std::max(wanted, kLocalHeaderChunk));
  }
  std::vector<std::uint8_t>& chunk = chunks.back();
  const std::size_t start = chunk.size();
  chunk.resize(start + wanted);
  const ssize_t n = ::pread(local_fd_, chunk.data() + start, wanted, static_cast<off_t>(offset));
  if (n < 0 || static_cast<std::uint64_t>(n) != size) {
    chunk.resize(start);
    return mapped;
  }
  local_copied_ += size;
  return ByteSpan(chunk.data() + start, wanted);
}

// Each local header costs a pread() of its own, about 1 us of system call, which made the reads
// the largest part of opening an archive of many tensors. So a second thread reads half of them:
// the entries' first reads (the sizes local_record_of asks for) go into one buffer before any is
// checked. A read that fails or comes up short is left to local_bytes, which then reports what
// it finds.
void ZipReader::Parser::prefetch_local_headers() {
  const std::vector<ZipEntry>& entries = r_.entries_;
  if (local_fd_ < 0 || entries.size() < kPrefetchMinEntries) return;
  struct Read {
    std::uint64_t offset = 0;
    std::size_t size = 0;  // 0: not fetched ahead.
    std::size_t at = 0;    // Where in the buffer.
  };
  std::vector<Read> reads(entries.size());
  std::size_t total = 0;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const ZipEntry& e = entries[i];
    const ZipEntry* const next = i + 1 < entries.size() ? &entries[i + 1] : nullptr;
    if (!fits(e.local_header_offset, zip::LocalFileHeader::kSize, limit_of(next))) continue;
    const std::uint64_t size = first_read_size(e, next);
    if (local_copied_ + total + size > kMaxLocalHeaderCopies) break;
    reads[i] = {e.local_header_offset, static_cast<std::size_t>(size), total};
    total += static_cast<std::size_t>(size);
  }
  std::vector<std::uint8_t>& buffer = header_copies().emplace_back(total);
  std::vector<std::uint8_t> complete(reads.size(), 0);  // Bytes, not bits: two threads write.
  const auto fetch = [&](std::size_t begin, std::size_t end) noexcept {
    for (std::size_t k = begin; k < end; ++k) {
      const Read& read = reads[k];
      if (read.size == 0) continue;
      const ssize_t n =
          ::pread(local_fd_, buffer.data() + read.at, read.size, static_cast<off_t>(read.offset));
      complete[k] = n >= 0 && static_cast<std::size_t>(n) == read.size;
    }
  };
  const std::size_t half = reads.size() / 2;
  try {
    const std::jthread helper(fetch, half, reads.size());
    fetch(0, half);
  } catch (const std::system_error&) {  // No second thread to be had: all on this one.
    fetch(0, reads.size());
  }
  prefetched_.assign(reads.size(), ByteSpan());
  for (std::size_t k = 0; k < reads.size(); ++k) {
    if (complete[k] != 0) prefetched_[k] = ByteSpan(buffer.data() + reads[k].at, reads[k].size);
  }
  local_copied_ += total;
}

// APPNOTE 4.3.9: the descriptor's signature is optional and its sizes are 8 bytes wide for
// zip64 entries; writers disagree on both, so every layout is tried and the one that matches
// the central record wins. None matching is a contradiction.
std::uint64_t ZipReader::Parser::read_data_descriptor(const ZipEntry& e, std::uint64_t at,
                                                      std::uint64_t limit,
                                                      const ZipEntry* next) const {
  struct Layout {
    bool signature;
    bool wide;
  };
  constexpr Layout kNarrowFirst[] = {{true, false}, {true, true}, {false, false}, {false, true}};
  constexpr Layout kWideFirst[] = {{true, true}, {true, false}, {false, true}, {false, false}};
  std::string seen;
  const Layout* const layouts = e.zip64 ? kWideFirst : kNarrowFirst;
  for (std::size_t k = 0; k < std::size(kNarrowFirst); ++k) {
    const Layout layout = layouts[k];
    const std::uint64_t size = (layout.signature ? 4 : 0) + 4 + (layout.wide ? 16 : 8);
    if (!fits(at, size, limit)) continue;
    const std::uint8_t* p = file_.data() + at;
    if (layout.signature) {
      if (load_le32(p) != zip::DataDescriptor::kSignature) continue;
      p += 4;
    }
    const std::uint32_t crc = load_le32(p);
    const std::uint64_t compressed = layout.wide ? load_le64(p + 4) : load_le32(p + 4);
    const std::uint64_t uncompressed = layout.wide ? load_le64(p + 12) : load_le32(p + 8);
    if (crc == e.crc32 && compressed == e.compressed_size && uncompressed == e.size) {
      return at + size;
    }
    if (seen.empty()) {
      seen = " (read CRC-32 " + hex(crc, 8) + ", sizes " + std::to_string(compressed) + "/" +
             std::to_string(uncompressed) + ")";
    }
  }
  fail(ErrorCode::kCorrupt, local_place(e),
       "no data descriptor at offset " + std::to_string(at) + " before " + limit_text(next) +
           " matches the central directory (CRC-32 " + hex(e.crc32, 8) + ", sizes " +
           std::to_string(e.compressed_size) + "/" + std::to_string(e.size) + ")" + seen);
}

}  // namespace onnxzip
