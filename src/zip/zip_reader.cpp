#include "onnxzip/internal/zip_reader.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <utility>

#include "crc32.h"
#include "message_text.h"
#include "onnxzip/error.h"
#include "onnxzip/internal/byte_source.h"
#include "onnxzip/internal/mapped_file.h"
#include "zip_central_directory.h"
#include "zip_end_records.h"
#include "zip_held_bytes.h"
#include "zip_inflate.h"
#include "zip_local_headers.h"
#include "zip_parse.h"

namespace onnxzip {
namespace {

using detail::hex;
using detail::quote;
using zip::kMaxAlignment;

}  // namespace

std::uint64_t ZipEntry::alignment() const noexcept {
  if (data_offset == 0) return kMaxAlignment;
  return std::min(data_offset & (~data_offset + 1), kMaxAlignment);
}

std::string_view to_string(ZipFindingKind kind) noexcept {
  switch (kind) {
    case ZipFindingKind::kDeflated:
      return "deflated";
    case ZipFindingKind::kDataDescriptor:
      return "data_descriptor";
    case ZipFindingKind::kUnaligned:
      return "unaligned";
    case ZipFindingKind::kDirectory:
      return "directory";
    case ZipFindingKind::kNameEncoding:
      return "name_encoding";
    case ZipFindingKind::kArchiveComment:
      return "archive_comment";
    case ZipFindingKind::kEntryComment:
      return "entry_comment";
    case ZipFindingKind::kUnknownExtraField:
      return "unknown_extra_field";
    case ZipFindingKind::kCaseOnlyDuplicate:
      return "case_only_duplicate";
    case ZipFindingKind::kGap:
      return "gap";
    case ZipFindingKind::kHeaderMismatch:
      return "header_mismatch";
  }
  return "unknown";
}

ZipReader::ZipReader(std::shared_ptr<const ByteSource> source, ZipReaderOptions options)
    : source_(std::move(source)), options_(std::move(options)) {}

ZipReader ZipReader::open(const std::filesystem::path& path, ZipReaderOptions options,
                          FileAccess access) {
  return open(ByteSource::open(path, access), std::move(options));
}

ZipReader ZipReader::open(std::shared_ptr<const MappedFile> file, ZipReaderOptions options) {
  if (file == nullptr) throw Error(ErrorCode::kInvalidArgument, "ZipReader::open: no file");
  return open(ByteSource::of_file(std::move(file)), std::move(options));
}

ZipReader ZipReader::from_bytes(ByteSpan bytes, OwnerToken owner, ZipReaderOptions options,
                                std::string source_name) {
  return open(ByteSource::of_bytes(bytes, std::move(owner), std::move(source_name)),
              std::move(options));
}

ZipReader ZipReader::open(std::shared_ptr<const ByteSource> source, ZipReaderOptions options,
                          const ZipTrailerResolver& trailer) {
  if (source == nullptr) throw Error(ErrorCode::kInvalidArgument, "ZipReader::open: no source");
  ZipReader reader(std::move(source), std::move(options));
  reader.parse(trailer);
  return reader;
}

void ZipReader::parse(const ZipTrailerResolver& trailer) {
  try {
    const auto held = std::make_shared<zip::HeldBytes>(source_);
    const zip::ZipPlaces places(source_->name());
    const std::uint64_t file_size = source_->size();
    // A mapped file's preads are cheap, so its first read is what an end record needs; a source
    // that reads ranges pays per read, so its first read tries to bring the whole tail.
    const std::uint64_t first_read =
        source_->access() == ByteSource::Access::kRanges
            ? std::max(options_.tail_read_size, zip::kMaxEndRecordSearch)
            : zip::kMaxEndRecordSearch;
    held->hold_from(file_size - std::min(file_size, first_read));
    zip::ArchiveEnd end = zip::read_archive_end(*held, places, trailer);
    zip::CentralDirectory directory = zip::read_central_directory(*held, end, places, options_);
    if (!directory.entries.empty()) {
      held->serve_held_from(directory.entries.back().local_header_offset);
    }
    size_ = end.size;
    end_record_offset_ = end.end_record_offset;
    tail_offset_ = end.tail_offset;
    zip64_end_record_ = end.zip64;
    comment_ = end.comment;
    central_directory_offset_ = end.directory_offset;
    central_directory_size_ = end.directory_size;
    trailer_ = std::move(end.trailer);
    findings_ = std::move(directory.findings);
    entries_ = std::move(directory.entries);
    by_name_ = std::move(directory.by_name);
    local_header_copies_ = std::make_shared<zip::LocalHeaderCopies>();
    zip::read_local_headers(entries_, central_directory_offset_, options_.local_headers,
                            options_.tail_local_headers, *held, places, directory.unknown_extras,
                            findings_, *local_header_copies_);
    if (!comment_.empty()) {
      findings_.push_back({ZipFindingKind::kArchiveComment, "", end_record_offset_,
                           "archive comment of " + std::to_string(comment_.size()) + " bytes"});
    }
    held_ = held;
  } catch (const std::bad_alloc&) {
    throw Error(ErrorCode::kLimitExceeded, {.file = source_->name()},
                "out of memory while indexing the archive");
  }
}

ByteSpan ZipReader::bytes() const noexcept {
  return source_->access() == ByteSource::Access::kRanges ? ByteSpan()
                                                          : source_->bytes().first(size_);
}

const ZipEntry* ZipReader::find(std::string_view name) const noexcept {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &entries_[it->second];
}

const ZipEntry& ZipReader::at(std::string_view name) const {
  const ZipEntry* e = find(name);
  if (e == nullptr) {
    throw Error(ErrorCode::kNotFound, {.file = source_->name()}, "no entry named " + quote(name));
  }
  return *e;
}

// Callers may pass copies of entries; the reader trusts only its own, validated one.
const ZipEntry& ZipReader::own_entry(const ZipEntry& entry, const char* operation) const {
  if (entry.index >= entries_.size() ||
      entries_[entry.index].local_header_offset != entry.local_header_offset ||
      entries_[entry.index].central_header_offset != entry.central_header_offset) {
    throw Error(ErrorCode::kInvalidArgument, {.file = source_->name()},
                std::string(operation) + ": entry " + quote(entry.name) +
                    " does not belong to this archive");
  }
  const ZipEntry& own = entries_[entry.index];
  if (!own.local_header_read && options_.local_headers != LocalHeaderScope::kOnRead &&
      options_.local_headers != LocalHeaderScope::kOnReadAndHeld) {
    throw Error(ErrorCode::kBadState, entry_place(own),
                std::string(operation) +
                    ": its local header was not read (the archive was opened with "
                    "LocalHeaderScope::kTail, which reads only the last " +
                    std::to_string(std::max<std::size_t>(options_.tail_local_headers, 2)) +
                    " entries')");
  }
  return own;
}

ErrorContext ZipReader::entry_place(const ZipEntry& e) const {
  return {.file = source_->name(),
          .entry = "entry " + quote(e.name) + " at offset " + std::to_string(e.local_header_offset),
          .entry_name = e.name,
          .offset = e.local_header_offset};
}

// The local header, data and data descriptor of an entry whose local header the open left to
// the read (kOnRead) are read in one read -- in an .onnxz, up to the next entry's local header --
// and checked as the open checks them; `located` is then the entry with its data located.
TensorBytes ZipReader::compressed_data(const ZipEntry& e, std::optional<ZipEntry>& located) const {
  const ByteRange range = read_range(e);
  return located_data(e, held_->read(range.offset, range.length), located);
}

// What compressed_data reads: the data, or with kOnRead from the local header to its reach.
ByteRange ZipReader::read_range(const ZipEntry& e) const {
  if (e.local_header_read) return {e.data_offset, e.compressed_size};
  const ZipEntry* const next = e.index + 1 < entries_.size() ? &entries_[e.index + 1] : nullptr;
  const zip::ZipPlaces places(source_->name());
  const zip::LocalHeaderReader reader(places, central_directory_offset_, nullptr, nullptr, nullptr);
  return {e.local_header_offset, reader.reach(e, next) - e.local_header_offset};
}

// The compressed data out of `read`, the bytes read_range(e) names.
TensorBytes ZipReader::located_data(const ZipEntry& e, const TensorBytes& read,
                                    std::optional<ZipEntry>& located) const {
  if (e.local_header_read) return read;
  const ZipEntry* const next = e.index + 1 < entries_.size() ? &entries_[e.index + 1] : nullptr;
  const zip::ZipPlaces places(source_->name());
  const zip::LocalHeaderReader reader(
      places, central_directory_offset_,
      [&](std::uint64_t offset, std::uint64_t size) {
        return read.view().subspan(static_cast<std::size_t>(offset - e.local_header_offset),
                                   static_cast<std::size_t>(size));
      },
      nullptr, nullptr);
  located = e;
  reader.read(*located, next);
  return TensorBytes::borrowed(
      read.view().subspan(static_cast<std::size_t>(located->data_offset - e.local_header_offset),
                          static_cast<std::size_t>(e.compressed_size)),
      read.owner());
}

std::uint64_t ZipReader::limit_of(const ZipEntry& entry) const {
  const ZipEntry& e = own_entry(entry, "limit_of");
  return e.index + 1 < entries_.size() ? entries_[e.index + 1].local_header_offset
                                       : central_directory_offset_;
}

std::optional<ZipEntry> ZipReader::locate(const ZipEntry& entry, ByteSpan header) const {
  const ZipEntry& e = own_entry(entry, "locate");
  if (!e.is_stored() || e.has_data_descriptor) {
    throw Error(ErrorCode::kUnsupported, entry_place(e),
                "locate: only a stored entry without a data descriptor is located from its "
                "local header alone");
  }
  if (e.local_header_read) return e;
  if (header.size() < zip::LocalFileHeader::kSize) return std::nullopt;
  // The reader asks for more than `header` only when the header is longer than it.
  struct TooFew {};
  const ZipEntry* const next = e.index + 1 < entries_.size() ? &entries_[e.index + 1] : nullptr;
  const zip::ZipPlaces places(source_->name());
  const zip::LocalHeaderReader reader(
      places, central_directory_offset_,
      [&](std::uint64_t offset, std::uint64_t size) -> ByteSpan {
        const std::uint64_t at = offset - e.local_header_offset;
        if (!fits(at, size, header.size())) throw TooFew{};
        return header.subspan(static_cast<std::size_t>(at), static_cast<std::size_t>(size));
      },
      nullptr, nullptr);
  std::optional<ZipEntry> located = e;
  try {
    reader.read(*located, next, header);
  } catch (const TooFew&) {
    return std::nullopt;
  }
  return located;
}

// A deflated entry inflated: whole, or above spill_threshold into a spill file whose CRC-32 is
// checked on the way.
TensorBytes ZipReader::inflated_data(const ZipEntry& e) const {
  const ErrorContext place = entry_place(e);
  zip::check_inflate_limits(e, options_, place);
  std::optional<ZipEntry> located;
  const TensorBytes raw = compressed_data(e, located);
  const ZipEntry& at = located ? *located : e;
  if (e.size <= options_.spill_threshold) return zip::inflate_whole(raw.view(), at, place);
  return zip::inflate_to_spill_file(raw.view(), at, place, options_.spill_directory,
                                    [&](std::uint32_t crc) { check_crc(e, crc); });
}

ByteSpan ZipReader::stored_data(const ZipEntry& entry) const {
  const ZipEntry& e = own_entry(entry, "stored_data");
  if (!e.is_stored()) {
    throw Error(ErrorCode::kUnsupported, entry_place(e),
                "deflated, so there are no stored bytes to borrow (use data())");
  }
  if (source_->access() == ByteSource::Access::kRanges) {
    throw Error(ErrorCode::kUnsupported, entry_place(e),
                "the archive is read in ranges, so there are no stored bytes "
                "to borrow (use data())");
  }
  // Borrowed from the source's bytes, which live as long as the reader.
  std::optional<ZipEntry> located;
  return compressed_data(e, located).view();
}

TensorBytes ZipReader::data(const ZipEntry& entry) const {
  const ZipEntry& e = own_entry(entry, "data");
  std::optional<ZipEntry> located;
  // Offsets and sizes were checked against the file when the archive was opened.
  return e.is_stored() ? compressed_data(e, located) : inflated_data(e);
}

std::vector<TensorBytes> ZipReader::data(std::span<const ZipEntry* const> entries) const {
  std::vector<TensorBytes> out(entries.size());
  // Stored entries by where their bytes start; deflated ones one by one (data()).
  std::vector<std::pair<ByteRange, std::size_t>> stored;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const ZipEntry& e = own_entry(*entries[i], "data");
    if (e.is_stored()) {
      stored.emplace_back(read_range(e), i);
    } else {
      out[i] = data(e);
    }
  }
  std::sort(stored.begin(), stored.end(),
            [](const auto& a, const auto& b) { return a.first.offset < b.first.offset; });
  // Runs of adjacent (or overlapping: an entry asked for twice) ranges, one read each.
  std::vector<ByteRange> runs;
  std::vector<std::size_t> run_of(stored.size());
  for (std::size_t k = 0; k < stored.size(); ++k) {
    const ByteRange& r = stored[k].first;
    if (!runs.empty() && r.offset <= runs.back().offset + runs.back().length) {
      ByteRange& run = runs.back();
      run.length = std::max(run.offset + run.length, r.offset + r.length) - run.offset;
    } else {
      runs.push_back(r);
    }
    run_of[k] = runs.size() - 1;
  }
  const std::vector<TensorBytes> read = source_->read_ranges(runs);
  for (std::size_t k = 0; k < stored.size(); ++k) {
    const auto& [range, i] = stored[k];
    const TensorBytes& whole = read[run_of[k]];
    const TensorBytes piece = TensorBytes::borrowed(
        whole.view().subspan(static_cast<std::size_t>(range.offset - runs[run_of[k]].offset),
                             static_cast<std::size_t>(range.length)),
        whole.owner());
    std::optional<ZipEntry> located;
    // entries[i] was found to be the reader's own entry above.
    out[i] = located_data(entries_[entries[i]->index], piece, located);
  }
  return out;
}

