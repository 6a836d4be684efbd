// Test support: walks a ZIP archive the way the format defines it (end record, optional zip64
// locator and record, central directory, local headers) using only the record decoders of
// src/zip_records.h, so writer tests can check every header field without a zip reader.
#ifndef ONNXZIP_TESTS_SUPPORT_ZIP_INSPECTOR_H_
#define ONNXZIP_TESTS_SUPPORT_ZIP_INSPECTOR_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "onnxzip/bytes.h"
#include "zip_records.h"

namespace onnxzip::test_support {

struct InspectedEntry {
  std::uint64_t central_header_offset = 0;
  zip::CentralDirectoryHeader central;
  std::string central_name;
  std::vector<zip::ExtraRecord> central_extra;  // Borrowed from the file bytes.

  // Real values: the central header's, or its zip64 extra's where the field holds the sentinel.
  std::uint64_t size = 0;
  std::uint64_t local_header_offset = 0;

  zip::LocalFileHeader local;
  std::string local_name;
  std::vector<zip::ExtraRecord> local_extra;
  std::uint64_t local_extra_offset = 0;
  std::uint64_t data_offset = 0;  // Right after the local header, its name and extra field.
};

struct InspectedArchive {
  std::uint64_t end_offset = 0;
  zip::EndOfCentralDirectory end;
  std::optional<zip::Zip64EndLocator> locator;
  std::uint64_t locator_offset = 0;
  std::optional<zip::Zip64EndOfCentralDirectory> end64;
  // Real values, from the zip64 record where the end record holds a sentinel.
  std::uint64_t entry_count = 0;
  std::uint64_t central_offset = 0;
  std::uint64_t central_size = 0;
  std::vector<InspectedEntry> entries;
};

// Decodes `file`, which must end with an end record without a comment (what ZipWriter writes).
// Throws onnxzip::Error from the decoders, or std::runtime_error for an inconsistency the
// decoders cannot see (the central directory not ending where the records end).
InspectedArchive inspect_archive(ByteSpan file);

// The record with `id` in `records`, or nullopt.
std::optional<zip::ExtraRecord> find_extra(const std::vector<zip::ExtraRecord>& records,
                                           std::uint16_t id);

}  // namespace onnxzip::test_support

#endif  // ONNXZIP_TESTS_SUPPORT_ZIP_INSPECTOR_H_
