#include "zip_tail.h"

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

}  // namespace

std::uint64_t last_entry_start(const ZipReader& zip, std::uint64_t file_size) {
  if (zip.entries().empty()) {
    throw Error(ErrorCode::kInvalidArgument, {.file = zip.source_name()},
                "the archive has no entry");
  }
  return entries_start(zip, zip.entries().size() - 1, file_size);
}

std::uint64_t entries_start(const ZipReader& zip, std::size_t first, std::uint64_t file_size) {
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
  const ZipEntry& before = entries[first - 1];
  if (!before.local_header_read) {
    throw Error(ErrorCode::kBadState,
                {.file = zip.source_name(),
                 .entry = "entry " + detail::quote(before.name),
                 .entry_name = before.name,
                 .offset = before.local_header_offset},
                "its local header was not read, so where it ends is not known");
  }
  return before.end_offset;
}

void check_last_entry_replaceable(const ZipReader& zip, std::uint64_t file_size) {
  static_cast<void>(last_entry_start(zip, file_size));
}

EntryTail lay_out_tail(const ZipReader& zip, std::uint64_t position, ByteSpan data,
                       std::uint32_t crc, std::uint32_t alignment) {
  const TailEntry entry{zip.entries().back().name, data, crc};
  return lay_out_tail(zip, zip.entries().size() - 1, position, std::span(&entry, 1), alignment);
}

EntryTail lay_out_tail(const ZipReader& zip, std::size_t first, std::uint64_t position,
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

std::uint32_t declared_alignment(const ZipReader& zip) {
  for (const ZipEntry& entry : zip.entries()) {
    for (const ExtraRecord& record : split_extra_field(entry.local_extra, 0, entry.name)) {
      if (record.id != kExtraAlignment || record.data.size() < 2) continue;
      const std::uint32_t value = detail::load_le16(record.data.data());
      const std::uint32_t alignment = value == 0 ? kMaxAlignment : value;
      return alignment >= kDefaultAlignment && is_power_of_two(alignment) ? alignment
                                                                          : kDefaultAlignment;
    }
  }
  return kDefaultAlignment;
}

}  // namespace onnxzip::zip
