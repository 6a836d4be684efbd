#include "zip_records.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "onnxzip/error.h"

namespace onnxzip::zip {
namespace {

using ::testing::HasSubstr;

// A record image: the little-endian signature, then bytes 4, 5, 6, ... (each byte holds its own
// offset), so every field decodes to a distinct value fixed by its APPNOTE offset alone.
std::vector<std::uint8_t> counting_record(std::uint32_t signature, std::size_t size) {
  std::vector<std::uint8_t> bytes(size);
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::uint8_t>(i);
  for (int i = 0; i < 4; ++i) bytes[i] = static_cast<std::uint8_t>(signature >> (8 * i));
  return bytes;
}

template <typename Record>
std::vector<std::uint8_t> encoded(const Record& record) {
  std::vector<std::uint8_t> bytes(Record::kSize);
  record.encode(bytes);
  return bytes;
}

// Expects Error(kCorrupt) whose message contains every fragment.
template <typename Fn>
void expect_corrupt(Fn&& fn, const std::vector<std::string>& fragments) {
  try {
    fn();
    FAIL() << "expected Error(kCorrupt)";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCorrupt) << e.what();
    for (const std::string& fragment : fragments) EXPECT_THAT(e.what(), HasSubstr(fragment));
  }
}

TEST(ZipRecords, LocalFileHeaderDecodesAppnoteOffsetsAndEncodesBack) {
  const auto bytes = counting_record(0x04034b50, LocalFileHeader::kSize);
  const LocalFileHeader h = LocalFileHeader::decode(bytes, 0);
  EXPECT_EQ(h.version_needed, 0x0504);
  EXPECT_EQ(h.flags, 0x0706);
  EXPECT_EQ(h.method, 0x0908);
  EXPECT_EQ(h.modified_time, 0x0b0a);
  EXPECT_EQ(h.modified_date, 0x0d0c);
  EXPECT_EQ(h.crc32, 0x11100f0eu);
  EXPECT_EQ(h.compressed_size, 0x15141312u);
  EXPECT_EQ(h.uncompressed_size, 0x19181716u);
  EXPECT_EQ(h.name_length, 0x1b1a);
  EXPECT_EQ(h.extra_length, 0x1d1c);
  EXPECT_EQ(encoded(h), bytes);
}

TEST(ZipRecords, LocalFileHeaderEncodesAndDecodesEveryField) {
  LocalFileHeader h;
  h.version_needed = 1;
  h.flags = 2;
  h.method = 3;
  h.modified_time = 4;
  h.modified_date = 5;
  h.crc32 = 0xA0000006;
  h.compressed_size = 0xB0000007;
  h.uncompressed_size = 0xC0000008;
  h.name_length = 9;
  h.extra_length = 10;
  const LocalFileHeader back = LocalFileHeader::decode(encoded(h), 0);
  EXPECT_EQ(back.version_needed, 1);
  EXPECT_EQ(back.flags, 2);
  EXPECT_EQ(back.method, 3);
  EXPECT_EQ(back.modified_time, 4);
  EXPECT_EQ(back.modified_date, 5);
  EXPECT_EQ(back.crc32, 0xA0000006u);
  EXPECT_EQ(back.compressed_size, 0xB0000007u);
  EXPECT_EQ(back.uncompressed_size, 0xC0000008u);
  EXPECT_EQ(back.name_length, 9);
  EXPECT_EQ(back.extra_length, 10);
}

TEST(ZipRecords, CentralDirectoryHeaderDecodesAppnoteOffsetsAndEncodesBack) {
  const auto bytes = counting_record(0x02014b50, CentralDirectoryHeader::kSize);
  const CentralDirectoryHeader h = CentralDirectoryHeader::decode(bytes, 0);
  EXPECT_EQ(h.version_made_by, 0x0504);
  EXPECT_EQ(h.version_needed, 0x0706);
  EXPECT_EQ(h.flags, 0x0908);
  EXPECT_EQ(h.method, 0x0b0a);
  EXPECT_EQ(h.modified_time, 0x0d0c);
  EXPECT_EQ(h.modified_date, 0x0f0e);
  EXPECT_EQ(h.crc32, 0x13121110u);
  EXPECT_EQ(h.compressed_size, 0x17161514u);
  EXPECT_EQ(h.uncompressed_size, 0x1b1a1918u);
  EXPECT_EQ(h.name_length, 0x1d1c);
  EXPECT_EQ(h.extra_length, 0x1f1e);
  EXPECT_EQ(h.comment_length, 0x2120);
  EXPECT_EQ(h.disk_number_start, 0x2322);
  EXPECT_EQ(h.internal_attributes, 0x2524);
  EXPECT_EQ(h.external_attributes, 0x29282726u);
  EXPECT_EQ(h.local_header_offset, 0x2d2c2b2au);
  EXPECT_EQ(encoded(h), bytes);
}

TEST(ZipRecords, CentralDirectoryHeaderEncodesAndDecodesEveryField) {
  CentralDirectoryHeader h;
  h.version_made_by = 1;
  h.version_needed = 2;
  h.flags = 3;
  h.method = 4;
  h.modified_time = 5;
  h.modified_date = 6;
  h.crc32 = 0xA0000007;
  h.compressed_size = 0xB0000008;
  h.uncompressed_size = 0xC0000009;
  h.name_length = 10;
  h.extra_length = 11;
  h.comment_length = 12;
  h.disk_number_start = 13;
  h.internal_attributes = 14;
  h.external_attributes = 0xD000000F;
  h.local_header_offset = 0xE0000010;
  const CentralDirectoryHeader back = CentralDirectoryHeader::decode(encoded(h), 0);
  EXPECT_EQ(back.version_made_by, 1);
  EXPECT_EQ(back.version_needed, 2);
  EXPECT_EQ(back.flags, 3);
  EXPECT_EQ(back.method, 4);
  EXPECT_EQ(back.modified_time, 5);
  EXPECT_EQ(back.modified_date, 6);
  EXPECT_EQ(back.crc32, 0xA0000007u);
  EXPECT_EQ(back.compressed_size, 0xB0000008u);
  EXPECT_EQ(back.uncompressed_size, 0xC0000009u);
  EXPECT_EQ(back.name_length, 10);
  EXPECT_EQ(back.extra_length, 11);
  EXPECT_EQ(back.comment_length, 12);
  EXPECT_EQ(back.disk_number_start, 13);
  EXPECT_EQ(back.internal_attributes, 14);
  EXPECT_EQ(back.external_attributes, 0xD000000Fu);
  EXPECT_EQ(back.local_header_offset, 0xE0000010u);
}

TEST(ZipRecords, EndOfCentralDirectoryBothDirections) {
  const auto bytes = counting_record(0x06054b50, EndOfCentralDirectory::kSize);
  const EndOfCentralDirectory r = EndOfCentralDirectory::decode(bytes, 0);
  EXPECT_EQ(r.disk_number, 0x0504);
  EXPECT_EQ(r.central_directory_disk, 0x0706);
  EXPECT_EQ(r.entries_on_disk, 0x0908);
  EXPECT_EQ(r.entries_total, 0x0b0a);
  EXPECT_EQ(r.central_directory_size, 0x0f0e0d0cu);
  EXPECT_EQ(r.central_directory_offset, 0x13121110u);
  EXPECT_EQ(r.comment_length, 0x1514);
  EXPECT_EQ(encoded(r), bytes);

  EndOfCentralDirectory e;
  e.disk_number = 1;
  e.central_directory_disk = 2;
  e.entries_on_disk = 3;
  e.entries_total = 4;
  e.central_directory_size = 0xA0000005;
  e.central_directory_offset = 0xB0000006;
  e.comment_length = 7;
  const EndOfCentralDirectory back = EndOfCentralDirectory::decode(encoded(e), 0);
  EXPECT_EQ(back.disk_number, 1);
  EXPECT_EQ(back.central_directory_disk, 2);
  EXPECT_EQ(back.entries_on_disk, 3);
  EXPECT_EQ(back.entries_total, 4);
  EXPECT_EQ(back.central_directory_size, 0xA0000005u);
  EXPECT_EQ(back.central_directory_offset, 0xB0000006u);
  EXPECT_EQ(back.comment_length, 7);
}

TEST(ZipRecords, Zip64EndOfCentralDirectoryBothDirections) {
  const auto bytes = counting_record(0x06064b50, Zip64EndOfCentralDirectory::kSize);
  const Zip64EndOfCentralDirectory r = Zip64EndOfCentralDirectory::decode(bytes, 0);
  EXPECT_EQ(r.record_size, 0x0b0a090807060504u);
  EXPECT_EQ(r.version_made_by, 0x0d0c);
  EXPECT_EQ(r.version_needed, 0x0f0e);
  EXPECT_EQ(r.disk_number, 0x13121110u);
  EXPECT_EQ(r.central_directory_disk, 0x17161514u);
  EXPECT_EQ(r.entries_on_disk, 0x1f1e1d1c1b1a1918u);
  EXPECT_EQ(r.entries_total, 0x2726252423222120u);
  EXPECT_EQ(r.central_directory_size, 0x2f2e2d2c2b2a2928u);
  EXPECT_EQ(r.central_directory_offset, 0x3736353433323130u);
  EXPECT_EQ(encoded(r), bytes);

  Zip64EndOfCentralDirectory e;
  e.record_size = 0xA000000000000001;
  e.version_made_by = 2;
  e.version_needed = 3;
  e.disk_number = 0xB0000004;
  e.central_directory_disk = 0xC0000005;
  e.entries_on_disk = 0xD000000000000006;
  e.entries_total = 0xE000000000000007;
  e.central_directory_size = 0xF000000000000008;
  e.central_directory_offset = 0x9000000000000009;
  const Zip64EndOfCentralDirectory back = Zip64EndOfCentralDirectory::decode(encoded(e), 0);
  EXPECT_EQ(back.record_size, 0xA000000000000001u);
  EXPECT_EQ(back.version_made_by, 2);
  EXPECT_EQ(back.version_needed, 3);
  EXPECT_EQ(back.disk_number, 0xB0000004u);
  EXPECT_EQ(back.central_directory_disk, 0xC0000005u);
  EXPECT_EQ(back.entries_on_disk, 0xD000000000000006u);
  EXPECT_EQ(back.entries_total, 0xE000000000000007u);
  EXPECT_EQ(back.central_directory_size, 0xF000000000000008u);
  EXPECT_EQ(back.central_directory_offset, 0x9000000000000009u);
}

TEST(ZipRecords, Zip64EndRecordDefaultsDescribeTheFixedRecord) {
  const Zip64EndOfCentralDirectory r;
  EXPECT_EQ(r.record_size, 44u);  // APPNOTE 4.3.14.1: excludes the leading 12 bytes.
  EXPECT_EQ(r.version_needed, 45);
}

TEST(ZipRecords, Zip64EndLocatorBothDirections) {
  const auto bytes = counting_record(0x07064b50, Zip64EndLocator::kSize);
  const Zip64EndLocator r = Zip64EndLocator::decode(bytes, 0);
  EXPECT_EQ(r.zip64_end_disk, 0x07060504u);
  EXPECT_EQ(r.zip64_end_offset, 0x0f0e0d0c0b0a0908u);
  EXPECT_EQ(r.total_disks, 0x13121110u);
  EXPECT_EQ(encoded(r), bytes);

  Zip64EndLocator e;
  e.zip64_end_disk = 0xA0000001;
  e.zip64_end_offset = 0xB000000000000002;
  e.total_disks = 0xC0000003;
  const Zip64EndLocator back = Zip64EndLocator::decode(encoded(e), 0);
  EXPECT_EQ(back.zip64_end_disk, 0xA0000001u);
  EXPECT_EQ(back.zip64_end_offset, 0xB000000000000002u);
  EXPECT_EQ(back.total_disks, 0xC0000003u);
}

TEST(ZipRecords, DecodeAtAnOffsetInsideALargerBuffer) {
  LocalFileHeader h;
  h.crc32 = 0x12345678;
  std::vector<std::uint8_t> file(100, 0xEE);
  h.encode(MutableByteSpan(file).subspan(37));
  EXPECT_EQ(LocalFileHeader::decode(file, 37).crc32, 0x12345678u);
}

TEST(ZipRecords, BadSignatureIsCorruptAndNamesTheOffset) {
  std::vector<std::uint8_t> file(200, 0);
  expect_corrupt([&] { LocalFileHeader::decode(file, 7); },
                 {"local file header at offset 7", "bad signature 0x00000000"});
  expect_corrupt([&] { CentralDirectoryHeader::decode(file, 11); },
                 {"central directory header at offset 11", "bad signature"});
  expect_corrupt([&] { EndOfCentralDirectory::decode(file, 13); },
                 {"end of central directory record at offset 13", "bad signature"});
  expect_corrupt([&] { Zip64EndOfCentralDirectory::decode(file, 17); },
                 {"zip64 end of central directory record at offset 17", "bad signature"});
  expect_corrupt([&] { Zip64EndLocator::decode(file, 19); },
                 {"zip64 end of central directory locator at offset 19", "bad signature"});
  // A neighbouring record's signature is still the wrong one.
  const auto central = counting_record(CentralDirectoryHeader::kSignature, 46);
  expect_corrupt([&] { LocalFileHeader::decode(central, 0); }, {"bad signature 0x02014b50"});
}

TEST(ZipRecords, TruncatedRecordIsCorruptAndNamesTheOffset) {
  const auto local = counting_record(LocalFileHeader::kSignature, LocalFileHeader::kSize);
  const ByteSpan short_local(local.data(), local.size() - 1);
  expect_corrupt([&] { LocalFileHeader::decode(short_local, 0); },
                 {"local file header", "offset 0", "length 30", "29 bytes"});

  std::vector<std::uint8_t> file(100, 0);
  expect_corrupt([&] { CentralDirectoryHeader::decode(file, 60); },
                 {"central directory header", "offset 60", "length 46"});
  expect_corrupt([&] { EndOfCentralDirectory::decode(file, 79); },
                 {"end of central directory record", "offset 79"});
  expect_corrupt([&] { Zip64EndOfCentralDirectory::decode(file, 45); },
                 {"zip64 end of central directory record", "offset 45"});
  expect_corrupt([&] { Zip64EndLocator::decode(file, 81); },
                 {"zip64 end of central directory locator", "offset 81"});
  // An offset past the end must not wrap around.
  expect_corrupt([&] { Zip64EndLocator::decode(file, ~std::uint64_t{0} - 3); },
                 {"zip64 end of central directory locator"});
}

TEST(ZipRecords, EncodeIntoATooSmallBufferIsRefused) {
  std::vector<std::uint8_t> small(29);
  try {
    LocalFileHeader{}.encode(small);
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  }
}

TEST(ZipRecords, SplitExtraFieldReturnsRecordsWithFileOffsets) {
  // id 0x0001 size 2 "ab" | id 0xD935 size 0 | id 0x1234 size 3 "xyz"
  const std::vector<std::uint8_t> extra = {0x01, 0x00, 0x02, 0x00, 'a',  'b', 0x35, 0xD9, 0x00,
                                           0x00, 0x34, 0x12, 0x03, 0x00, 'x', 'y',  'z'};
  const auto records = split_extra_field(extra, 1000, "entry 'w'");
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].id, 0x0001);
  EXPECT_EQ(records[0].data.size(), 2u);
  EXPECT_EQ(records[0].data[0], 'a');
  EXPECT_EQ(records[0].offset, 1000u);
  EXPECT_EQ(records[1].id, 0xD935);
  EXPECT_TRUE(records[1].data.empty());
  EXPECT_EQ(records[1].offset, 1006u);
  EXPECT_EQ(records[2].id, 0x1234);
  EXPECT_EQ(records[2].data.size(), 3u);
  EXPECT_EQ(records[2].data[2], 'z');
  EXPECT_EQ(records[2].offset, 1010u);
  EXPECT_TRUE(split_extra_field({}, 5, "entry 'w'").empty());
}

