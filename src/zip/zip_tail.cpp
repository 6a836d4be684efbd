#include "zip_tail.h"

#include <string>

#include "little_endian.h"
#include "onnxzip/error.h"
#include "zip_layout.h"
#include "zip_records.h"

namespace onnxzip::zip {
namespace {

constexpr std::uint32_t kDefaultAlignment = 64;
constexpr std::uint32_t kMaxAlignment = 65536;

}  // namespace

std::uint64_t last_entry_start(const ZipReader& zip, std::uint64_t file_size) {
  const std::vector<ZipEntry>& entries = zip.entries();
  if (entries.empty() || entries.back().central_index + 1 != entries.size()) {
    throw Error(ErrorCode::kInvalidArgument, {.file = zip.source_name()},
                "the last entry in the file is not the last one in the central directory");
  }
  const ZipEntry& last = entries.back();
  if (file_size < zip.size()) {
    throw Error(ErrorCode::kBadState, {.file = zip.source_name()},
                "the file has " + std::to_string(file_size) +
                    " bytes, fewer than the archive read from it");
  }
  return last.index > 0 ? entries[last.index - 1].end_offset : last.local_header_offset;
}

void check_last_entry_replaceable(const ZipReader& zip, std::uint64_t file_size) {
  static_cast<void>(last_entry_start(zip, file_size));
}

EntryTail lay_out_tail(const ZipReader& zip, std::uint64_t position, ByteSpan data,
                       std::uint32_t crc, std::uint32_t alignment) {
  const ZipEntry& last = zip.entries().back();
  const EntryLayout layout = plan_entry(position, last.name.size(), data.size(), alignment);
  EntryTail tail;
  tail.local_header_offset = layout.local_header_offset;
  tail.data_offset = layout.data_offset;
  tail.head.assign(static_cast<std::size_t>(layout.gap), 0);
  const std::vector<std::uint8_t> header = encode_local_header(layout, last.name, crc, alignment);
  tail.head.insert(tail.head.end(), header.begin(), header.end());
  tail.data = data;
  // Every other central record as it is: the last one is the entry's, so they are the bytes
  // before it.
  const TensorBytes others = zip.source().read(
      zip.central_directory_offset(), last.central_header_offset - zip.central_directory_offset());
  tail.rest.assign(others.view().begin(), others.view().end());
  append_central_record(tail.rest, written_entry(layout, last.name, crc));
  const std::uint64_t central_offset = layout.data_offset + data.size();
  append_end_records(tail.rest, zip.entries().size(), central_offset, tail.rest.size(),
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
