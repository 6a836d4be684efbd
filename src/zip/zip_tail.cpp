#include "zip_tail.h"

#include <algorithm>
#include <optional>
#include <string>

#include "little_endian.h"
#include "message_text.h"
#include "onnxzip/error.h"
#include "onnxzip/internal/zip_reader.h"
#include "zip_layout.h"
#include "zip_records.h"

namespace onnxzip::zip {
namespace {

constexpr std::uint32_t kDefaultAlignment = 64;
constexpr std::uint32_t kMaxAlignment = 65536;
// How many entries at the end declared_alignment reads the local headers of, at most.
constexpr std::size_t kAlignmentLookBack = 4;

}  // namespace

std::uint64_t entries_start(const ZipDirectory& zip, std::size_t first, std::uint64_t file_size) {
  const std::vector<ZipEntry>& entries = zip.entries();
  if (first >= entries.size()) {
    throw Error(ErrorCode::kInvalidArgument, {.file = zip.source_name()}, "no entry to replace");
  }
  for (std::size_t i = first; i < entries.size(); ++i) {
    if (entries[i].central_index != i) {
      throw Error(ErrorCode::kInvalidArgument, {.file = zip.source_name()},
                  "the last entry in the file is not the last one in the central directory");
    }
  }
  if (file_size < zip.size()) {
    throw Error(ErrorCode::kBadState, {.file = zip.source_name()},
                "the file has " + std::to_string(file_size) +
                    " bytes, fewer than the archive read from it");
  }
  if (first == 0) return entries[0].local_header_offset;
  // Where the entry before them ends: its local header says (read now unless the open read it).
  return zip.locate(entries[first - 1]).local->end_offset;
}

EntryTail lay_out_tail(const ZipDirectory& zip, std::uint64_t position, ByteSpan data,
                       std::uint32_t crc, std::uint32_t alignment) {
  const TailEntry entry{zip.entries().back().name, data, crc};
  return lay_out_tail(zip, zip.entries().size() - 1, position, std::span(&entry, 1), alignment);
}

EntryTail lay_out_tail(const ZipDirectory& zip, std::size_t first, std::uint64_t position,
                       std::span<const TailEntry> entries, std::uint32_t alignment) {
  const ZipEntry& first_replaced = zip.entries()[first];
  EntryTail tail;
  std::vector<WrittenEntry> written;
  for (const TailEntry& entry : entries) {
    const EntryLayout layout =
        plan_entry(position, entry.name.size(), entry.data.size(), alignment);
    EntryTail::Part& part = tail.entries.emplace_back();
    part.head.assign(static_cast<std::size_t>(layout.gap), 0);
    const std::vector<std::uint8_t> header =
        encode_local_header(layout, entry.name, entry.crc, alignment);
    part.head.insert(part.head.end(), header.begin(), header.end());
    part.data = entry.data;
    written.push_back(written_entry(layout, entry.name, entry.crc));
    tail.local_header_offset = layout.local_header_offset;
    tail.data_offset = layout.data_offset;
    position = layout.data_offset + entry.data.size();
  }
  // Every other central record as it is: the replaced entries' are the last ones, so the kept
  // ones are the bytes before the first of them.
  const TensorBytes others =
      zip.source().read(zip.central_directory_offset(),
                        first_replaced.central_header_offset - zip.central_directory_offset());
  tail.rest.assign(others.view().begin(), others.view().end());
  for (const WrittenEntry& entry : written) append_central_record(tail.rest, entry);
  const std::uint64_t central_offset = position;
  append_end_records(tail.rest, first + entries.size(), central_offset, tail.rest.size(),
                     static_cast<std::uint16_t>(zip.comment().size()));
  tail.rest.insert(tail.rest.end(), zip.comment().begin(), zip.comment().end());
  return tail;
}

namespace {

// The alignment a local header's first 0xD935 record declares, if it has one.
std::optional<std::uint32_t> alignment_record(const ZipEntry& entry) {
  for (const ExtraRecord& record : split_extra_field(entry.local->local_extra, 0, entry.name)) {
    if (record.id != kExtraAlignment || record.data.size() < 2) continue;
    const std::uint32_t value = detail::load_le16(record.data.data());
    const std::uint32_t alignment = value == 0 ? kMaxAlignment : value;
    return alignment >= kDefaultAlignment && is_power_of_two(alignment) ? alignment
                                                                        : kDefaultAlignment;
  }
  return std::nullopt;
}

}  // namespace

std::uint32_t declared_alignment(const ZipDirectory& zip) {
  const std::vector<ZipEntry>& entries = zip.entries();
  for (const ZipEntry& entry : entries) {
    if (!entry.local) continue;
    if (const std::optional<std::uint32_t> alignment = alignment_record(entry)) return *alignment;
  }
  // A directory located none: the last few entries' headers, read now from the last back (the
  // model's is held by the tail read). An entry whose data fell on its alignment has no record.
  const std::size_t look_back = std::min(entries.size(), kAlignmentLookBack);
  for (std::size_t k = 1; k <= look_back; ++k) {
    const ZipEntry& entry = entries[entries.size() - k];
    if (entry.local) continue;
    if (const std::optional<std::uint32_t> alignment = alignment_record(zip.locate(entry))) {
      return *alignment;
    }
  }
  return kDefaultAlignment;
}

}  // namespace onnxzip::zip
