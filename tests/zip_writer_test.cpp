#include "zip_writer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "crc32.h"
#include "crc_worker_testing.h"
#include "onnxzip/error.h"
#include "onnxzip/internal/mapped_file.h"
#include "support/scratch_dir.h"
#include "support/zip_inspector.h"
#include "zip_records.h"

namespace onnxzip {
namespace {

using test_support::find_extra;
using test_support::inspect_archive;
using test_support::InspectedArchive;
using test_support::read_file_bytes;
using test_support::ScratchDir;
using test_support::write_file_bytes;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr std::uint32_t kDosDate1980 = 0x0021;
constexpr std::uint32_t kRegularFile0644 = 0100644u << 16;

struct EntrySpec {
  std::string name;
  std::vector<std::uint8_t> bytes;
};

std::vector<std::uint8_t> pattern(std::size_t size, unsigned seed) {
  std::vector<std::uint8_t> bytes(size);
  for (std::size_t i = 0; i < size; ++i) {
    bytes[i] = static_cast<std::uint8_t>(i * 131 + seed * 29 + (i >> 9));
  }
  return bytes;
}

// A valid name of exactly `length` bytes, distinct per `index`.
std::string name_of_length(std::size_t length, std::size_t index) {
  std::string name = "t" + std::to_string(index) + "_";
  name.resize(std::max(length, name.size()), 'x');
  name.resize(length);
  return name;
}

// Feeds `bytes` to the sink in uneven pieces, empty ones included.
void feed_in_pieces(EntrySink& sink, ByteSpan bytes) {
  static constexpr std::size_t kPieces[] = {1, 0, 7, 4096, 3, 65537, 100000};
  std::size_t position = 0;
  for (std::size_t i = 0; position < bytes.size(); ++i) {
    const std::size_t piece = std::min(kPieces[i % std::size(kPieces)], bytes.size() - position);
    EXPECT_EQ(sink.remaining(), bytes.size() - position);
    sink.write(bytes.subspan(position, piece));
    position += piece;
  }
  EXPECT_EQ(sink.remaining(), 0u);
}

enum class WritePath { kSpan, kProducer };

std::vector<WrittenEntry> write_archive(const std::filesystem::path& path,
                                        const std::vector<EntrySpec>& specs,
                                        std::uint32_t alignment, WritePath how) {
  ZipWriterOptions options;
  options.alignment = alignment;
  options.buffer_size = 4096;  // Small, so both buffered and direct writes happen.
  ZipWriter writer(path, options);
  for (const EntrySpec& spec : specs) {
    const WrittenEntry& entry =
        how == WritePath::kSpan ? writer.add(spec.name, spec.bytes)
                                : writer.add(spec.name, spec.bytes.size(), [&](EntrySink& sink) {
                                    feed_in_pieces(sink, spec.bytes);
                                  });
    EXPECT_EQ(entry.name, spec.name);
    EXPECT_EQ(entry.size, spec.bytes.size());
  }
  writer.finish();
  return writer.entries();
}

// The padding the format prescribes for a local header ending (zip64 extra included) at
// `header_end`, before the gap rule.
std::uint64_t natural_padding(std::uint64_t header_end, std::uint32_t alignment) {
  return (alignment - header_end % alignment) % alignment;
}

// Checks every byte of the layout against the format decisions, independently of the writer's
// own arithmetic. Only for archives without zip64 (the zip64 test has its own checks).
void check_archive(ByteSpan file, const std::vector<EntrySpec>& specs,
                   const std::vector<WrittenEntry>& written, std::uint32_t alignment) {
  const InspectedArchive archive = inspect_archive(file);
  ASSERT_EQ(archive.entries.size(), specs.size());
  ASSERT_EQ(written.size(), specs.size());
  EXPECT_FALSE(archive.locator.has_value()) << "no zip64 records in a small archive";
  EXPECT_EQ(archive.end.disk_number, 0);
  EXPECT_EQ(archive.end.central_directory_disk, 0);
  EXPECT_EQ(archive.end.entries_on_disk, specs.size());
  EXPECT_EQ(archive.end.entries_total, specs.size());
  EXPECT_EQ(archive.end.comment_length, 0);

  std::uint64_t previous_end = 0;  // End of the previous entry's data.
  for (std::size_t i = 0; i < specs.size(); ++i) {
    SCOPED_TRACE("entry " + std::to_string(i) + " '" + specs[i].name + "'");
    const EntrySpec& spec = specs[i];
    const auto& entry = archive.entries[i];
    const WrittenEntry& w = written[i];
    const std::uint32_t crc = crc32(spec.bytes);
    const std::uint64_t n = spec.name.size();

    // What the writer reports.
    EXPECT_EQ(w.name, spec.name);
    EXPECT_EQ(w.size, spec.bytes.size());
    EXPECT_EQ(w.crc32, crc);
    EXPECT_FALSE(w.zip64);
    EXPECT_EQ(w.local_header_offset, entry.local_header_offset);
    EXPECT_EQ(w.data_offset, entry.data_offset);

    // The promise: aligned data, and the bytes there are the payload.
    EXPECT_EQ(entry.data_offset % alignment, 0u);
    ASSERT_LE(entry.data_offset + spec.bytes.size(), file.size());
    EXPECT_TRUE(std::equal(spec.bytes.begin(), spec.bytes.end(),
                           file.begin() + static_cast<std::ptrdiff_t>(entry.data_offset)));

    // Entries follow each other; only alignment 65536 with a natural padding of 1..5 bytes
    // leaves a 64-byte gap of zeros.
    const std::uint64_t natural = natural_padding(previous_end + 30 + n, alignment);
    const std::uint64_t gap = (alignment == 65536 && natural >= 1 && natural <= 5) ? 64 : 0;
    EXPECT_EQ(entry.local_header_offset, previous_end + gap);
    for (std::uint64_t g = previous_end; g < previous_end + gap; ++g) EXPECT_EQ(file[g], 0) << g;

    // Local header.
    EXPECT_EQ(entry.local.version_needed, 20);
    EXPECT_EQ(entry.local.flags, zip::kFlagUtf8);
    EXPECT_EQ(entry.local.method, zip::kMethodStored);
    EXPECT_EQ(entry.local.modified_time, 0);
    EXPECT_EQ(entry.local.modified_date, kDosDate1980);
    EXPECT_EQ(entry.local.crc32, crc);
    EXPECT_EQ(entry.local.compressed_size, spec.bytes.size());
    EXPECT_EQ(entry.local.uncompressed_size, spec.bytes.size());
    EXPECT_EQ(entry.local_name, spec.name);

    // Local extra: nothing, or exactly one 0xD935 record of the prescribed size.
    const std::uint64_t header_end = entry.local_header_offset + 30 + n;
    std::uint64_t padding = natural_padding(header_end, alignment);
    if (padding != 0 && padding < 6) padding += alignment;
    EXPECT_EQ(entry.local.extra_length, padding);
    if (padding == 0) {
      EXPECT_TRUE(entry.local_extra.empty());
    } else {
      ASSERT_EQ(entry.local_extra.size(), 1u);
      const zip::ExtraRecord& record = entry.local_extra[0];
      EXPECT_EQ(record.id, 0xD935);
      ASSERT_EQ(record.data.size(), padding - 4);
      const std::uint32_t field = record.data[0] | (record.data[1] << 8);
      EXPECT_EQ(field, alignment == 65536 ? 0u : alignment);
      EXPECT_TRUE(std::all_of(record.data.begin() + 2, record.data.end(),
                              [](std::uint8_t b) { return b == 0; }));
    }
    EXPECT_EQ(entry.data_offset, header_end + padding);

    // Central directory header.
    EXPECT_EQ(entry.central.version_made_by, 0x0300 | 20);
    EXPECT_EQ(entry.central.version_needed, 20);
    EXPECT_EQ(entry.central.flags, zip::kFlagUtf8);
    EXPECT_EQ(entry.central.method, zip::kMethodStored);
    EXPECT_EQ(entry.central.modified_time, 0);
    EXPECT_EQ(entry.central.modified_date, kDosDate1980);
    EXPECT_EQ(entry.central.crc32, crc);
    EXPECT_EQ(entry.central.compressed_size, spec.bytes.size());
    EXPECT_EQ(entry.central.uncompressed_size, spec.bytes.size());
    EXPECT_EQ(entry.central_name, spec.name);
    EXPECT_EQ(entry.central.extra_length, 0) << "no alignment record in the central directory";
    EXPECT_EQ(entry.central.comment_length, 0);
    EXPECT_EQ(entry.central.disk_number_start, 0);
    EXPECT_EQ(entry.central.internal_attributes, 0);
    EXPECT_EQ(entry.central.external_attributes, kRegularFile0644);
    EXPECT_EQ(entry.central.local_header_offset, entry.local_header_offset);

    previous_end = entry.data_offset + spec.bytes.size();
  }
  // Nothing between the last data byte and the central directory, nothing after the end record.
  EXPECT_EQ(archive.central_offset, previous_end);
  EXPECT_EQ(archive.central_offset + archive.central_size, archive.end_offset);
  EXPECT_EQ(archive.end_offset + 22, file.size());
}

// ---------------------------------------------------------------------------------------------
// Layout, table-driven over alignments and name-length arrangements.

class ZipWriterLayoutTest
    : public ::testing::TestWithParam<std::tuple<std::uint32_t, std::size_t>> {};

std::vector<EntrySpec> layout_specs(std::size_t rotation) {
  static constexpr std::size_t kSizes[] = {0, 1, 63, 64, 65, 1 << 20};
  static constexpr std::size_t kNameLengths[] = {1, 2, 9, 40, 100, 255};
  std::vector<EntrySpec> specs;
  for (std::size_t i = 0; i < std::size(kSizes); ++i) {
    const std::size_t length = kNameLengths[(i + rotation) % std::size(kNameLengths)];
    specs.push_back(
        {length == 1 ? std::string(1, static_cast<char>('a' + i)) : name_of_length(length, i),
         pattern(kSizes[i], static_cast<unsigned>(i))});
  }
  specs.push_back({"__MODEL_PROTO", pattern(777, 99)});
  return specs;
}

TEST_P(ZipWriterLayoutTest, EveryEntryIsAlignedAndEveryHeaderFieldIsAsSpecified) {
  const auto [alignment, rotation] = GetParam();
  const ScratchDir dir("zipw_layout");
  const std::vector<EntrySpec> specs = layout_specs(rotation);

  const auto span_written = write_archive(dir / "span.zip", specs, alignment, WritePath::kSpan);
  const auto span_file = read_file_bytes(dir / "span.zip");
  check_archive(span_file, specs, span_written, alignment);

  const auto producer_written =
      write_archive(dir / "producer.zip", specs, alignment, WritePath::kProducer);
  const auto producer_file = read_file_bytes(dir / "producer.zip");
  check_archive(producer_file, specs, producer_written, alignment);
  EXPECT_TRUE(span_file == producer_file) << "producer and span paths must give the same bytes";
  EXPECT_THAT(dir.file_names(), ElementsAre("producer.zip", "span.zip"));
}

INSTANTIATE_TEST_SUITE_P(AlignmentsAndNames, ZipWriterLayoutTest,
                         ::testing::Combine(::testing::Values(64u, 4096u, 65536u),
                                            ::testing::Values(std::size_t{0}, std::size_t{3})),
                         [](const auto& param_info) {
                           return "A" + std::to_string(std::get<0>(param_info.param)) + "_rot" +
                                  std::to_string(std::get<1>(param_info.param));
                         });

// ---------------------------------------------------------------------------------------------
// The padding rule at its edges: no record, records that would be shorter than 6 bytes, and the
// 64-byte gap that alignment 65536 needs when the padding cannot fit an extra field.

// Where the second entry of a padding case goes: after the first, with its padding or a gap.
void check_second_entry(ByteSpan file, const std::vector<WrittenEntry>& written,
                        std::uint32_t alignment, std::uint64_t natural, std::uint64_t first_size) {
  const std::uint64_t first_end = written[0].data_offset + first_size;
  const auto second = inspect_archive(file).entries[1];
  if (natural == 0) {
    EXPECT_EQ(second.local_header_offset, first_end);
    EXPECT_EQ(second.local.extra_length, 0);
  } else if (natural >= 6) {
    EXPECT_EQ(second.local_header_offset, first_end);
    EXPECT_EQ(second.local.extra_length, natural);
  } else if (alignment < 65536) {
    EXPECT_EQ(second.local_header_offset, first_end);
    EXPECT_EQ(second.local.extra_length, natural + alignment);
  } else {
    // The record would need 65537..65541 bytes: 64 zero bytes go before the header instead.
    EXPECT_EQ(second.local_header_offset, first_end + 64);
    EXPECT_EQ(second.local.extra_length, 65536 + natural - 64);
  }
  EXPECT_EQ(written[1].data_offset % alignment, 0u);
}

class ZipWriterPaddingTest
    : public ::testing::TestWithParam<std::tuple<std::uint32_t, std::uint64_t>> {};

TEST_P(ZipWriterPaddingTest, SecondEntryGetsThePrescribedPaddingOrGap) {
  const auto [alignment, natural] = GetParam();
  const ScratchDir dir("zipw_padding");
  // The second entry ("abc") starts right after the first one's data, which starts on a
  // multiple of A; choose the first size so its header ends `natural` bytes short of a boundary.
  const std::uint64_t first_size = (2 * alignment - natural - (30 + 3)) % alignment;
  // The second entry small (header, then data) and large (data, then its header once the CRC-32
  // computed beside the copy is known): the same layout either way.
  for (const std::size_t second_size : {std::size_t{5}, std::size_t{300} << 10}) {
    SCOPED_TRACE("second entry of " + std::to_string(second_size) + " bytes");
    const std::vector<EntrySpec> specs = {{"a", pattern(first_size, 1)},
                                          {"abc", pattern(second_size, 2)}};
    const auto written = write_archive(dir / "p.zip", specs, alignment, WritePath::kSpan);
    const auto file = read_file_bytes(dir / "p.zip");
    check_archive(file, specs, written, alignment);
    check_second_entry(file, written, alignment, natural, first_size);
  }
}

std::vector<std::tuple<std::uint32_t, std::uint64_t>> padding_edges() {
  std::vector<std::tuple<std::uint32_t, std::uint64_t>> cases;
  for (const std::uint32_t alignment : {64u, 4096u, 65536u}) {
    for (const std::uint64_t natural : {0u, 1u, 3u, 5u, 6u, 7u, 63u, 4095u, 65535u}) {
      if (natural < alignment) cases.emplace_back(alignment, natural);
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Edges, ZipWriterPaddingTest, ::testing::ValuesIn(padding_edges()),
                         [](const auto& param_info) {
                           return "A" + std::to_string(std::get<0>(param_info.param)) + "_p" +
                                  std::to_string(std::get<1>(param_info.param));
                         });

// Payloads borrowed from a file mapping (a loaded model's) are copied by the kernel from the file
// while the CRC-32 is read from it on another thread: sizes on both sides of where each starts.
TEST(ZipWriter, EntriesFromAMappedFileHoldItsBytesAndTheirCrc) {
  const ScratchDir dir("zipw_mapped");
  const std::vector<std::uint8_t> source = pattern((3 << 20) + 11, 7);
  write_file_bytes(dir / "source.bin", std::string(source.begin(), source.end()));
  const auto mapping = MappedFile::open(dir / "source.bin");
  ZipWriter writer(dir / "m.zip");
  std::vector<EntrySpec> specs;
  const std::pair<std::size_t, std::size_t> ranges[] = {{1, 65535},           {100, 65536},
                                                        {7, (256 << 10) - 1}, {3, 256 << 10},
                                                        {5, (256 << 10) + 1}, {11, 3 << 20}};
  for (const auto& [offset, size] : ranges) {
    const std::string name = "t" + std::to_string(specs.size());
    writer.add(name, mapping->bytes().subspan(offset, size));
    specs.push_back(
        {name, std::vector<std::uint8_t>(source.begin() + offset, source.begin() + offset + size)});
  }
  writer.finish();
  check_archive(read_file_bytes(dir / "m.zip"), specs, writer.entries(), 64);
}

TEST(ZipWriter, AMappedSourceTruncatedMeanwhileFailsTheEntryAndLeavesNoArchive) {
  const ScratchDir dir("zipw_truncated");
  write_file_bytes(dir / "source.bin", std::string(1 << 20, 'w'));
  const auto mapping = MappedFile::open(dir / "source.bin");
  std::filesystem::resize_file(dir / "source.bin", 500000);
  {
    ZipWriter writer(dir / "t.zip");
    try {
      writer.add("w", mapping->bytes());
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kIo);
      EXPECT_THAT(e.message(),
                  HasSubstr("t.zip: the source file ended at offset 500000, before the 1048576 "
                            "bytes to copy from offset 0 (was it truncated?)"));
    }
    EXPECT_THROW(writer.add("v", pattern(4, 1)), Error);
  }
  EXPECT_THAT(dir.file_names(), ElementsAre("source.bin"));
}

TEST(ZipWriter, ReportsWhatItWrote) {
  const ScratchDir dir("zipw_report");
  ZipWriterOptions options;
  options.alignment = 128;
  ZipWriter writer(dir / "r.zip", options);
  EXPECT_EQ(writer.alignment(), 128u);
  const auto bytes = pattern(10, 3);
  const WrittenEntry first = writer.add("w", bytes);
  EXPECT_EQ(first.name, "w");
  EXPECT_EQ(first.local_header_offset, 0u);
  EXPECT_EQ(first.data_offset, 128u);
  EXPECT_EQ(first.size, 10u);
  EXPECT_EQ(first.crc32, crc32(bytes));
  EXPECT_FALSE(first.zip64);
  const WrittenEntry second = writer.add("v", 0, [](EntrySink&) {});
  EXPECT_EQ(second.local_header_offset, 138u);
  EXPECT_EQ(second.data_offset, 256u);
  EXPECT_EQ(second.crc32, 0u);
  ASSERT_EQ(writer.entries().size(), 2u);
  EXPECT_EQ(writer.entries()[1].name, "v");
  writer.finish();
  EXPECT_EQ(writer.entries().size(), 2u);
}

TEST(ZipWriter, SameInputsGiveIdenticalBytes) {
  const ScratchDir dir("zipw_repro");
  const std::vector<EntrySpec> specs = layout_specs(1);
  write_archive(dir / "one.zip", specs, 64, WritePath::kSpan);
  write_archive(dir / "two.zip", specs, 64, WritePath::kSpan);
  EXPECT_TRUE(read_file_bytes(dir / "one.zip") == read_file_bytes(dir / "two.zip"));
}

TEST(ZipWriter, EmptyArchiveIsJustAnEndRecord) {
  const ScratchDir dir("zipw_empty");
  ZipWriter writer(dir / "e.zip");
  writer.finish();
  const auto file = read_file_bytes(dir / "e.zip");
  ASSERT_EQ(file.size(), 22u);
  const InspectedArchive archive = inspect_archive(file);
  EXPECT_EQ(archive.entries.size(), 0u);
  EXPECT_EQ(archive.end.central_directory_offset, 0u);
  EXPECT_EQ(archive.end.central_directory_size, 0u);
}

// ---------------------------------------------------------------------------------------------
// Errors: code and message.

template <typename Fn>
void expect_error(Fn&& fn, ErrorCode code, const std::vector<std::string>& fragments) {
  try {
    fn();
    FAIL() << "expected Error(" << to_string(code) << ")";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const std::string& fragment : fragments) EXPECT_THAT(e.what(), HasSubstr(fragment));
  }
}

TEST(ZipWriter, AlignmentMustBeAPowerOfTwoFrom64To65536) {
  const ScratchDir dir("zipw_alignment");
  for (const std::uint32_t bad : {0u, 1u, 4u, 32u, 63u, 96u, 100u, 131072u, 0x80000000u}) {
    ZipWriterOptions options;
    options.alignment = bad;
    expect_error([&] { ZipWriter writer(dir / "a.zip", options); }, ErrorCode::kInvalidArgument,
                 {"alignment " + std::to_string(bad), "a.zip"});
  }
  for (const std::uint32_t good : {64u, 128u, 65536u}) {
    ZipWriterOptions options;
    options.alignment = good;
    EXPECT_NO_THROW(ZipWriter(dir / "a.zip", options));
  }
  EXPECT_TRUE(dir.file_names().empty()) << "refused writers leave nothing behind";
}

struct NameCase {
  std::string name;
  std::string fragment;  // Empty: valid.
};

// The ZIP layer's own rule; the stricter .onnxz rule is tested with the archive (archive_test).
TEST(ZipWriter, NamingRule) {
  const std::vector<NameCase> cases = {
      {"a", ""},
      {"a-b.bin", ""},
      {"dir/w", ""},
      {"__MODEL_PROTO", ""},
      {"caf\xc3\xa9", ""},
      {"w b", ""},
      {std::string(65535, 'x'), ""},
      {"", "is empty"},
      {std::string(65536, 'x'), "65536 bytes long"},
      {std::string("w\0b", 3), "NUL byte"},
      {"w\\b", "backslash"},
      {"/abs", "starts with '/'"},
      {"dir/", "ends with '/'"},
      {"a//b", "empty path component"},
      {"..", "'..' path component"},
      {"a/../b", "'..' path component"},
      {"./a", "'.' path component"},
  };
  for (const NameCase& c : cases) {
    SCOPED_TRACE(c.name.substr(0, 40));
    if (c.fragment.empty()) {
      EXPECT_NO_THROW(ZipWriter::validate_name(c.name));
    } else {
      expect_error([&] { ZipWriter::validate_name(c.name); }, ErrorCode::kInvalidArgument,
                   {"entry name '", c.fragment});
    }
  }
}

TEST(ZipWriter, NameMessagesEscapeAndShortenTheName) {
  expect_error([] { ZipWriter::validate_name("a\nb'/"); }, ErrorCode::kInvalidArgument,
               {"'a\\x0ab\\x27/'"});
  expect_error([] { ZipWriter::validate_name("/" + std::string(300, 'y')); },
               ErrorCode::kInvalidArgument, {"'/" + std::string(199, 'y') + "...'"});
}

TEST(ZipWriter, RefusedNameLeavesTheWriterUsable) {
  const ScratchDir dir("zipw_badname");
  ZipWriter writer(dir / "n.zip");
  const auto bytes = pattern(3, 1);
  expect_error([&] { writer.add("up/../../x", bytes); }, ErrorCode::kInvalidArgument,
               {"'up/../../x'", "'..' path component"});
  expect_error([&] { writer.add("/etc/x", bytes); }, ErrorCode::kInvalidArgument,
               {"starts with '/'"});
  expect_error([&] { writer.add("x\\y", 3, [](EntrySink&) { FAIL() << "never called"; }); },
               ErrorCode::kInvalidArgument, {"'x\\x5cy'"});
  writer.add("ok", bytes);
  writer.finish();
  const auto file = read_file_bytes(dir / "n.zip");
  check_archive(file, {{"ok", bytes}}, writer.entries(), 64);
}

TEST(ZipWriter, DuplicateNamesAreRefusedAlsoWhenOnlyCaseDiffers) {
  const ScratchDir dir("zipw_dup");
  ZipWriter writer(dir / "d.zip");
  const auto bytes = pattern(4, 1);
  writer.add("weight", bytes);
  writer.add("__MODEL_PROTO", bytes);
  expect_error([&] { writer.add("weight", bytes); }, ErrorCode::kInvalidArgument,
               {"d.zip", "entry 'weight'", "duplicate name"});
  expect_error([&] { writer.add("WeighT", 4, [&](EntrySink& s) { s.write(bytes); }); },
               ErrorCode::kInvalidArgument,
               {"entry 'WeighT'", "earlier entry 'weight'", "only in ASCII case"});
  expect_error([&] { writer.add("__model_proto", bytes); }, ErrorCode::kInvalidArgument,
               {"'__MODEL_PROTO'", "only in ASCII case"});
  writer.add("weight2", bytes);  // Still usable.
  writer.finish();
  EXPECT_EQ(writer.entries().size(), 3u);
}

TEST(ZipWriter, NoCallsAfterFinish) {
  const ScratchDir dir("zipw_after");
  ZipWriter writer(dir / "f.zip");
  writer.add("a", pattern(1, 1));
  writer.finish();
  expect_error([&] { writer.add("b", pattern(1, 1)); }, ErrorCode::kBadState,
               {"f.zip", "add called after finish()"});
  expect_error([&] { writer.add("b", 1, [](EntrySink&) {}); }, ErrorCode::kBadState,
               {"after finish()"});
  expect_error([&] { writer.finish(); }, ErrorCode::kBadState, {"finish called after finish()"});
}

TEST(ZipWriter, MovedFromWriterRefusesCalls) {
  const ScratchDir dir("zipw_move");
  ZipWriter original(dir / "m.zip");
  original.add("a", pattern(2, 1));
  ZipWriter moved(std::move(original));
  expect_error([&] { original.add("b", pattern(1, 1)); }, ErrorCode::kBadState,  // NOLINT
               {"moved-from"});
  moved.add("b", pattern(1, 1));
  moved.finish();
  EXPECT_EQ(inspect_archive(read_file_bytes(dir / "m.zip")).entries.size(), 2u);
}

TEST(ZipWriter, ProducerMayNotCallBackIntoTheWriter) {
  const ScratchDir dir("zipw_reentry");
  ZipWriter writer(dir / "r.zip");
  expect_error(
      [&] { writer.add("outer", 1, [&](EntrySink&) { writer.add("inner", pattern(1, 1)); }); },
      ErrorCode::kBadState, {"from inside an entry producer"});
  expect_error([&] { writer.finish(); }, ErrorCode::kBadState, {"after an entry failed"});
}

// ---------------------------------------------------------------------------------------------
// Atomicity: the destination keeps its old content unless finish() succeeds.

class ZipWriterAtomicityTest : public ::testing::Test {
 protected:
  void SetUp() override { write_file_bytes(destination_, "original content"); }
  void expect_untouched() {
    const auto bytes = read_file_bytes(destination_);
    EXPECT_EQ(std::string(bytes.begin(), bytes.end()), "original content");
    EXPECT_THAT(dir_.file_names(), ElementsAre("model.onnxz")) << "no temporary may remain";
  }
  // After a failed entry, every call is refused.
  static void expect_unusable(ZipWriter& writer) {
    expect_error([&] { writer.add("later", pattern(1, 1)); }, ErrorCode::kBadState,
                 {"model.onnxz", "add called after an entry failed"});
    expect_error([&] { writer.finish(); }, ErrorCode::kBadState,
                 {"finish called after an entry failed"});
  }

