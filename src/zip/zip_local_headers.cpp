#include "zip_local_headers.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <iterator>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include "little_endian.h"
#include "onnxzip/internal/byte_source.h"
#include "onnxzip/internal/zip_reader.h"

namespace onnxzip::zip {
namespace {

using detail::hex;
using detail::load_le32;
using detail::load_le64;
using detail::quote;
using Local = LocalFileHeader;

// Bytes read past a local header's name in one read, enough for a zip64 record and the
// alignment record of A = 64; a longer extra field takes a second read.
constexpr std::uint64_t kLocalExtraGuess = 128;
// Local headers copied in all; past this (only hostile archives get there: padding records of
// up to 64 KiB per entry), the rest of a mapped archive's are read through the mapping.
constexpr std::uint64_t kMaxLocalHeaderCopies = std::uint64_t{64} << 20;
// The local header copies are packed into buffers of this size (see LocalHeaderPass::bytes).
constexpr std::size_t kLocalHeaderChunk = std::size_t{64} << 10;
// Archives with fewer entries read their local headers on one thread: starting a second one
// costs about as much as a hundred reads.
constexpr std::size_t kPrefetchMinEntries = 256;

std::atomic<bool> g_prefetch{true};  // The test seam's switch.

// The open's pass over the local headers: where their bytes come from, and the copies it makes.
class LocalHeaderPass final {
 public:
  LocalHeaderPass(std::vector<ZipEntry>& entries, std::uint64_t directory_offset,
                  const HeldBytes& held, const ZipPlaces& places, UnknownExtras& unknown_extras,
                  std::vector<ZipFinding>& findings, LocalHeaderCopies& copies)
      : entries_(entries),
        held_(held),
        places_(places),
        copies_(copies),
        reader_(
            places, directory_offset,
            [this](std::uint64_t offset, std::uint64_t size) { return bytes(offset, size); },
            &findings, &unknown_extras) {}

  // Reads the headers of the entries from `first` on (file order).
  void run(std::size_t first);

 private:
  ByteSpan bytes(std::uint64_t offset, std::uint64_t size);
  // Room for `size` more bytes of copies, in a buffer that keeps its address.
  MutableByteSpan copy_space(std::size_t size);
  void prefetch();