TEST(ZipRecords, SplitExtraFieldRefusesARecordRunningPastTheField) {
  // The second record declares 5 data bytes, only 4 follow.
  const std::vector<std::uint8_t> extra = {0x01, 0x00, 0x00, 0x00, 0x35, 0xD9,
                                           0x05, 0x00, 1,    2,    3,    4};
  expect_corrupt([&] { split_extra_field(extra, 2000, "entry 'w9'"); },
                 {"entry 'w9'", "0xd935", "offset 2004"});
  // Exactly filling the field is fine.
  const std::vector<std::uint8_t> exact = {0x35, 0xD9, 0x04, 0x00, 1, 2, 3, 4};
  EXPECT_EQ(split_extra_field(exact, 0, "e").size(), 1u);
}

TEST(ZipRecords, SplitExtraFieldToleratesOnlyZeroTailsShorterThanAHeader) {
  for (std::size_t tail = 1; tail < kExtraHeaderSize; ++tail) {
    std::vector<std::uint8_t> extra = {0x35, 0xD9, 0x02, 0x00, 0x40, 0x00};
    extra.resize(extra.size() + tail, 0);
    EXPECT_EQ(split_extra_field(extra, 0, "e").size(), 1u) << tail;
    extra.back() = 7;
    expect_corrupt([&] { split_extra_field(extra, 300, "entry 'q'"); },
                   {"entry 'q'", "truncated extra field record at offset 306"});
  }
}

