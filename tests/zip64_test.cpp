// ZIP64 for real: an entry of 4 GiB + 1 byte followed by an entry past the 4 GiB offset, and an
// archive of 70,000 entries. They write gigabytes, so the suite is named *Slow*: CTest labels it
// `slow` and runs it serially (tests/CMakeLists.txt); `ctest -LE slow` leaves it out locally.
// The archives live in TMPDIR (CTest points it into the build tree) and are deleted afterwards.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "onnxzip/internal/mapped_file.h"
#include "onnxzip/internal/zip_reader.h"
#include "support/external_tool.h"
#include "support/scratch_dir.h"
#include "support/zip_inspector.h"
#include "zip_records.h"
#include "zip_writer.h"

namespace onnxzip {
namespace {

using test_support::find_extra;
using test_support::find_tool;
using test_support::inspect_archive;
using test_support::InspectedArchive;
using test_support::InspectedEntry;
using test_support::run_tool;
using test_support::ScratchDir;
using test_support::shell_quote;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr std::uint64_t kFourGiB = std::uint64_t{1} << 32;
constexpr std::uint16_t kMadeByUnixZip64 = 0x0300 | 45;

std::uint64_t load64(ByteSpan bytes, std::size_t at) {
  std::uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = value << 8 | bytes[at + static_cast<std::size_t>(i)];
  return value;
}

// Both external judges read every entry and compare its CRC-32.
void expect_tools_accept(const std::filesystem::path& archive, std::size_t entry_count) {
  const std::string quoted = shell_quote(archive.string());
  if (find_tool("/usr/bin/python3")) {
    const auto start = std::chrono::steady_clock::now();
    const auto r = run_tool("/usr/bin/python3 -m zipfile -t " + quoted);
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.output, "Done testing\n");  // Anything else names a corrupted entry.
    std::printf("[ timing   ] python3 -m zipfile -t: %.1f s\n",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  } else {
    ADD_FAILURE() << "/usr/bin/python3 is missing";
  }
  if (find_tool("7z")) {
    const auto start = std::chrono::steady_clock::now();
    const auto r = run_tool("7z t " + quoted);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("Everything is Ok"));
    EXPECT_THAT(r.output, HasSubstr("Files: " + std::to_string(entry_count)));
    EXPECT_THAT(r.output, ::testing::Not(HasSubstr("Warning")));
    std::printf("[ timing   ] 7z t: %.1f s\n",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  } else {
    ADD_FAILURE() << "7z is missing";
  }
}

void expect_zip64_end_records(const InspectedArchive& archive, std::uint64_t count) {
  ASSERT_TRUE(archive.locator.has_value());
  ASSERT_TRUE(archive.end64.has_value());
  const zip::Zip64EndOfCentralDirectory& end64 = *archive.end64;
  EXPECT_EQ(end64.record_size, 44u);
  EXPECT_EQ(end64.version_made_by, kMadeByUnixZip64);
  EXPECT_EQ(end64.version_needed, 45);
  EXPECT_EQ(end64.disk_number, 0u);
  EXPECT_EQ(end64.central_directory_disk, 0u);
  EXPECT_EQ(end64.entries_on_disk, count);
  EXPECT_EQ(end64.entries_total, count);
  EXPECT_EQ(end64.central_directory_offset, archive.central_offset);
  EXPECT_EQ(end64.central_directory_size, archive.central_size);
  // Record, then locator, then end record, back to back after the central directory.
  EXPECT_EQ(archive.locator->zip64_end_offset, archive.central_offset + archive.central_size);
  EXPECT_EQ(archive.locator->zip64_end_disk, 0u);
  EXPECT_EQ(archive.locator->total_disks, 1u);
  EXPECT_EQ(archive.locator_offset + zip::Zip64EndLocator::kSize, archive.end_offset);
  EXPECT_EQ(archive.end.disk_number, 0);
  EXPECT_EQ(archive.end.central_directory_disk, 0);
}

TEST(Zip64Slow, EntryOf4GiBPlusOneThenAnEntryPastTheFourGiBOffset) {
  const ScratchDir dir("zip64_big");
  const auto path = dir / "big.onnxz";
  constexpr std::uint32_t kAlignment = 65536;
  constexpr std::uint64_t kBigSize = kFourGiB + 1;
  // The big entry's header (30 + 3 name + 20 zip64 extra) after "lead" ends 10 bytes past a
  // boundary: its padding (65526) plus the zip64 extra would overflow the u16 extra length, so
  // the writer must leave a 64-byte gap (the zip64 variant of the gap rule).
  const std::vector<std::uint8_t> lead(65536 + 10 - 53, 0x11);
  const std::vector<std::uint8_t> after(1000, 0x22);

  std::vector<std::uint8_t> chunk(1 << 20);
  for (std::size_t i = 0; i < chunk.size(); ++i) {
    chunk[i] = static_cast<std::uint8_t>(i * 7 + (i >> 12));
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<WrittenEntry> written;
  {
    ZipWriterOptions options;
    options.alignment = kAlignment;
    ZipWriter writer(path, options);
    writer.add("lead", lead);
    writer.add("big", kBigSize, [&](EntrySink& sink) {
      for (std::uint64_t i = 0; i < kFourGiB / chunk.size(); ++i) sink.write(chunk);
      sink.write(ByteSpan(chunk).first(1));
    });
    writer.add("after", after);
    writer.finish();
    const auto& entries = writer.entries();
    ASSERT_EQ(entries.size(), 3u);
    EXPECT_FALSE(entries[0].zip64);
    EXPECT_TRUE(entries[1].zip64);
    EXPECT_TRUE(entries[2].zip64);
    EXPECT_EQ(entries[1].local_header_offset, 65536 + lead.size() + 64) << "the gap";
    EXPECT_GT(entries[2].local_header_offset, kFourGiB);
    written = entries;
  }
  std::printf("[ timing   ] writing 4 GiB: %.1f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());

  {
    const auto mapped = MappedFile::open(path);
    const ByteSpan file = mapped->bytes();
    const InspectedArchive archive = inspect_archive(file);
    ASSERT_EQ(archive.entries.size(), 3u);

    // The end record: real count and size, sentinel only for the offset past 4 GiB.
    EXPECT_EQ(archive.end.entries_total, 3);
    EXPECT_EQ(archive.end.entries_on_disk, 3);
    EXPECT_EQ(archive.end.central_directory_offset, zip::kSentinel32);
    EXPECT_EQ(archive.end.central_directory_size, archive.central_size);
    EXPECT_GT(archive.central_offset, kFourGiB);
    expect_zip64_end_records(archive, 3);

    const InspectedEntry& lead_entry = archive.entries[0];
    EXPECT_EQ(lead_entry.local.version_needed, 20);
    EXPECT_EQ(lead_entry.central.version_needed, 20);
    EXPECT_EQ(lead_entry.central.extra_length, 0);

    // Big entry, local header: sentinels, then zip64 extra with BOTH sizes, then 0xD935.
    const InspectedEntry& big = archive.entries[1];
    EXPECT_EQ(big.local.version_needed, 45);
    EXPECT_EQ(big.local.compressed_size, zip::kSentinel32);
    EXPECT_EQ(big.local.uncompressed_size, zip::kSentinel32);
    ASSERT_EQ(big.local_extra.size(), 2u);
    EXPECT_EQ(big.local_extra[0].id, zip::kExtraZip64);
    ASSERT_EQ(big.local_extra[0].data.size(), 16u);
    EXPECT_EQ(load64(big.local_extra[0].data, 0), kBigSize);
    EXPECT_EQ(load64(big.local_extra[0].data, 8), kBigSize);
    EXPECT_EQ(big.local_extra[1].id, zip::kExtraAlignment);
    EXPECT_EQ(big.local_extra[1].data[0], 0);  // 65536 is written as 0.
    EXPECT_EQ(big.local_extra[1].data[1], 0);
    EXPECT_EQ(big.local.extra_length, 20 + 65462) << "padding computed after the zip64 extra";
    EXPECT_EQ(big.data_offset % kAlignment, 0u);
    // Central: sentinels for the sizes, zip64 extra with only the sizes; the offset is small.
    EXPECT_EQ(big.central.version_needed, 45);
    EXPECT_EQ(big.central.version_made_by, kMadeByUnixZip64);
    EXPECT_EQ(big.central.compressed_size, zip::kSentinel32);
    EXPECT_EQ(big.central.uncompressed_size, zip::kSentinel32);
    EXPECT_EQ(big.central.local_header_offset, big.local_header_offset);
    ASSERT_EQ(big.central_extra.size(), 1u);
    EXPECT_EQ(big.central_extra[0].id, zip::kExtraZip64);
    EXPECT_EQ(big.central_extra[0].data.size(), 16u);
    EXPECT_EQ(big.size, kBigSize);
    // The bytes: first and last piece (no full scan; the tools below check every CRC).
    EXPECT_TRUE(std::equal(chunk.begin(), chunk.end(), file.begin() + big.data_offset));
    EXPECT_EQ(file[big.data_offset + kBigSize - 1], chunk[0]);
    EXPECT_TRUE(std::equal(chunk.begin(), chunk.end(),
                           file.begin() + big.data_offset + kFourGiB - chunk.size()));

    // After: small sizes (no local zip64 extra), offset past 4 GiB only in the central extra.
    const InspectedEntry& late = archive.entries[2];
    EXPECT_GT(late.local_header_offset, kFourGiB);
    EXPECT_EQ(late.local.version_needed, 45);
    EXPECT_EQ(late.local.uncompressed_size, after.size());
    ASSERT_EQ(late.local_extra.size(), 1u);
    EXPECT_EQ(late.local_extra[0].id, zip::kExtraAlignment);
    EXPECT_EQ(late.central.version_needed, 45);
    EXPECT_EQ(late.central.uncompressed_size, after.size());
    EXPECT_EQ(late.central.local_header_offset, zip::kSentinel32);
    ASSERT_EQ(late.central_extra.size(), 1u);
    EXPECT_EQ(late.central_extra[0].id, zip::kExtraZip64);
    ASSERT_EQ(late.central_extra[0].data.size(), 8u);
    EXPECT_EQ(load64(late.central_extra[0].data, 0), late.local_header_offset);
    EXPECT_EQ(late.data_offset % kAlignment, 0u);
    EXPECT_TRUE(std::equal(after.begin(), after.end(), file.begin() + late.data_offset));
  }

  {
    // Our own reader agrees with the writer on every number, including those only the zip64
    // records hold, and finds nothing to report but the gap the writer had to leave.
    const ZipReader reader = ZipReader::open(path);
    EXPECT_TRUE(reader.has_zip64_end_record());
    EXPECT_GT(reader.central_directory_offset(), kFourGiB);
    ASSERT_EQ(reader.entries().size(), 3u);
    for (std::size_t i = 0; i < 3; ++i) {
      const ZipEntry& e = reader.entries()[i];
      EXPECT_EQ(e.name, written[i].name);
      EXPECT_EQ(e.local_header_offset, written[i].local_header_offset) << e.name;
      EXPECT_EQ(e.local->data_offset, written[i].data_offset) << e.name;
      EXPECT_EQ(e.size, written[i].size) << e.name;
      EXPECT_EQ(e.compressed_size, written[i].size) << e.name;
      EXPECT_EQ(e.crc32, written[i].crc32) << e.name;
      EXPECT_EQ(e.zip64, written[i].zip64) << e.name;
      EXPECT_EQ(reader.stored_data(e).size(), written[i].size) << e.name;
    }
    EXPECT_EQ(reader.at("big").size, kBigSize);
    ASSERT_EQ(reader.findings().size(), 1u);
    EXPECT_EQ(reader.findings()[0].kind, ZipFindingKind::kGap);
    EXPECT_EQ(reader.findings()[0].entry, "lead");
    EXPECT_NO_THROW(reader.verify(reader.at("lead")));
    EXPECT_NO_THROW(reader.verify(reader.at("after")));
    // crc32 is ISA-L assembly, uninstrumented, so 4 GiB from the page cache takes about a
    // second even under sanitizers.
    const auto verify_start = std::chrono::steady_clock::now();
    EXPECT_NO_THROW(reader.verify(reader.at("big")));
    std::printf(
        "[ timing   ] ZipReader::verify of 4 GiB: %.1f s\n",
        std::chrono::duration<double>(std::chrono::steady_clock::now() - verify_start).count());
  }

  expect_tools_accept(path, 3);
  EXPECT_THAT(dir.file_names(), ElementsAre("big.onnxz"));
}

TEST(Zip64Slow, SeventyThousandEntries) {
  const ScratchDir dir("zip64_many");
  const auto path = dir / "many.onnxz";
  constexpr std::size_t kCount = 70000;
  const std::vector<std::uint8_t> payload = {1, 2, 3, 4};
  const auto name_of = [](std::size_t i) {
    char name[16];
    std::snprintf(name, sizeof name, "e%05zu", i);
    return std::string(name);
  };
  {
    ZipWriter writer(path);
    for (std::size_t i = 0; i < kCount; ++i) {
      writer.add(name_of(i), ByteSpan(payload).first(i % 5));
    }
    writer.finish();
  }

  const auto mapped = MappedFile::open(path);
  const ByteSpan file = mapped->bytes();
  const InspectedArchive archive = inspect_archive(file);
  ASSERT_EQ(archive.entries.size(), kCount);
  // Only the count overflows: the end record holds 0xFFFF there and real values elsewhere.
  EXPECT_EQ(archive.end.entries_total, 0xFFFF);
  EXPECT_EQ(archive.end.entries_on_disk, 0xFFFF);
  EXPECT_EQ(archive.end.central_directory_offset, archive.central_offset);
  EXPECT_EQ(archive.end.central_directory_size, archive.central_size);
  expect_zip64_end_records(archive, kCount);
  for (std::size_t i = 0; i < kCount; ++i) {
    const InspectedEntry& entry = archive.entries[i];
    ASSERT_EQ(entry.central_name, name_of(i));
    ASSERT_EQ(entry.central.version_needed, 20) << i;
    ASSERT_EQ(entry.central.extra_length, 0) << i;
    ASSERT_EQ(entry.data_offset % 64, 0u) << i;
    ASSERT_EQ(entry.size, i % 5);
    ASSERT_TRUE(std::equal(payload.begin(), payload.begin() + static_cast<std::ptrdiff_t>(i % 5),
                           file.begin() + entry.data_offset));
  }

  // Our own reader: the count comes from the zip64 end record, nothing to report.
  const ZipReader reader = ZipReader::open(path);
  EXPECT_TRUE(reader.has_zip64_end_record());
  EXPECT_TRUE(reader.findings().empty());
  ASSERT_EQ(reader.entries().size(), kCount);
  for (std::size_t i = 0; i < kCount; ++i) {
    const ZipEntry& e = reader.entries()[i];
    ASSERT_EQ(e.name, name_of(i));
    ASSERT_EQ(reader.find(e.name), &e);
    ASSERT_EQ(e.local_header_offset, archive.entries[i].local_header_offset) << i;
    ASSERT_EQ(e.local->data_offset, archive.entries[i].data_offset) << i;
    ASSERT_EQ(e.size, i % 5) << i;
    ASSERT_FALSE(e.zip64) << i;
    ASSERT_NO_THROW(reader.verify(e)) << i;
  }
  expect_tools_accept(path, kCount);
}

}  // namespace
}  // namespace onnxzip