  std::vector<ZipEntry>& entries_;
  const HeldBytes& held_;
  const ZipPlaces& places_;
  LocalHeaderCopies& copies_;
  LocalHeaderReader reader_;
  std::uint64_t copied_ = 0;
  // Per entry (file order), its local header's first bytes read ahead, or an empty span; and
  // the Error the read ahead met instead, if any.
  std::vector<ByteSpan> prefetched_;
  std::vector<std::exception_ptr> prefetch_failures_;
};

void LocalHeaderPass::run(std::size_t first) {
  if (first == 0 && g_prefetch.load(std::memory_order_relaxed)) prefetch();
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    ZipEntry& e = entries_[i];
    const ZipEntry* const next = i + 1 < entries_.size() ? &entries_[i + 1] : nullptr;
    if (next != nullptr && next->local_header_offset == e.local_header_offset) {
      places_.fail(
          ErrorCode::kCorrupt, places_.local_place(e),
          "shares its local header with entry " + quote(next->name) + " (overlapping entries)");
    }
    if (i < first) continue;
    // The read ahead's failure, met where the plain pass would have met it.
    if (i < prefetch_failures_.size() && prefetch_failures_[i]) {
      std::rethrow_exception(prefetch_failures_[i]);
    }
    reader_.read(e, next, i < prefetched_.size() ? prefetched_[i] : ByteSpan());
  }
}

// Bytes [offset, offset + size) of the archive (within it: the caller checked the limit): in
// place when they are in memory, or held in the tail read of a source that reads ranges; else
// copied (ByteSource::read_into), which for a mapped archive costs less than touching the
// mapping's pages (byte_source.h).
ByteSpan LocalHeaderPass::bytes(std::uint64_t offset, std::uint64_t size) {
  if (held_.holds(offset, size)) return held_.at(offset, size);
  const ByteSource& source = held_.source();
  if (source.access() == ByteSource::Access::kMapped && copied_ + size > kMaxLocalHeaderCopies) {
    // Below the tail the file never changes (spec §9.6), so these may stay in the mapping.
    return source.bytes().subspan(static_cast<std::size_t>(offset), static_cast<std::size_t>(size));
  }
  const MutableByteSpan copy = copy_space(static_cast<std::size_t>(size));
  held_.source().read_into(offset, copy);
  copied_ += size;
  return copy;
}

MutableByteSpan LocalHeaderPass::copy_space(std::size_t size) {
  // Chunks never grow past their reserved capacity, so a span into one stays valid, and a
  // thousand headers cost a few allocations rather than a thousand.
  if (copies_.empty() || copies_.back().capacity() - copies_.back().size() < size) {
    copies_.emplace_back().reserve(std::max(size, kLocalHeaderChunk));
  }
  std::vector<std::uint8_t>& chunk = copies_.back();
  const std::size_t start = chunk.size();
  chunk.resize(start + size);
  return MutableByteSpan(chunk.data() + start, size);
}

// The fast path of the open's pass, whose plain twin is run() without it (the test seam
// set_local_header_prefetch_for_testing; zip_reader_test compares the two): each local header
// copied costs a system call of its own, the largest part of opening an archive of many
// tensors, so a second thread reads half of them: the entries' first reads (first_read_size) go
// into one buffer before any is checked. A read that fails keeps its Error for run() to throw
// at that entry, where the plain pass would have met it.
void LocalHeaderPass::prefetch() {
  const ByteSource& source = held_.source();
  if (source.access() == ByteSource::Access::kInMemory || entries_.size() < kPrefetchMinEntries) {
    return;
  }
  struct Read {
    std::uint64_t offset = 0;
    std::size_t size = 0;  // 0: not fetched ahead.
    std::size_t at = 0;    // Where in the buffer.
  };
  std::vector<Read> reads(entries_.size());
  std::size_t total = 0;
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    const ZipEntry& e = entries_[i];
    const ZipEntry* const next = i + 1 < entries_.size() ? &entries_[i + 1] : nullptr;
    if (!fits(e.local_header_offset, Local::kSize, reader_.limit_of(next))) continue;
    const std::uint64_t size = reader_.first_read_size(e, next);
    if (held_.holds(e.local_header_offset, size)) continue;
    if (copied_ + total + size > kMaxLocalHeaderCopies) break;
    reads[i] = {e.local_header_offset, static_cast<std::size_t>(size), total};
    total += static_cast<std::size_t>(size);
  }
  std::vector<std::uint8_t>& buffer = copies_.emplace_back(total);
  std::vector<std::uint8_t> complete(reads.size(), 0);  // Bytes, not bits: two threads write.
  prefetch_failures_.assign(reads.size(), nullptr);
  const auto fetch = [&](std::size_t begin, std::size_t end) noexcept {
    for (std::size_t k = begin; k < end; ++k) {
      const Read& read = reads[k];
      if (read.size == 0) continue;
      try {
        source.read_into(read.offset, MutableByteSpan(buffer.data() + read.at, read.size));
        complete[k] = 1;
      } catch (const Error&) {
        prefetch_failures_[k] = std::current_exception();
      }
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
  copied_ += total;
}

}  // namespace

std::uint64_t LocalHeaderReader::first_read_size(const ZipEntry& e,
                                                 const ZipEntry* next) const noexcept {
  return std::min<std::uint64_t>(limit_of(next) - e.local_header_offset,
                                 Local::kSize + e.name.size() + kLocalExtraGuess);
}

std::uint64_t LocalHeaderReader::reach(const ZipEntry& e, const ZipEntry* next) const noexcept {
  const std::uint64_t limit = limit_of(next);
  const std::uint64_t room = limit - e.local_header_offset;
  // A local name of another length than the central one is refused, but only once it is read.
  const std::uint64_t most = Local::kSize + 2 * std::uint64_t{0xFFFF} + kMaxDataDescriptorSize;
  return e.local_header_offset + (e.compressed_size >= room || most >= room - e.compressed_size
                                      ? room
                                      : most + e.compressed_size);
}

std::string LocalHeaderReader::limit_text(const ZipEntry* next) const {
  return next != nullptr ? "the local header of entry " + quote(next->name) + " at offset " +
                               std::to_string(next->local_header_offset)
                         : "the central directory at offset " + std::to_string(directory_offset_);
}

void LocalHeaderReader::read(ZipEntry& e, const ZipEntry* next, ByteSpan first) const {
  const auto place = [&] { return places_.local_place(e); };
  const LocalRecord record = local_record_of(e, next, first);
  const Local& h = record.header;
  check_local_agrees(e, h, as_chars(record.bytes.subspan(Local::kSize, h.name_length)));
  const std::uint64_t extra_offset = e.local_header_offset + Local::kSize + h.name_length;
  ZipLocalLayout layout;
  layout.local_extra = record.bytes.subspan(Local::kSize + h.name_length, h.extra_length);
  const std::optional<ExtraRecord> zip64 =
      read_extra_field(places_, layout.local_extra, extra_offset, place, " in the local header",
                       unknown_extras_ != nullptr ? &(*unknown_extras_)[e.central_index] : nullptr);
  if (zip64) e.zip64 = true;
  compare_local_sizes(e, h, local_sizes(h, zip64, place));
  if (h.modified_time != e.modified_time || h.modified_date != e.modified_date) {
    add_finding(ZipFindingKind::kHeaderMismatch, e.name, e.local_header_offset,
                "local and central modification time/date differ (" + hex(h.modified_date, 4) +
                    "/" + hex(h.modified_time, 4) + " vs " + hex(e.modified_date, 4) + "/" +
                    hex(e.modified_time, 4) + ")");
  }
  layout.data_offset = e.local_header_offset + record.bytes.size();
  locate_entry_data(e, layout, next);
  e.local = layout;
}

LocalHeaderReader::LocalRecord LocalHeaderReader::local_record_of(const ZipEntry& e,
                                                                  const ZipEntry* next,
                                                                  ByteSpan first) const {
  const std::uint64_t limit = limit_of(next);
  const auto place = [&] { return places_.local_place(e); };
  const std::uint64_t offset = e.local_header_offset;
  if (!fits(offset, Local::kSize, limit)) {
    places_.fail(ErrorCode::kCorrupt, place(),
                 "the 30-byte local header runs into " + limit_text(next));
  }
  // The fixed part, the name and (usually) the whole extra field in one read.
  ByteSpan header = !first.empty() ? first : bytes_(offset, first_read_size(e, next));
  if (load_le32(header.data()) != Local::kSignature) {
    places_.fail(ErrorCode::kCorrupt, place(),
                 "local file header at offset " + std::to_string(offset) + ": bad signature " +
                     hex(load_le32(header.data()), 8));
  }
  const Local h = Local::decode(header, 0);
  const std::uint64_t header_size = Local::kSize + h.name_length + h.extra_length;
  if (offset + header_size > limit) {
    places_.fail(ErrorCode::kCorrupt, place(),
                 "the local name and extra field (" + std::to_string(h.name_length) + " + " +
                     std::to_string(h.extra_length) + " bytes) run into " + limit_text(next));
  }
  if (header.size() < header_size) header = bytes_(offset, header_size);
  return {h, header.first(static_cast<std::size_t>(header_size))};
}

// Name, method and the flags that change how the entry is read must match the central record.
void LocalHeaderReader::check_local_agrees(const ZipEntry& e, const Local& h,
                                           std::string_view local_name) const {
  if (local_name != e.name) {
    places_.fail(ErrorCode::kCorrupt, places_.local_place(e),
                 "the local header names the entry " + quote(local_name) +
                     ", the central directory " + quote(e.name));
  }
  if (h.method != e.method) {
    places_.fail(ErrorCode::kCorrupt, places_.local_place(e),
                 "the local header says compression method " + std::to_string(h.method) +
                     ", the central directory " + std::to_string(e.method));
  }
  if ((h.flags & kStructuralFlags) != (e.flags & kStructuralFlags)) {
    places_.fail(ErrorCode::kCorrupt, places_.local_place(e),
                 "the local header flags " + hex(h.flags, 4) + " and the central directory flags " +
                     hex(e.flags, 4) + " disagree on bits 0, 3, 6 or 13");
  }
}

template <typename Place>
LocalHeaderReader::LocalSizes LocalHeaderReader::local_sizes(
    const Local& h, const std::optional<ExtraRecord>& zip64, const Place& place) const {
  LocalSizes sizes{h.compressed_size, h.uncompressed_size};
  std::uint64_t& compressed = sizes.compressed;
  std::uint64_t& size = sizes.uncompressed;
  if (compressed != kSentinel32 && size != kSentinel32) return sizes;
  if (!zip64) {
    places_.fail(
        ErrorCode::kCorrupt, place(),
        "a local size holds the zip64 sentinel 0xffffffff but there is no zip64 extra field");
  }
  // APPNOTE 4.5.3 wants both sizes in the local zip64 field; some writers store only the
  // one whose 32-bit field overflowed, which is unambiguous when just one is the sentinel.
  const ByteSpan data = zip64->data;
  if (data.size() >= 16) {
    if (size == kSentinel32) size = load_le64(data.data());
    if (compressed == kSentinel32) compressed = load_le64(data.data() + 8);
  } else if (data.size() >= 8 && (size != kSentinel32 || compressed != kSentinel32)) {
    (size == kSentinel32 ? size : compressed) = load_le64(data.data());
  } else {
    places_.fail(ErrorCode::kCorrupt, place(),
                 "the local zip64 extra field of " + std::to_string(data.size()) +
                     " bytes is too short for the sizes");
  }
  return sizes;
}

void LocalHeaderReader::compare_local_sizes(const ZipEntry& e, const Local& h,
                                            const LocalSizes& sizes) const {
  const auto compare = [&](const char* field, std::uint64_t local, std::uint64_t central,
                           bool as_hex) {
    if (local == central) return;
    // With a data descriptor, the local header may hold zeros instead (APPNOTE 4.4.4 bit 3).
    if (e.has_data_descriptor && local == 0) return;
    const auto show = [&](std::uint64_t v) {
      return as_hex ? hex(static_cast<std::uint32_t>(v), 8) : std::to_string(v);
    };
    places_.fail(ErrorCode::kCorrupt, places_.local_place(e),
                 std::string("the local header says ") + field + " " + show(local) +
                     ", the central directory " + show(central));
  };
  compare("CRC-32", h.crc32, e.crc32, true);
  compare("compressed size", sizes.compressed, e.compressed_size, false);
  compare("uncompressed size", sizes.uncompressed, e.size, false);
}

// Sets layout.end_offset (after the data and its descriptor, if any) and notes what a reader of the
// entry's data should know.
void LocalHeaderReader::locate_entry_data(const ZipEntry& e, ZipLocalLayout& layout,
                                          const ZipEntry* next) const {
  const std::uint64_t limit = limit_of(next);
  std::uint64_t data_end = 0;
  if (__builtin_add_overflow(layout.data_offset, e.compressed_size, &data_end) ||
      data_end > limit) {
    places_.fail(ErrorCode::kCorrupt, places_.local_place(e),
                 "the data at offset " + std::to_string(layout.data_offset) + " of " +
                     std::to_string(e.compressed_size) + " bytes overlaps " + limit_text(next));
  }
  layout.end_offset =
      e.has_data_descriptor ? read_data_descriptor(e, data_end, limit, next) : data_end;
  if (layout.end_offset < limit) {
    add_finding(
        ZipFindingKind::kGap, e.name, layout.end_offset,
        std::to_string(limit - layout.end_offset) + " bytes after the entry belong to no entry");
  }
  if (e.is_deflated()) {
    add_finding(ZipFindingKind::kDeflated, e.name, e.local_header_offset,
                "deflated; not zero-copy");
  } else if (!e.is_directory() && layout.alignment() < kWantedAlignment) {
    add_finding(ZipFindingKind::kUnaligned, e.name, layout.data_offset,
                "data at offset " + std::to_string(layout.data_offset) + " is aligned to only " +
                    std::to_string(layout.alignment()) + " bytes");
  }
  if (e.has_data_descriptor) {
    add_finding(ZipFindingKind::kDataDescriptor, e.name, data_end,
                "data descriptor at offset " + std::to_string(data_end));
  }
}

// APPNOTE 4.3.9: the descriptor's signature is optional and its sizes are 8 bytes wide for
// zip64 entries; writers disagree on both, so every layout is tried and the one that matches
// the central record wins. None matching is a contradiction.
std::uint64_t LocalHeaderReader::read_data_descriptor(const ZipEntry& e, std::uint64_t at,
                                                      std::uint64_t limit,
                                                      const ZipEntry* next) const {
  struct Layout {
    bool signature;
    bool wide;
  };
  constexpr Layout kNarrowFirst[] = {{true, false}, {true, true}, {false, false}, {false, true}};
  constexpr Layout kWideFirst[] = {{true, true}, {true, false}, {false, true}, {false, false}};
  const ByteSpan found = bytes_(at, std::min(kMaxDataDescriptorSize, limit - at));
  std::string seen;
  const Layout* const layouts = e.zip64 ? kWideFirst : kNarrowFirst;
  for (std::size_t k = 0; k < std::size(kNarrowFirst); ++k) {
    const Layout layout = layouts[k];
    const std::uint64_t size = (layout.signature ? 4 : 0) + 4 + (layout.wide ? 16 : 8);
    if (size > found.size()) continue;
    const std::uint8_t* p = found.data();
    if (layout.signature) {
      if (load_le32(p) != DataDescriptor::kSignature) continue;
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
  places_.fail(ErrorCode::kCorrupt, places_.local_place(e),
               "no data descriptor at offset " + std::to_string(at) + " before " +
                   limit_text(next) + " matches the central directory (CRC-32 " + hex(e.crc32, 8) +
                   ", sizes " + std::to_string(e.compressed_size) + "/" + std::to_string(e.size) +
                   ")" + seen);
}

void set_local_header_prefetch_for_testing(bool enabled) noexcept {
  g_prefetch.store(enabled, std::memory_order_relaxed);
}

void read_local_headers(std::vector<ZipEntry>& entries, std::uint64_t directory_offset,
                        bool every_entry, const HeldBytes& held, const ZipPlaces& places,
                        UnknownExtras& unknown_extras, std::vector<ZipFinding>& findings,
                        LocalHeaderCopies& copies) {
  if (entries.empty()) {
    if (directory_offset > 0) {
      findings.push_back({ZipFindingKind::kGap, "", 0,
                          std::to_string(directory_offset) +
                              " bytes before the central directory belong to no entry"});
    }
    return;
  }
  const ZipEntry& last = entries.back();
  if (last.local_header_offset >= directory_offset) {
    places.fail(ErrorCode::kCorrupt, places.central_place(last.name, last.central_header_offset),
                "local header offset " + std::to_string(last.local_header_offset) +
                    " is not before the central directory at offset " +
                    std::to_string(directory_offset));
  }
  if (entries.front().local_header_offset > 0) {
    findings.push_back({ZipFindingKind::kGap, "", 0,
                        std::to_string(entries.front().local_header_offset) +
                            " bytes before the first local header belong to no entry"});
  }
  // A directory's entries stay unlocated until they are read (ZipDirectory::locate).
  const std::size_t first = every_entry ? 0 : entries.size();
  LocalHeaderPass(entries, directory_offset, held, places, unknown_extras, findings, copies)
      .run(first);
  for (const ZipEntry& e : entries) {
    const std::vector<std::uint16_t>& unknown = unknown_extras[e.central_index];
    if (unknown.empty()) continue;
    std::string ids;
    for (const std::uint16_t id : unknown) ids += (ids.empty() ? "" : ", ") + hex(id, 4);
    findings.push_back({ZipFindingKind::kUnknownExtraField, e.name, e.local_header_offset,
                        "extra fields this reader ignores: " + ids});
  }
}

}  // namespace onnxzip::zip
