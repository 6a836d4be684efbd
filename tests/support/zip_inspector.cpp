#include "support/zip_inspector.h"

#include <stdexcept>

#include "onnxzip/error.h"

namespace onnxzip::test_support {
namespace {

std::string name_at(ByteSpan file, std::uint64_t offset, std::size_t length) {
  const ByteSpan bytes = checked_subspan(file, offset, length, "entry name");
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

}  // namespace

std::optional<zip::ExtraRecord> find_extra(const std::vector<zip::ExtraRecord>& records,
                                           std::uint16_t id) {
  for (const zip::ExtraRecord& record : records) {
    if (record.id == id) return record;
  }
  return std::nullopt;
}

InspectedArchive inspect_archive(ByteSpan file) {
  InspectedArchive archive;
  if (file.size() < zip::EndOfCentralDirectory::kSize) {
    throw std::runtime_error("file shorter than an end record");
  }
  archive.end_offset = file.size() - zip::EndOfCentralDirectory::kSize;
  archive.end = zip::EndOfCentralDirectory::decode(file, archive.end_offset);
  archive.entry_count = archive.end.entries_total;
  archive.central_offset = archive.end.central_directory_offset;
  archive.central_size = archive.end.central_directory_size;

  std::uint64_t central_end = archive.end_offset;
  if (archive.end_offset >= zip::Zip64EndLocator::kSize) {
    const std::uint64_t locator_offset = archive.end_offset - zip::Zip64EndLocator::kSize;
    const ByteSpan signature = file.subspan(locator_offset, 4);
    if (signature[0] == 0x50 && signature[1] == 0x4b && signature[2] == 0x06 &&
        signature[3] == 0x07) {
      archive.locator = zip::Zip64EndLocator::decode(file, locator_offset);
      archive.locator_offset = locator_offset;
      archive.end64 =
          zip::Zip64EndOfCentralDirectory::decode(file, archive.locator->zip64_end_offset);
      if (archive.locator->zip64_end_offset + zip::Zip64EndOfCentralDirectory::kSize !=
          locator_offset) {
        throw std::runtime_error("zip64 end record does not end at the locator");
      }
      central_end = archive.locator->zip64_end_offset;
      if (archive.end.entries_total == zip::kSentinel16) {
        archive.entry_count = archive.end64->entries_total;
      }
      if (archive.end.central_directory_offset == zip::kSentinel32) {
        archive.central_offset = archive.end64->central_directory_offset;
      }
      if (archive.end.central_directory_size == zip::kSentinel32) {
        archive.central_size = archive.end64->central_directory_size;
      }
    }
  }

  std::uint64_t offset = archive.central_offset;
  for (std::uint64_t i = 0; i < archive.entry_count; ++i) {
    InspectedEntry entry;
    entry.central_header_offset = offset;
    entry.central = zip::CentralDirectoryHeader::decode(file, offset);
    offset += zip::CentralDirectoryHeader::kSize;
    entry.central_name = name_at(file, offset, entry.central.name_length);
    offset += entry.central.name_length;
    entry.central_extra = zip::split_extra_field(
        checked_subspan(file, offset, entry.central.extra_length, "central extra"), offset,
        entry.central_name);
    offset += entry.central.extra_length + entry.central.comment_length;

    const bool size_sentinel = entry.central.uncompressed_size == zip::kSentinel32;
    const bool compressed_sentinel = entry.central.compressed_size == zip::kSentinel32;
    const bool offset_sentinel = entry.central.local_header_offset == zip::kSentinel32;
    entry.size = entry.central.uncompressed_size;
    entry.local_header_offset = entry.central.local_header_offset;
    if (size_sentinel || compressed_sentinel || offset_sentinel) {
      const auto record = find_extra(entry.central_extra, zip::kExtraZip64);
      if (!record) throw std::runtime_error(entry.central_name + ": sentinel without zip64 extra");
      const zip::Zip64Extra zip64 =
          zip::Zip64Extra::decode(record->data, size_sentinel, compressed_sentinel, offset_sentinel,
                                  false, entry.central_name);
      if (zip64.uncompressed_size) entry.size = *zip64.uncompressed_size;
      if (zip64.local_header_offset) entry.local_header_offset = *zip64.local_header_offset;
    }

    entry.local = zip::LocalFileHeader::decode(file, entry.local_header_offset);
    std::uint64_t local = entry.local_header_offset + zip::LocalFileHeader::kSize;
    entry.local_name = name_at(file, local, entry.local.name_length);
    local += entry.local.name_length;
    entry.local_extra_offset = local;
    entry.local_extra = zip::split_extra_field(
        checked_subspan(file, local, entry.local.extra_length, "local extra"), local,
        entry.local_name);
    entry.data_offset = local + entry.local.extra_length;
    checked_subspan(file, entry.data_offset, entry.size, "entry data");
    archive.entries.push_back(std::move(entry));
  }
  if (offset != archive.central_offset + archive.central_size) {
    throw std::runtime_error("central directory records end at " + std::to_string(offset) +
                             ", the end record says " +
                             std::to_string(archive.central_offset + archive.central_size));
  }
  if (offset != central_end) {
    throw std::runtime_error("central directory not followed by the end records");
  }
  return archive;
}

}  // namespace onnxzip::test_support