TEST(ZipRecords, Zip64ExtraWritesFieldsInAppnoteOrder) {
  Zip64Extra all;
  all.uncompressed_size = 0x1111111111111111;
  all.compressed_size = 0x2222222222222222;
  all.local_header_offset = 0x3333333333333333;
  all.disk_number_start = 0x44444444;
  EXPECT_EQ(all.encoded_size(), 4u + 8 + 8 + 8 + 4);
  std::vector<std::uint8_t> out = {0xAA};  // Appends after what is there.
  all.append_to(out);
  ASSERT_EQ(out.size(), 1 + all.encoded_size());
  EXPECT_EQ(out[0], 0xAA);
  EXPECT_EQ(out[1], 0x01);
  EXPECT_EQ(out[2], 0x00);
  EXPECT_EQ(out[3], 28);
  EXPECT_EQ(out[4], 0);
  EXPECT_EQ(out[5], 0x11);
  EXPECT_EQ(out[13], 0x22);
  EXPECT_EQ(out[21], 0x33);
  EXPECT_EQ(out[29], 0x44);

  // Absent fields leave no hole: compressed size then offset, back to back.
  Zip64Extra some;
  some.compressed_size = 0x0807060504030201;
  some.local_header_offset = 0x100000000;
  EXPECT_EQ(some.encoded_size(), 20u);
  std::vector<std::uint8_t> part;
  some.append_to(part);
  const std::vector<std::uint8_t> expected = {0x01, 0x00, 16, 0, 1, 2, 3, 4, 5, 6,
                                              7,    8,    0,  0, 0, 0, 1, 0, 0, 0};
  EXPECT_EQ(part, expected);

  const ByteSpan data = ByteSpan(part).subspan(kExtraHeaderSize);
  const Zip64Extra back = Zip64Extra::decode(data, false, true, true, false, "e");
  EXPECT_FALSE(back.uncompressed_size);
  EXPECT_EQ(back.compressed_size, 0x0807060504030201u);
  EXPECT_EQ(back.local_header_offset, 0x100000000u);
  EXPECT_FALSE(back.disk_number_start);

  std::vector<std::uint8_t> all_bytes;
  all.append_to(all_bytes);
  const Zip64Extra all_back = Zip64Extra::decode(ByteSpan(all_bytes).subspan(kExtraHeaderSize),
                                                 true, true, true, true, "e");
  EXPECT_EQ(all_back.uncompressed_size, all.uncompressed_size);
  EXPECT_EQ(all_back.compressed_size, all.compressed_size);
  EXPECT_EQ(all_back.local_header_offset, all.local_header_offset);
  EXPECT_EQ(all_back.disk_number_start, all.disk_number_start);
}

