#include "interrupted_edit.h"

#include <algorithm>
#include <array>
#include <string>
#include <utility>

#include "archive_internal.h"
#include "crc32.h"
#include "little_endian.h"
#include "onnxzip/error.h"
#include "onnxzip/internal/byte_source.h"
#include "onnxzip/internal/mapped_file.h"
#include "onnxzip/internal/zip_reader.h"
#include "posix_file.h"

namespace onnxzip::archive_detail {
namespace {

using detail::load_le32;
using detail::load_le64;
using detail::store_le32;
using detail::store_le64;
using Record = InterruptedEditRecord;

// The new tail is read for its CRC-32 in pieces of this size.
constexpr std::uint64_t kCrcPiece = std::uint64_t{16} << 20;

// Copies, never borrowed from a mapping: these bytes lie past the archive's payloads, where an
// edit may truncate the file (spec §9.6), and a copy of a file that shrank is an Error, not SIGBUS.
std::uint32_t crc32_of(const ByteSource& source, std::uint64_t begin, std::uint64_t end) {
  std::uint32_t crc = 0;
  OwnedBytes buffer(static_cast<std::size_t>(std::min(kCrcPiece, end - begin)));
  for (std::uint64_t at = begin; at < end;) {
    const MutableByteSpan piece =
        buffer.mutable_span().first(static_cast<std::size_t>(std::min(kCrcPiece, end - at)));
    source.read_into(at, piece);
    crc = crc32(piece, crc);
    at += piece.size();
  }
  return crc;
}

}  // namespace

void InterruptedEditRecord::encode(MutableByteSpan out) const {
  if (out.size() < kSize) {
    throw Error(ErrorCode::kInvalidArgument, "record encode buffer too small");
  }
  std::uint8_t* p = out.data();
  store_le64(p, kSignature);
  store_le64(p + 8, old_end);
  store_le64(p + 16, record_offset);
  store_le64(p + 24, new_start);
  store_le64(p + 32, new_end);
  store_le32(p + 40, new_crc32);
  store_le32(p + 44, 0);
}

InterruptedEditRecord InterruptedEditRecord::decode(ByteSpan bytes) {
  const ByteSpan record = checked_subspan(bytes, 0, kSize, "interrupted edit record");
  Record r;
  r.old_end = load_le64(record.data() + 8);
  r.record_offset = load_le64(record.data() + 16);
  r.new_start = load_le64(record.data() + 24);
  r.new_end = load_le64(record.data() + 32);
  r.new_crc32 = load_le32(record.data() + 40);
  return r;
}

std::optional<ZipTrailer> interrupted_edit_trailer(const ByteSource& source) {
  const std::uint64_t size = source.size();
  if (size < Record::kSize) return std::nullopt;
  const std::uint64_t record_offset = size - Record::kSize;
  std::array<std::uint8_t, Record::kSize> bytes{};
  source.read_into(record_offset, bytes);
  if (load_le64(bytes.data()) != Record::kSignature) return std::nullopt;
  const Record record = Record::decode(bytes);
  // Strict: the record says where it is, and both archives it names lie before it, the new tail
  // past the old archive.
  if (record.record_offset != record_offset || record.old_end > record.new_start ||
      record.new_start > record.new_end || record.new_end > record_offset) {
    throw Error(ErrorCode::kCorrupt,
                source.name() + ": interrupted edit record at offset " +
                    std::to_string(record_offset) + ": says it is at offset " +
                    std::to_string(record.record_offset) + ", the old archive ends at offset " +
                    std::to_string(record.old_end) + " and the new tail spans offsets " +
                    std::to_string(record.new_start) + " to " + std::to_string(record.new_end) +
                    "; a file of " + std::to_string(size) +
                    " bytes cannot hold that in that order (spec §9.6)");
  }
  // The new tail is the archive's once it was written whole; until then the old archive is.
  const bool switched = crc32_of(source, record.new_start, record.new_end) == record.new_crc32;
  const std::uint64_t archive_end = switched ? record.new_end : record.old_end;
  return ZipTrailer{
      .archive_end = archive_end,
      .offset = record_offset,
      .name = "interrupted edit record",
      .finding = "an interrupted edit left " + std::to_string(size - archive_end) +
                 " bytes after the archive's end at offset " + std::to_string(archive_end) +
                 " (up to its record at offset " + std::to_string(record_offset) +
                 "); the archive is " +
                 (switched ? "the edit's new one, written whole" : "the one the edit began from") +
                 "; editing the archive again or repacking it removes them (spec §9.6)"};
}

ZipReader open_zip(std::shared_ptr<const ByteSource> source, const ZipReaderOptions& options) {
  return ZipReader::open(std::move(source), options, interrupted_edit_trailer);
}

ZipDirectory open_zip_directory(std::shared_ptr<const ByteSource> source,
                                const ZipReaderOptions& options) {
  return ZipDirectory::open(std::move(source), options, interrupted_edit_trailer);
}

ZipReader open_zip(const std::filesystem::path& path, const ZipReaderOptions& options,
                   FileAccess access) {
  const std::shared_ptr<const MappedFile> file = MappedFile::open(path, access);
  return read_as_reader(*file, [&] { return open_zip(ByteSource::of_file(file), options); });
}

}  // namespace onnxzip::archive_detail
