#include "onnxzip/zip_reader.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <utility>

#include "message_text.h"
#include "onnxzip/crc32.h"
#include "onnxzip/error.h"
#include "onnxzip/mapped_file.h"
#include "zip_inflate.h"
#include "zip_parser.h"

namespace onnxzip {
namespace {

using detail::hex;
using detail::quote;

constexpr std::uint64_t kMaxAlignment = 65536;

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
    case ZipFindingKind::kInterruptedEdit:
      return "interrupted_edit";
  }
  return "unknown";
}

ZipReader::ZipReader(ByteSpan bytes, ZipReaderOptions options, OwnerToken owner,
                     std::string source_name)
    : bytes_(bytes),
      options_(options),
      owner_(std::move(owner)),
      source_name_(std::move(source_name)) {}

ZipReader ZipReader::open(const std::filesystem::path& path, ZipReaderOptions options,
                          FileAccess access) {
  return open(MappedFile::open(path, access), options);
}

ZipReader ZipReader::open(std::shared_ptr<const MappedFile> file, ZipReaderOptions options) {
  if (file == nullptr) throw Error(ErrorCode::kInvalidArgument, "ZipReader::open: no file");
  const ByteSpan bytes = file->bytes();
  // Local headers are read with pread from the very file that is mapped (Parser::local_bytes);
  // read into memory (kRead), they are already there.
  const int local_fd = file->access() == FileAccess::kMap ? file->descriptor() : -1;
  std::string source_name = file->path().string();
  ZipReader reader(bytes, options, std::move(file), std::move(source_name));
  reader.parse(local_fd);
  return reader;
}

ZipReader ZipReader::from_bytes(ByteSpan bytes, OwnerToken owner, ZipReaderOptions options,
                                std::string source_name) {
  ZipReader reader(bytes, options, std::move(owner), std::move(source_name));
  reader.parse(-1);
  return reader;
}

void ZipReader::parse(int local_fd) {
  try {
    Parser(*this, local_fd).run();
  } catch (const std::bad_alloc&) {
    throw Error(ErrorCode::kLimitExceeded,
                source_name_ + ": out of memory while indexing the archive");
  }
}

const ZipEntry* ZipReader::find(std::string_view name) const noexcept {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &entries_[it->second];
}

const ZipEntry& ZipReader::at(std::string_view name) const {
  const ZipEntry* e = find(name);
  if (e == nullptr) {
    throw Error(ErrorCode::kNotFound, source_name_ + ": no entry named " + quote(name));
  }
  return *e;
}

// Callers may pass copies of entries; the reader trusts only its own, validated one.
const ZipEntry& ZipReader::own_entry(const ZipEntry& entry, const char* operation) const {
  if (entry.index >= entries_.size() ||
      entries_[entry.index].local_header_offset != entry.local_header_offset ||
      entries_[entry.index].central_header_offset != entry.central_header_offset) {
    throw Error(ErrorCode::kInvalidArgument, source_name_ + ": " + operation + ": entry " +
                                                 quote(entry.name) +
                                                 " does not belong to this archive");
  }
  const ZipEntry& own = entries_[entry.index];
  if (!own.local_header_read) {
    throw Error(ErrorCode::kBadState,
                entry_place(own) + ": " + operation +
                    ": its local header was not read (the archive was opened with "
                    "LocalHeaderScope::kTail, which reads only the last two entries')");
  }
  return own;
}

std::string ZipReader::entry_place(const ZipEntry& e) const {
  return source_name_ + ": entry " + quote(e.name) + " at offset " +
         std::to_string(e.local_header_offset);
}

ByteSpan ZipReader::stored_data(const ZipEntry& entry) const {
  const ZipEntry& e = own_entry(entry, "stored_data");
  if (!e.is_stored()) {
    throw Error(ErrorCode::kUnsupported,
                entry_place(e) + ": deflated, so there are no stored bytes to borrow (use data())");
  }
  return bytes_.subspan(static_cast<std::size_t>(e.data_offset),
                        static_cast<std::size_t>(e.compressed_size));
}

TensorBytes ZipReader::data(const ZipEntry& entry) const {
  const ZipEntry& e = own_entry(entry, "data");
  if (e.is_stored()) {
    // Offsets and sizes were checked against the file when the archive was opened.
    return TensorBytes::borrowed(bytes_.subspan(static_cast<std::size_t>(e.data_offset),
                                                static_cast<std::size_t>(e.compressed_size)),
                                 owner_);
  }
  return e.size > options_.spill_threshold ? inflate_to_spill_file(e) : inflate_whole(e);
}

TensorBytes ZipReader::verified_data(const ZipEntry& entry) const {
  const ZipEntry& e = own_entry(entry, "verify");
  // A spill file's CRC-32 is checked while it is written.
  if (e.is_deflated() && e.size > options_.spill_threshold) return inflate_to_spill_file(e);
  TensorBytes bytes = data(e);
  check_crc(e, onnxzip::crc32(bytes.view()));
  return bytes;
}

void ZipReader::stream(const ZipEntry& entry, const std::function<void(ByteSpan)>& consumer) const {
  const ZipEntry& e = own_entry(entry, "stream");
  if (e.is_deflated() && e.size > options_.spill_threshold) {
    check_crc(e, zip::inflate_in_pieces(deflated_bytes(e), e, entry_place(e), consumer));
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
    throw Error(ErrorCode::kCorrupt, entry_place(e) + ": CRC-32 mismatch: the data has " +
                                         hex(actual, 8) + ", the central directory says " +
                                         hex(e.crc32, 8));
  }
}

}  // namespace onnxzip