TEST(ZipRecords, Zip64ExtraTooShortIsCorruptNamingTheField) {
  const std::vector<std::uint8_t> data(12, 0);
  expect_corrupt([&] { Zip64Extra::decode(data, true, true, false, false, "entry 'big'"); },
                 {"entry 'big'", "the compressed size", "12 bytes"});
  const std::vector<std::uint8_t> eleven(11, 0);
  expect_corrupt([&] { Zip64Extra::decode(eleven, false, false, true, true, "entry 'b2'"); },
                 {"entry 'b2'", "the disk number", "11 bytes"});
  EXPECT_NO_THROW(Zip64Extra::decode(data, false, false, true, false, "e"));
}

TEST(ZipRecords, AlignmentRecordLayout) {
  std::vector<std::uint8_t> out = {9, 9};
  append_alignment_record(out, 64, 11);
  const std::vector<std::uint8_t> expected = {9, 9, 0x35, 0xD9, 7, 0, 64, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(out, expected);

  std::vector<std::uint8_t> minimal;
  append_alignment_record(minimal, 0, 6);  // 0 stands for 65536.
  EXPECT_EQ(minimal, (std::vector<std::uint8_t>{0x35, 0xD9, 2, 0, 0, 0}));

  std::vector<std::uint8_t> largest;
  append_alignment_record(largest, 4096, 4 + 0xFFFF);
  EXPECT_EQ(largest.size(), 4u + 0xFFFF);
  EXPECT_EQ(largest[2], 0xFF);
  EXPECT_EQ(largest[3], 0xFF);
  EXPECT_EQ(largest[5], 0x10);

  for (const std::size_t bad : {std::size_t{0}, std::size_t{5}, std::size_t{4 + 0x10000}}) {
    std::vector<std::uint8_t> refused;
    try {
      append_alignment_record(refused, 64, bad);
      FAIL() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_THAT(e.what(), HasSubstr(std::to_string(bad)));
    }
  }
}

}  // namespace
}  // namespace onnxzip::zip
