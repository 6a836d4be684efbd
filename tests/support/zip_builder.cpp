#include "support/zip_builder.h"

#include <libdeflate.h>

#include <cstdio>
#include <memory>
#include <numeric>
#include <stdexcept>

#include "crc32.h"
#include "little_endian.h"

namespace onnxzip::testing {
namespace {

using detail::store_le16;
using detail::store_le32;
using detail::store_le64;

void append(std::vector<std::uint8_t>& out, ByteSpan bytes) {
  out.insert(out.end(), bytes.begin(), bytes.end());
}

void append_u32(std::vector<std::uint8_t>& out, std::uint32_t value) {
  std::uint8_t b[4];
  store_le32(b, value);
  append(out, b);
}

void append_u64(std::vector<std::uint8_t>& out, std::uint64_t value) {
  std::uint8_t b[8];
  store_le64(b, value);
  append(out, b);
}

std::uint32_t narrow_or_sentinel(std::uint64_t value, bool sentinel) {
  return sentinel ? zip::kSentinel32 : static_cast<std::uint32_t>(value);
}

}  // namespace

std::vector<std::uint8_t> pattern(std::size_t size, std::uint32_t seed) {
  std::vector<std::uint8_t> out(size);
  for (std::size_t i = 0; i < size; ++i) {
    out[i] = static_cast<std::uint8_t>(((i * 131 + seed) ^ (i >> 7)) & 0xFF);
  }
  return out;
}

std::vector<std::uint8_t> text_lines(std::size_t count) {
  std::vector<std::uint8_t> out;
  for (std::size_t i = 0; i < count; ++i) {
    char line[32];
    const int n = std::snprintf(line, sizeof line, "onnxzip line %04zu\n", i);
    out.insert(out.end(), line, line + n);
  }
  return out;
}

std::vector<std::uint8_t> deflate_raw(ByteSpan data, int level) {
  const std::unique_ptr<libdeflate_compressor, decltype(&libdeflate_free_compressor)> compressor(
      libdeflate_alloc_compressor(level), &libdeflate_free_compressor);
  if (!compressor) throw std::runtime_error("libdeflate_alloc_compressor failed");
  std::vector<std::uint8_t> out(libdeflate_deflate_compress_bound(compressor.get(), data.size()));
  const std::size_t n = libdeflate_deflate_compress(compressor.get(), data.data(), data.size(),
                                                    out.data(), out.size());
  if (n == 0) throw std::runtime_error("libdeflate_deflate_compress failed");
  out.resize(n);
  return out;
}

std::vector<std::uint8_t> extra_record(std::uint16_t id, const std::vector<std::uint8_t>& data) {
  // Sized once, then filled: g++ 12 at -O3 misreports insert() after a small vector as overflow.
  std::vector<std::uint8_t> out(zip::kExtraHeaderSize + data.size());
  store_le16(out.data(), id);
  store_le16(out.data() + 2, static_cast<std::uint16_t>(data.size()));
  std::copy(data.begin(), data.end(), out.begin() + zip::kExtraHeaderSize);
  return out;
}

void BuiltZip::put16(std::uint64_t offset, std::uint16_t value) {
  (void)bytes.at(offset + 1);
  store_le16(&bytes[offset], value);
}
void BuiltZip::put32(std::uint64_t offset, std::uint32_t value) {
  (void)bytes.at(offset + 3);
  store_le32(&bytes[offset], value);
}
void BuiltZip::put64(std::uint64_t offset, std::uint64_t value) {
  (void)bytes.at(offset + 7);
  store_le64(&bytes[offset], value);
}
std::uint16_t BuiltZip::get16(std::uint64_t offset) const {
  (void)bytes.at(offset + 1);
  return detail::load_le16(&bytes[offset]);
}
std::uint32_t BuiltZip::get32(std::uint64_t offset) const {
  (void)bytes.at(offset + 3);
  return detail::load_le32(&bytes[offset]);
}

BuiltZip build_zip(const std::vector<TestEntry>& entries, const ZipBuildOptions& options) {
  BuiltZip built;
  std::vector<std::uint8_t>& out = built.bytes;
  std::vector<std::vector<std::uint8_t>> central_records(entries.size());

  for (std::size_t i = 0; i < entries.size(); ++i) {
    const TestEntry& t = entries[i];
    EntryLayout layout;
    out.resize(out.size() + t.gap_before, 0);
    layout.local_header_offset = out.size();
    layout.crc32 = onnxzip::crc32(t.data);
    const std::vector<std::uint8_t> stored =
        t.method == zip::kMethodDeflated ? deflate_raw(t.data) : t.data;
    layout.compressed_size = stored.size();
    const std::uint16_t flags =
        static_cast<std::uint16_t>(t.flags | (t.data_descriptor ? zip::kFlagDataDescriptor : 0));

    std::vector<std::uint8_t> local_extra;
    if (t.zip64_sizes) {
      zip::Zip64Extra z;
      z.uncompressed_size = t.data_descriptor ? 0 : t.data.size();
      z.compressed_size = t.data_descriptor ? 0 : stored.size();
      z.append_to(local_extra);
    }
    local_extra.insert(local_extra.end(), t.local_extra.begin(), t.local_extra.end());
    if (t.alignment != 0) {
      const std::uint64_t header_end = layout.local_header_offset + zip::LocalFileHeader::kSize +
                                       t.name.size() + local_extra.size();
      std::uint64_t padding = (t.alignment - header_end % t.alignment) % t.alignment;
      if (padding != 0 && padding < zip::kMinAlignmentRecordSize) padding += t.alignment;
      if (padding != 0) {
        zip::append_alignment_record(local_extra, static_cast<std::uint16_t>(t.alignment), padding);
      }
    }

    zip::LocalFileHeader local;
    local.version_needed = t.zip64_sizes ? zip::kVersionZip64 : zip::kVersionDefault;
    local.flags = flags;
    local.method = t.method;
    local.modified_date = 0x0021;
    local.crc32 = t.data_descriptor ? 0 : layout.crc32;
    local.compressed_size =
        t.data_descriptor && !t.zip64_sizes ? 0 : narrow_or_sentinel(stored.size(), t.zip64_sizes);
    local.uncompressed_size =
        t.data_descriptor && !t.zip64_sizes ? 0 : narrow_or_sentinel(t.data.size(), t.zip64_sizes);
    local.name_length = static_cast<std::uint16_t>(t.name.size());
    local.extra_length = static_cast<std::uint16_t>(local_extra.size());
    std::uint8_t header[zip::LocalFileHeader::kSize];
    local.encode(header);
    append(out, header);
    out.insert(out.end(), t.name.begin(), t.name.end());
    append(out, local_extra);
    layout.data_offset = out.size();
    append(out, stored);
    if (t.data_descriptor) {
      if (t.descriptor_signature) append_u32(out, zip::DataDescriptor::kSignature);
      append_u32(out, layout.crc32);
      if (t.descriptor_wide) {
        append_u64(out, stored.size());
        append_u64(out, t.data.size());
      } else {
        append_u32(out, static_cast<std::uint32_t>(stored.size()));
        append_u32(out, static_cast<std::uint32_t>(t.data.size()));
      }
    }
    layout.end_offset = out.size();

    std::vector<std::uint8_t> central_extra;
    if (t.zip64_sizes || t.zip64_offset) {
      zip::Zip64Extra z;
      if (t.zip64_sizes) {
        z.uncompressed_size = t.data.size();
        z.compressed_size = stored.size();
      }
      if (t.zip64_offset) z.local_header_offset = layout.local_header_offset;
      z.append_to(central_extra);
    }
    central_extra.insert(central_extra.end(), t.central_extra.begin(), t.central_extra.end());
    zip::CentralDirectoryHeader central;
    central.version_needed = local.version_needed;
    central.version_made_by = static_cast<std::uint16_t>(0x0300 | central.version_needed);
    central.flags = flags;
    central.method = t.method;
    central.modified_date = 0x0021;
    central.crc32 = layout.crc32;
    central.compressed_size = narrow_or_sentinel(stored.size(), t.zip64_sizes);
    central.uncompressed_size = narrow_or_sentinel(t.data.size(), t.zip64_sizes);
    central.name_length = local.name_length;
    central.extra_length = static_cast<std::uint16_t>(central_extra.size());
    central.comment_length = static_cast<std::uint16_t>(t.comment.size());
    central.external_attributes = 0100644u << 16;
    central.local_header_offset = narrow_or_sentinel(layout.local_header_offset, t.zip64_offset);
    std::vector<std::uint8_t>& record = central_records[i];
    record.resize(zip::CentralDirectoryHeader::kSize);
    central.encode(record);
    record.insert(record.end(), t.name.begin(), t.name.end());
    append(record, central_extra);
    record.insert(record.end(), t.comment.begin(), t.comment.end());
    built.entries.push_back(layout);
  }

  std::vector<std::size_t> order = options.central_order;
  if (order.empty()) {
    order.resize(entries.size());
    std::iota(order.begin(), order.end(), 0);
  }
  built.central_directory_offset = out.size();
  for (const std::size_t i : order) {
    built.entries.at(i).central_header_offset = out.size();
    append(out, central_records.at(i));
  }
  built.central_directory_size = out.size() - built.central_directory_offset;

  if (options.zip64_end) {
    built.zip64_end_offset = out.size();
    zip::Zip64EndOfCentralDirectory record;
    record.entries_on_disk = order.size();
    record.entries_total = order.size();
    record.central_directory_size = built.central_directory_size;
    record.central_directory_offset = built.central_directory_offset;
    std::uint8_t bytes[zip::Zip64EndOfCentralDirectory::kSize];
    record.encode(bytes);
    append(out, bytes);
    built.locator_offset = out.size();
    zip::Zip64EndLocator locator;
    locator.zip64_end_offset = built.zip64_end_offset;
    std::uint8_t locator_bytes[zip::Zip64EndLocator::kSize];
    locator.encode(locator_bytes);
    append(out, locator_bytes);
  }
  built.end_offset = out.size();
  zip::EndOfCentralDirectory end;
  const bool sentinel = options.zip64_end && options.sentinel_end;
  end.entries_on_disk = sentinel ? zip::kSentinel16 : static_cast<std::uint16_t>(order.size());
  end.entries_total = end.entries_on_disk;
  end.central_directory_size = narrow_or_sentinel(built.central_directory_size, sentinel);
  end.central_directory_offset = narrow_or_sentinel(built.central_directory_offset, sentinel);
  end.comment_length = static_cast<std::uint16_t>(options.comment.size());
  std::uint8_t end_bytes[zip::EndOfCentralDirectory::kSize];
  end.encode(end_bytes);
  append(out, end_bytes);
  out.insert(out.end(), options.comment.begin(), options.comment.end());
  return built;
}

}  // namespace onnxzip::testing