TensorBytes ZipReader::verified_data(const ZipEntry& entry) const {
  const ZipEntry& e = own_entry(entry, "verify");
  // A spill file's CRC-32 is checked while it is written.
  if (e.is_deflated() && e.size > options_.spill_threshold) return inflated_data(e);
  TensorBytes bytes = data(e);
  check_crc(e, onnxzip::crc32(bytes.view()));
  return bytes;
}

void ZipReader::stream(const ZipEntry& entry, const std::function<void(ByteSpan)>& consumer) const {
  const ZipEntry& e = own_entry(entry, "stream");
  if (e.is_deflated() && e.size > options_.spill_threshold) {
    const ErrorContext place = entry_place(e);
    zip::check_inflate_limits(e, options_, place);
    std::optional<ZipEntry> located;
    const TensorBytes raw = compressed_data(e, located);
    check_crc(e, zip::inflate_in_pieces(raw.view(), located ? *located : e, place, consumer));
    return;
  }
  // Stored, or small enough to inflate whole: handed on in pieces all the same, each one's
  // CRC-32 computed while it is in the cache.
  const TensorBytes bytes = data(e);
  std::uint32_t crc = 0;
  for (ByteSpan rest = bytes.view(); !rest.empty();) {
    const ByteSpan piece = rest.first(std::min(rest.size(), kStreamPieceBytes));
    crc = onnxzip::crc32(piece, crc);
    consumer(piece);
    rest = rest.subspan(piece.size());
  }
  check_crc(e, crc);
}

void ZipReader::verify(const ZipEntry& entry) const {
  stream(entry, [](ByteSpan) {});
}

void ZipReader::check_crc(const ZipEntry& e, std::uint32_t actual) const {
  if (actual != e.crc32) {
    throw Error(ErrorCode::kCorrupt, entry_place(e),
                "CRC-32 mismatch: the data has " + hex(actual, 8) +
                    ", the central directory says " + hex(e.crc32, 8));
  }
}

}  // namespace onnxzip