  const ScratchDir dir_{"zipw_atomic"};
  const std::filesystem::path destination_ = dir_ / "model.onnxz";
};

TEST_F(ZipWriterAtomicityTest, DestroyedWithoutFinish) {
  {
    ZipWriter writer(destination_);
    writer.add("a", pattern(1000, 1));
    writer.add("b", 10, [](EntrySink& sink) { sink.write(pattern(10, 2)); });
    EXPECT_EQ(dir_.file_names().size(), 1u) << "the temporary has no name until finish()";
    const auto bytes = read_file_bytes(destination_);
    EXPECT_EQ(std::string(bytes.begin(), bytes.end()), "original content");
  }
  expect_untouched();
}

TEST_F(ZipWriterAtomicityTest, ProducerExceptionPropagatesUnchanged) {
  {
    ZipWriter writer(destination_);
    writer.add("a", pattern(100, 1));
    try {
      writer.add("b", 100, [](EntrySink& sink) {
        sink.write(pattern(40, 2));
        throw std::runtime_error("exporter ran out of tensors");
      });
      FAIL() << "expected the producer's exception";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(dynamic_cast<const Error*>(&e), nullptr) << "not wrapped";
      EXPECT_STREQ(e.what(), "exporter ran out of tensors");
    }
    expect_unusable(writer);
  }
  expect_untouched();
}

TEST_F(ZipWriterAtomicityTest, ProducerWritingTooFewBytes) {
  {
    ZipWriter writer(destination_);
    expect_error([&] { writer.add("short_one", 5, [](EntrySink& s) { s.write(pattern(3, 1)); }); },
                 ErrorCode::kInvalidArgument,
                 {"model.onnxz", "entry 'short_one'", "wrote 3 of the declared 5 bytes"});
    expect_unusable(writer);
  }
  expect_untouched();
}

TEST_F(ZipWriterAtomicityTest, ProducerWritingTooManyBytes) {
  {
    ZipWriter writer(destination_);
    writer.add("a", pattern(7, 1));
    expect_error(
        [&] {
          writer.add("long_one", 5, [](EntrySink& sink) {
            sink.write(pattern(4, 1));
            sink.write(pattern(2, 1));
          });
        },
        ErrorCode::kInvalidArgument,
        {"model.onnxz", "entry 'long_one'", "more than the declared 5 bytes",
         "a piece of 2 bytes after 4"});
    expect_unusable(writer);
  }
  expect_untouched();
}

TEST_F(ZipWriterAtomicityTest, ProducerSwallowingTheOverflowErrorStillFails) {
  {
    ZipWriter writer(destination_);
    expect_error(
        [&] {
          writer.add("sly", 2, [](EntrySink& sink) {
            try {
              sink.write(pattern(3, 1));
            } catch (const Error&) {
            }
            sink.write(pattern(2, 1));  // Refused too: the entry is already broken.
          });
        },
        ErrorCode::kInvalidArgument, {"entry 'sly'", "more than the declared 2 bytes"});
    expect_unusable(writer);
  }
  expect_untouched();
}

TEST_F(ZipWriterAtomicityTest, EmptyProducerIsRefusedBeforeAnythingIsWritten) {
  ZipWriter writer(destination_);
  expect_error([&] { writer.add("w", 3, EntryProducer()); }, ErrorCode::kInvalidArgument,
               {"entry 'w'", "no producer"});
  writer.add("w", pattern(3, 1));  // Still usable.
}

TEST_F(ZipWriterAtomicityTest, FinishReplacesTheDestination) {
  {
    ZipWriterOptions options;
    options.output.durable = true;
    ZipWriter writer(destination_, options);
    writer.add("a", pattern(3, 1));
    writer.finish();
  }
  EXPECT_EQ(inspect_archive(read_file_bytes(destination_)).entries.size(), 1u);
  EXPECT_THAT(dir_.file_names(), ElementsAre("model.onnxz"));
}

// ---------------------------------------------------------------------------------------------
// CRC-32s computed later, from the written file: the same archive with the worker thread and
// without it, `done` in the order of the entries with the right CRC, and errors naming the entry.

struct DeferredRun {
  std::vector<std::uint8_t> file;
  std::vector<std::string> done_order;
  std::vector<std::vector<std::uint8_t>> observed;  // Per entry, what its observer saw.
};

DeferredRun write_with_callbacks(const ScratchDir& dir, const std::vector<EntrySpec>& specs,
                                 std::size_t threads) {
  detail::set_crc_job_threads(threads);
  DeferredRun run;
  run.observed.resize(specs.size());
  {
    ZipWriterOptions options;
    options.buffer_size = 4096;
    ZipWriter writer(dir / "d.zip", options);
    for (std::size_t i = 0; i < specs.size(); ++i) {
      const EntrySpec& spec = specs[i];
      const PieceObserver observer = [&run, i](ByteSpan piece) {
        run.observed[i].insert(run.observed[i].end(), piece.begin(), piece.end());
      };
      const EntryDone done = [&run, &spec](const WrittenEntry& entry) {
        EXPECT_EQ(entry.name, spec.name);
        EXPECT_EQ(entry.crc32, crc32(spec.bytes)) << spec.name;
        run.done_order.push_back(entry.name);
      };
      // A copy the writer may not read after add() returns: overwritten at once.
      std::vector<std::uint8_t> scratch = spec.bytes;
      if (i % 2 == 0) {
        writer.add(spec.name, scratch, observer, done);
      } else {
        writer.add(
            spec.name, scratch.size(), [&](EntrySink& sink) { feed_in_pieces(sink, scratch); },
            observer, done);
      }
      std::fill(scratch.begin(), scratch.end(), 0xEE);
    }
    writer.settle();
    EXPECT_EQ(run.done_order.size(), specs.size());
    for (std::size_t i = 0; i < specs.size(); ++i) {
      EXPECT_EQ(writer.entries()[i].crc32, crc32(specs[i].bytes)) << i;
    }
    writer.finish();
  }
  detail::set_crc_job_threads(1);
  run.file = read_file_bytes(dir / "d.zip");
  return run;
}

TEST(ZipWriter, LateCrcsGiveTheSameArchiveWithOrWithoutTheWorkerThread) {
  const ScratchDir dir("zipw_deferred");
  std::vector<EntrySpec> specs;
  const std::size_t sizes[] = {(256 << 10) + 1, 10,        3 << 20, 256 << 10,
                               (256 << 10) - 1, 1 << 20,   0,       5,
                               (2 << 20) + 3,   700 << 10, 1,       4 << 20};
  for (std::size_t i = 0; i < std::size(sizes); ++i) {
    specs.push_back({"e" + std::to_string(i), pattern(sizes[i], static_cast<unsigned>(i))});
  }
  const DeferredRun threaded = write_with_callbacks(dir, specs, 1);
  const DeferredRun alone = write_with_callbacks(dir, specs, 0);
  EXPECT_TRUE(threaded.file == alone.file);
  for (const DeferredRun* run : {&threaded, &alone}) {
    std::vector<std::string> names;
    for (const EntrySpec& spec : specs) names.push_back(spec.name);
    EXPECT_EQ(run->done_order, names);  // In the order of the entries, whoever finished first.
    for (std::size_t i = 0; i < specs.size(); ++i) {
      EXPECT_TRUE(run->observed[i] == specs[i].bytes) << specs[i].name;
    }
  }
  // Every header is right (the CRC patched in after the data), every byte the payload's.
  const InspectedArchive archive = inspect_archive(threaded.file);
  ASSERT_EQ(archive.entries.size(), specs.size());
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const auto& entry = archive.entries[i];
    EXPECT_EQ(entry.local.crc32, crc32(specs[i].bytes)) << i;
    EXPECT_EQ(entry.central.crc32, crc32(specs[i].bytes)) << i;
    EXPECT_TRUE(std::equal(specs[i].bytes.begin(), specs[i].bytes.end(),
                           threaded.file.begin() + static_cast<std::ptrdiff_t>(entry.data_offset)))
        << i;
  }
}

// An observer that fails on a large entry fails the writer, from that call or a later one,
// naming that entry, and nothing is left; so does an exception from `done`, passed on unchanged.
TEST(ZipWriter, ALateErrorNamesItsEntryAndLeavesNoArchive) {
  for (const std::size_t threads : {1u, 0u}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    detail::set_crc_job_threads(threads);
    const ScratchDir dir("zipw_late_error");
    {
      ZipWriter writer(dir / "e.zip");
      const std::vector<std::uint8_t> big = pattern(1 << 20, 3);
      writer.add("first", big);
      // From this add() (no thread, or a quick one), a later one, or finish().
      expect_error(
          [&] {
            writer.add("second", big, [](ByteSpan) { throw Error(ErrorCode::kIo, "hash failed"); });
            for (int i = 0; i < 20; ++i) writer.add("more" + std::to_string(i), big);
            writer.finish();
          },
          ErrorCode::kIo, {"e.zip", "entry 'second'", "hash failed"});
      expect_error([&] { writer.finish(); }, ErrorCode::kBadState,
                   {"finish called after an entry failed"});
    }
    EXPECT_TRUE(dir.file_names().empty());
    {
      ZipWriter writer(dir / "e.zip");
      expect_error(
          [&] {
            writer.add("first", pattern(1 << 20, 3), nullptr, [](const WrittenEntry& entry) {
              throw Error(ErrorCode::kCorrupt, {.file = "in.zip", .entry = "entry 'x'"},
                          "CRC-32 mismatch " + std::to_string(entry.size));
            });
            writer.finish();
          },
          ErrorCode::kCorrupt, {"in.zip: entry 'x': CRC-32 mismatch 1048576"});
    }
    EXPECT_TRUE(dir.file_names().empty());
  }
  detail::set_crc_job_threads(1);
}

}  // namespace
}  // namespace onnxzip
