#include "onnxzip/internal/zip_reader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "crc32.h"
#include "onnxzip/error.h"
#include "onnxzip/internal/byte_source.h"
#include "onnxzip/internal/mapped_file.h"
#include "posix_file_testing.h"
#include "support/byte_sources.h"
#include "support/zip_builder.h"
#include "zip_local_headers.h"
#include "zip_records.h"

namespace onnxzip {
namespace {

// Options that read the local headers `scope` says, the ReadLimits at their defaults
// (ZipReaderOptions derives from ReadLimits, which a designated initializer cannot name).
ZipReaderOptions scoped(LocalHeaderScope scope) {
  ZipReaderOptions options;
  options.local_headers = scope;
  return options;
}

namespace fs = std::filesystem;
using testing::build_zip;
using testing::BuiltZip;
using testing::extra_record;
using testing::pattern;
using testing::TestEntry;
using testing::text_lines;
using testing::ZipBuildOptions;
namespace field = testing::field;

using Bytes = std::vector<std::uint8_t>;

TestEntry stored(std::string name, Bytes data, std::uint64_t alignment = 64) {
  TestEntry e;
  e.name = std::move(name);
  e.data = std::move(data);
  e.alignment = alignment;
  return e;
}

TestEntry deflated(std::string name, Bytes data) {
  TestEntry e;
  e.name = std::move(name);
  e.data = std::move(data);
  e.method = zip::kMethodDeflated;
  return e;
}

bool contains(std::string_view text, std::string_view fragment) {
  return text.find(fragment) != std::string_view::npos;
}

// Runs f, which must throw Error with `code` and a message holding every fragment.
void expect_error(const std::function<void()>& f, ErrorCode code,
                  const std::vector<std::string>& fragments) {
  try {
    f();
    ADD_FAILURE() << "no error; expected " << to_string(code);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const std::string& fragment : fragments) {
      EXPECT_TRUE(contains(e.what(), fragment)) << "'" << fragment << "' not in: " << e.what();
    }
  }
}

bool has_finding(const ZipReader& r, ZipFindingKind kind, std::string_view entry) {
  return std::any_of(r.findings().begin(), r.findings().end(),
                     [&](const ZipFinding& f) { return f.kind == kind && f.entry == entry; });
}

fs::path temp_file(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / "onnxzip_zip_reader_test";
  fs::create_directories(dir);
  return dir / name;
}

void write_file(const fs::path& path, ByteSpan bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good());
}

// The byte sources a reader parses through (byte_source.h). The tests of archives they build run
// over each, so that what the reader does is proven over a source that is not contiguous (a
// file read in ranges with pread, as a remote file is) as well as over memory and a mapping.
enum class Source { kMemory, kMapped, kRanges };
const auto kSources = ::testing::Values(Source::kMemory, Source::kMapped, Source::kRanges);

std::string to_string(Source source) {
  switch (source) {
    case Source::kMemory:
      return "memory";
    case Source::kMapped:
      return "mapped";
    case Source::kRanges:
      return "ranges";
  }
  return "?";
}
void PrintTo(Source source, std::ostream* os) { *os << to_string(source); }

// What every source of open_over() is called in messages: the path of the file it reads (a
// process of its own for each, as ctest runs tests).
std::string archive_name() {
  return temp_file("archive-" + std::to_string(::getpid()) + ".zip").string();
}

// `bytes` (kept alive by the caller) read as an archive through `source`: in place, or from a
// file holding them, which goes once it is open (the mapping, the descriptor keep it).
ZipReader open_over(Source source, ByteSpan bytes, const ZipReaderOptions& options = {},
                    const ZipTrailerResolver& trailer = {}) {
  const std::string name = archive_name();
  if (source == Source::kMemory) {
    return ZipReader::open(ByteSource::of_bytes(bytes, kNoOwner, name), options, trailer);
  }
  write_file(name, bytes);
  const std::shared_ptr<const ByteSource> file =
      source == Source::kMapped ? ByteSource::open(name) : ByteSource::open_ranges(name);
  fs::remove(name);
  return ZipReader::open(file, options, trailer);
}

class OverSources : public ::testing::TestWithParam<Source> {
 protected:
  ZipReader open(ByteSpan bytes, const ZipReaderOptions& options = {},
                 const ZipTrailerResolver& trailer = {}) const {
    return open_over(GetParam(), bytes, options, trailer);
  }
  bool ranges() const { return GetParam() == Source::kRanges; }
};

// ---------------------------------------------------------------------------------------------
// Valid archives

class StoredSizes : public ::testing::TestWithParam<std::tuple<std::size_t, Source>> {};

// Borrowed spans of the archive in memory or mapped; from a source that reads ranges, one read
// into a buffer of its own in which the data is as aligned as in the file.
TEST_P(StoredSizes, ReadBackAsAlignedBytesBorrowedFromTheArchive) {
  const auto [size, source] = GetParam();
  // A 3-byte unaligned entry first, so the sized entry's padding is actually needed.
  // And a last entry, which a mapped file serves from the copy its open read (see below).
  const BuiltZip z = build_zip({stored("lead", pattern(3, 9), 0), stored("w", pattern(size, 1)),
                                stored("last", pattern(size, 2))});
  const auto owner = std::make_shared<Bytes>(z.bytes);
  const ZipReader r = source == Source::kMemory ? ZipReader::from_bytes(*owner, owner, {})
                                                : open_over(source, z.span());

  ASSERT_EQ(r.entries().size(), 3u);
  const ZipEntry& e = r.at("w");
  EXPECT_EQ(e.size, size);
  EXPECT_EQ(e.compressed_size, size);
  EXPECT_EQ(e.data_offset, z.entries[1].data_offset);
  EXPECT_EQ(e.data_offset % 64, 0u);
  EXPECT_GE(e.alignment(), 64u);
  EXPECT_TRUE(e.zero_copy());
  EXPECT_FALSE(has_finding(r, ZipFindingKind::kUnaligned, "w"));

  const TensorBytes data = r.data(e);
  EXPECT_TRUE(data.is_borrowed());
  EXPECT_TRUE(equal_bytes(data.view(), pattern(size, 1)));
  if (source != Source::kMemory) {  // Bytes in memory are as aligned as the caller made them.
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(data.data()) % 64, 0u);
  }
  EXPECT_NO_THROW(r.verify(e));
  if (source == Source::kRanges) {
    EXPECT_TRUE(r.bytes().empty());
    ASSERT_NE(data.owner(), nullptr);  // Its own buffer.
    expect_error([&] { (void)r.stored_data(e); }, ErrorCode::kUnsupported,
                 {"'w'", "read in ranges", "use data()"});
    return;
  }
  const ByteSpan span = r.stored_data(e);
  EXPECT_TRUE(equal_bytes(span, pattern(size, 1)));
  if (size > 0) {  // Where an empty entry's bytes are is no matter.
    EXPECT_EQ(span.data(), r.bytes().data() + e.data_offset);
    EXPECT_EQ(data.data(), r.bytes().data() + e.data_offset);
    EXPECT_EQ(data.owner(),
              source == Source::kMemory ? std::static_pointer_cast<const void>(owner) : r.owner());
  }
  // A mapped file's last entry (in an .onnxz, the model, which an in-place edit rewrites) comes
  // from the reader's own copy, read at open: aligned as in the file, not in the mapping.
  const TensorBytes last = r.data(r.at("last"));
  EXPECT_TRUE(equal_bytes(last.view(), pattern(size, 2)));
  const bool in_mapping = size > 0 && last.data() >= r.bytes().data() &&
                          last.data() < r.bytes().data() + r.bytes().size();
  EXPECT_EQ(in_mapping, source == Source::kMemory && size > 0);
  if (size > 0 && source != Source::kMemory) {
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(last.data()) % 64, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(
    ZipReader, StoredSizes,
    ::testing::Combine(::testing::Values(0, 1, 63, 64, 65, std::size_t{1} << 20), kSources));

TEST_P(OverSources, ReportsUnalignedStoredEntries) {
  const BuiltZip z = build_zip({stored("odd", pattern(10, 1), 0)});
  const ZipReader r = open(z.span());
  const ZipEntry& e = r.at("odd");
  EXPECT_EQ(e.data_offset, 30u + 3u);
  EXPECT_EQ(e.alignment(), 1u);
  EXPECT_TRUE(has_finding(r, ZipFindingKind::kUnaligned, "odd"));
}

TEST(ZipEntry, AlignmentIsTheLargestPowerOfTwoDividingTheOffsetCappedAt65536) {
  ZipEntry e;
  const std::pair<std::uint64_t, std::uint64_t> cases[] = {
      {0, 65536}, {1, 1}, {6, 2}, {64, 64}, {192, 64}, {4096, 4096}, {1ull << 20, 65536}};
  for (const auto& [offset, alignment] : cases) {
    e.data_offset = offset;
    EXPECT_EQ(e.alignment(), alignment) << offset;
  }
}

TEST_P(OverSources, IteratesInFileOrderAndFindsEveryName) {
  std::vector<TestEntry> entries;
  for (int i = 0; i < 5; ++i) entries.push_back(stored("t" + std::to_string(i), pattern(100, i)));
  ZipBuildOptions options;
  options.central_order = {4, 2, 0, 3, 1};
  const BuiltZip z = build_zip(entries, options);
  const ZipReader r = open(z.span());

  ASSERT_EQ(r.entries().size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) {
    const ZipEntry& e = r.entries()[i];
    EXPECT_EQ(e.name, "t" + std::to_string(i));
    EXPECT_EQ(e.index, i);
    EXPECT_EQ(e.local_header_offset, z.entries[i].local_header_offset);
    EXPECT_EQ(e.central_header_offset, z.entries[i].central_header_offset);
    EXPECT_EQ(r.find(e.name), &e);
    EXPECT_TRUE(equal_bytes(r.data(e).view(), pattern(100, static_cast<std::uint32_t>(i))));
  }
  EXPECT_EQ(r.entries()[4].central_index, 0u);
  EXPECT_EQ(r.entries()[0].central_index, 2u);
  EXPECT_EQ(r.find("t5"), nullptr);
  EXPECT_EQ(r.find("T0"), nullptr);
  expect_error([&] { (void)r.at("missing"); }, ErrorCode::kNotFound, {archive_name(), "'missing'"});
}

TEST(ZipReader, OpenMapsTheFileAndTheOwnerTokenOutlivesTheReader) {
  const BuiltZip z = build_zip({stored("a", pattern(1000, 3)), deflated("b", text_lines(50))});
  const fs::path path = temp_file("owner.zip");
  write_file(path, z.span());

  TensorBytes a;
  TensorBytes b;
  {
    const ZipReader r = ZipReader::open(path);
    EXPECT_EQ(r.source_name(), path.string());
    ASSERT_NE(r.owner(), nullptr);
    a = r.data(r.at("a"));
    b = r.data(r.at("b"));
    EXPECT_EQ(a.owner(), r.owner());
    EXPECT_TRUE(a.is_borrowed());
    EXPECT_TRUE(b.is_owned());
  }
  // The reader is gone; the mapping lives on in a's token (ASan would flag a read of unmapped
  // memory as a crash).
  fs::remove(path);
  EXPECT_EQ(a.owner().use_count(), 1);
  EXPECT_TRUE(equal_bytes(a.view(), pattern(1000, 3)));
  EXPECT_EQ(onnxzip::crc32(a.view()), onnxzip::crc32(pattern(1000, 3)));
  EXPECT_TRUE(equal_bytes(b.view(), text_lines(50)));
}

// Mapped or read in ranges, an archive of many entries has its local headers read ahead, half of
// them on a second thread (zip_local_headers.cpp); what it finds must be what the bytes in memory
// show, including extra fields longer than the first read, and a broken header in the second
// half must be reported as it is without the read-ahead.
TEST(ZipReader, LocalHeadersReadAheadAgreeWithTheMappingAndReportTheirFaults) {
  std::vector<TestEntry> entries;
  for (int i = 0; i < 600; ++i) {
    TestEntry e =
        stored("tensor_" + std::string(static_cast<std::size_t>(i % 40), 'x') + std::to_string(i),
               pattern(static_cast<std::size_t>(i % 7) * 100 + 1, i));
    if (i % 50 == 0) e.local_extra = extra_record(0x5455, Bytes(300, 0x41));  // Past 128 bytes.
    entries.push_back(std::move(e));
  }
  const BuiltZip z = build_zip(entries);
  const fs::path path = temp_file("read_ahead.zip");
  write_file(path, z.span());
  const ZipReader from_bytes = ZipReader::from_bytes(z.span(), kNoOwner);
  for (const ZipReader& from_file :
       {ZipReader::open(path), ZipReader::open(ByteSource::open_ranges(path))}) {
    SCOPED_TRACE(from_file.bytes().empty() ? "ranges" : "mapped");
    ASSERT_EQ(from_file.entries().size(), 600u);
    for (std::size_t i = 0; i < 600; ++i) {
      const ZipEntry& a = from_file.entries()[i];
      const ZipEntry& b = from_bytes.entries()[i];
      EXPECT_EQ(a.name, b.name);
      EXPECT_EQ(a.data_offset, z.entries[i].data_offset);
      EXPECT_EQ(a.data_offset, b.data_offset);
      EXPECT_TRUE(equal_bytes(a.local_extra, b.local_extra)) << a.name;
      EXPECT_TRUE(equal_bytes(from_file.data(a).view(), entries[i].data)) << a.name;
    }
  }
  // Entry 450's local header loses its signature: the same error as from memory.
  Bytes broken = z.bytes;
  broken[z.entries[450].local_header_offset] ^= 0xFF;
  write_file(path, ByteSpan(broken.data(), broken.size()));
  const std::string offset = std::to_string(z.entries[450].local_header_offset);
  for (const bool ranges : {false, true}) {
    expect_error(
        [&] {
          (void)(ranges ? ZipReader::open(ByteSource::open_ranges(path)) : ZipReader::open(path));
        },
        ErrorCode::kCorrupt,
        {path.string(), entries[450].name, "local file header at offset " + offset,
         "bad signature"});
  }
  expect_error(
      [&] { (void)ZipReader::from_bytes(ByteSpan(broken.data(), broken.size()), kNoOwner); },
      ErrorCode::kCorrupt,
      {entries[450].name, "local file header at offset " + offset, "bad signature"});
  fs::remove(path);
}

// The read ahead is a fast path (issue 31 item 4): its plain twin, one thread reading in order,
// must find the same entries, and a read that fails must fail the open with the same Error at
// the same entry -- never be swallowed and read again another way.
TEST(ZipReader, LocalHeadersReadAheadAndTheirPlainTwinAgree) {
  std::vector<TestEntry> entries;
  for (int i = 0; i < 600; ++i) {
    TestEntry e =
        stored("t" + std::to_string(i), pattern(static_cast<std::size_t>(i % 5) * 70 + 1, i));
    if (i % 50 == 0) e.local_extra = extra_record(0x5455, Bytes(300, 0x41));
    entries.push_back(std::move(e));
  }
  const BuiltZip z = build_zip(entries);
  const fs::path path = temp_file("read_ahead_twin.zip");
  write_file(path, z.span());
  const auto open_with = [&](bool read_ahead) {
    zip::set_local_header_prefetch_for_testing(read_ahead);
    std::optional<ZipReader> reader;
    std::string error;
    try {
      reader.emplace(ZipReader::open(path));
    } catch (const Error& e) {
      error = e.what();
    }
    zip::set_local_header_prefetch_for_testing(true);
    return std::pair{std::move(reader), error};
  };
  {
    const auto [ahead, ahead_error] = open_with(true);
    const auto [plain, plain_error] = open_with(false);
    ASSERT_TRUE(ahead && plain) << ahead_error << plain_error;
    ASSERT_EQ(ahead->entries().size(), plain->entries().size());
    for (std::size_t i = 0; i < plain->entries().size(); ++i) {
      const ZipEntry& a = ahead->entries()[i];
      const ZipEntry& b = plain->entries()[i];
      EXPECT_EQ(a.name, b.name);
      EXPECT_EQ(a.data_offset, b.data_offset);
      EXPECT_EQ(a.end_offset, b.end_offset);
      EXPECT_TRUE(equal_bytes(a.local_extra, b.local_extra)) << a.name;
    }
    ASSERT_EQ(ahead->findings().size(), plain->findings().size());
  }
  // A read of entry 100's local header fails (an I/O error the source reports).
  const std::uint64_t failing = z.entries[100].local_header_offset;
  detail::set_file_read_hook_for_testing([&](std::uint64_t offset, std::uint64_t) {
    if (offset == failing) throw Error(ErrorCode::kIo, "injected failure");
  });
  const auto [ahead, ahead_error] = open_with(true);
  const auto [plain, plain_error] = open_with(false);
  detail::set_file_read_hook_for_testing(nullptr);
  EXPECT_FALSE(ahead || plain);
  EXPECT_EQ(ahead_error, "io: injected failure");
  EXPECT_EQ(ahead_error, plain_error);
  fs::remove(path);
}

// LocalHeaderScope::kTail (what an in-place edit opens with) reads the last two entries' local
// headers only: those two agree with a full open and can be read; the others keep their central
// records, refuse to be read, and a fault in their local headers goes unseen -- but not in the
// two it reads.
TEST_P(OverSources, TailScopeReadsOnlyTheLastTwoLocalHeaders) {
  std::vector<TestEntry> entries;
  for (int i = 0; i < 5; ++i) {
    entries.push_back(stored("entry_" + std::to_string(i), pattern(100 + 10 * i, i)));
  }
  const BuiltZip z = build_zip(entries);
  const ZipReaderOptions tail = scoped(LocalHeaderScope::kTail);
  {
    const ZipReader full = open(z.span());
    const ZipReader r = open(z.span(), tail);
    ASSERT_EQ(r.entries().size(), 5u);
    for (std::size_t i = 0; i < 5; ++i) {
      const ZipEntry& e = r.entries()[i];
      EXPECT_EQ(e.name, full.entries()[i].name);
      EXPECT_EQ(e.size, full.entries()[i].size);
      EXPECT_EQ(e.local_header_offset, full.entries()[i].local_header_offset);
      EXPECT_TRUE(full.entries()[i].local_header_read);
      if (i >= 3) {
        EXPECT_TRUE(e.local_header_read) << e.name;
        EXPECT_EQ(e.data_offset, full.entries()[i].data_offset);
        EXPECT_EQ(e.end_offset, full.entries()[i].end_offset);
        EXPECT_TRUE(equal_bytes(r.data(e).view(), entries[i].data)) << e.name;
        EXPECT_NO_THROW(r.verify(e));
      } else {
        EXPECT_FALSE(e.local_header_read) << e.name;
        EXPECT_EQ(e.data_offset, 0u);
        expect_error([&] { (void)r.data(e); }, ErrorCode::kBadState,
                     {e.name, "local header was not read", "LocalHeaderScope::kTail"});
        expect_error([&] { (void)r.stored_data(e); }, ErrorCode::kBadState, {e.name});
        expect_error([&] { r.verify(e); }, ErrorCode::kBadState, {e.name});
      }
    }
  }
  // A broken local header: unseen in entry 0, reported in entry 3 (the one before the last).
  for (const std::size_t broken_entry : {std::size_t{0}, std::size_t{3}}) {
    Bytes broken = z.bytes;
    broken[z.entries[broken_entry].local_header_offset] ^= 0xFF;
    expect_error([&] { (void)open(broken); }, ErrorCode::kCorrupt,
                 {entries[broken_entry].name, "bad signature"});
    if (broken_entry == 0) {
      EXPECT_EQ(open(broken, tail).entries().size(), 5u);
    } else {
      expect_error([&] { (void)open(broken, tail); }, ErrorCode::kCorrupt,
                   {entries[broken_entry].name, "bad signature"});
    }
  }
}

// ZipReaderOptions::tail_local_headers widens kTail to the last N entries (a signed archive's
// edit reads four): those N can be read, the one before them cannot, and a fault in its local
// header goes unseen.
TEST_P(OverSources, TailScopeReadsTheLastNLocalHeadersItIsAskedFor) {
  std::vector<TestEntry> entries;
  for (int i = 0; i < 6; ++i) {
    entries.push_back(stored("entry_" + std::to_string(i), pattern(100 + 10 * i, i)));
  }
  const BuiltZip z = build_zip(entries);
  ZipReaderOptions tail = scoped(LocalHeaderScope::kTail);
  tail.tail_local_headers = 4;
  const ZipReader r = open(z.span(), tail);
  ASSERT_EQ(r.entries().size(), 6u);
  for (std::size_t i = 0; i < 6; ++i) {
    const ZipEntry& e = r.entries()[i];
    EXPECT_EQ(e.local_header_read, i >= 2) << e.name;
    if (i >= 2) {
      EXPECT_TRUE(equal_bytes(r.data(e).view(), entries[i].data)) << e.name;
    } else {
      expect_error([&] { r.verify(e); }, ErrorCode::kBadState,
                   {e.name, "which reads only the last 4 entries"});
    }
  }
  Bytes broken = z.bytes;
  broken[z.entries[1].local_header_offset] ^= 0xFF;
  EXPECT_EQ(open(broken, tail).entries().size(), 6u);
  broken = z.bytes;
  broken[z.entries[2].local_header_offset] ^= 0xFF;
  expect_error([&] { (void)open(broken, tail); }, ErrorCode::kCorrupt,
               {entries[2].name, "bad signature"});
}

// A file replaced after it was opened and checked: the reader reads the file it was given (its
// mapping, and its local headers through its descriptor), never what the path names by then.
TEST(ZipReader, OpenReadsTheFileItIsGivenNotWhatItsPathNamesNow) {
  const BuiltZip first = build_zip({stored("a", pattern(1000, 3))});
  const BuiltZip second = build_zip({stored("b", pattern(64, 1)), stored("c", pattern(8, 2))});
  for (const FileAccess access : {FileAccess::kMap, FileAccess::kRead}) {
    const fs::path path = temp_file("replaced.zip");
    write_file(path, first.span());
    std::shared_ptr<const MappedFile> file = MappedFile::open(path, access);
    write_file(temp_file("replacement.zip"), second.span());
    fs::rename(temp_file("replacement.zip"), path);

    const ZipReader r = ZipReader::open(std::move(file));
    EXPECT_EQ(r.source_name(), path.string());
    ASSERT_EQ(r.entries().size(), 1u);
    EXPECT_TRUE(equal_bytes(r.data(r.at("a")).view(), pattern(1000, 3)));
    EXPECT_EQ(r.find("b"), nullptr);
    EXPECT_EQ(ZipReader::open(path, {}, access).entries().size(), 2u);  // The path: the new one.
  }
}

TEST(ZipReader, OpenWantsAFile) {
  expect_error([] { (void)ZipReader::open(std::shared_ptr<const MappedFile>{}); },
               ErrorCode::kInvalidArgument, {"ZipReader::open: no file"});
}

TEST(ZipReader, OpenNamesTheMissingFile) {
  const fs::path path = temp_file("does-not-exist.zip");
  expect_error([&] { (void)ZipReader::open(path); }, ErrorCode::kNotFound, {"does-not-exist.zip"});
}

TEST(ZipReader, ErrorsNameTheFilePath) {
  const fs::path path = temp_file("not-a-zip.zip");
  write_file(path, pattern(100, 0));
  expect_error([&] { (void)ZipReader::open(path); }, ErrorCode::kCorrupt,
               {path.string(), "not a ZIP archive"});
}

class DeflatedSizes : public ::testing::TestWithParam<std::tuple<std::size_t, Source>> {};

TEST_P(DeflatedSizes, InflateIntoOwnedMemory) {
  const auto [size, source] = GetParam();
  const Bytes payload = size % 2 == 0 ? text_lines(size / 18 + 1) : pattern(size, 5);
  const BuiltZip z = build_zip({deflated("d", payload)});
  const ZipReader r = open_over(source, z.span());
  const ZipEntry& e = r.at("d");
  EXPECT_TRUE(e.is_deflated());
  EXPECT_FALSE(e.zero_copy());
  EXPECT_EQ(e.size, payload.size());
  EXPECT_TRUE(has_finding(r, ZipFindingKind::kDeflated, "d"));
  const TensorBytes data = r.verified_data(e);
  EXPECT_TRUE(data.is_owned());
  EXPECT_TRUE(equal_bytes(data.view(), payload));
  expect_error([&] { (void)r.stored_data(e); }, ErrorCode::kUnsupported, {"'d'", "deflated"});
}

INSTANTIATE_TEST_SUITE_P(
    ZipReader, DeflatedSizes,
    ::testing::Combine(::testing::Values(0, 1, 63, 64, 65, 1000, std::size_t{1} << 20), kSources));

TEST_P(OverSources, AnEmptyDeflatedEntryMayHaveNoStreamAtAll) {
  BuiltZip z = build_zip({stored("e", {}, 0)});
  z.put16(z.entries[0].local_header_offset + field::kLocalMethod, zip::kMethodDeflated);
  z.put16(z.entries[0].central_header_offset + field::kCentralMethod, zip::kMethodDeflated);
  const ZipReader r = open(z.span());
  const ZipEntry& e = r.at("e");
  EXPECT_EQ(e.compressed_size, 0u);
  EXPECT_TRUE(e.is_deflated());
  EXPECT_TRUE(r.verified_data(e).empty());
}

struct InteropEntry {
  std::string name;
  Bytes data;
  bool descriptor;
};

struct InteropCase {
  std::string file;
  std::vector<InteropEntry> entries;  // In file order.
};

void PrintTo(const InteropCase& c, std::ostream* os) { *os << c.file; }

class Interop : public ::testing::TestWithParam<std::tuple<InteropCase, Source>> {};

TEST_P(Interop, ArchivesOtherToolsWroteReadBackEqual) {
  const auto& [c, source] = GetParam();
  const fs::path path = fs::path(ONNXZIP_TEST_DATA_DIR) / "valid" / c.file;
  std::ifstream in(path, std::ios::binary);
  const Bytes bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const ZipReader r = open_over(source, bytes);
  ASSERT_EQ(r.entries().size(), c.entries.size());
  for (std::size_t i = 0; i < c.entries.size(); ++i) {
    const ZipEntry& e = r.entries()[i];
    EXPECT_EQ(e.name, c.entries[i].name);
    EXPECT_EQ(e.has_data_descriptor, c.entries[i].descriptor) << e.name;
    EXPECT_EQ(e.has_data_descriptor, has_finding(r, ZipFindingKind::kDataDescriptor, e.name));
    EXPECT_EQ(e.is_deflated(), has_finding(r, ZipFindingKind::kDeflated, e.name));
    const TensorBytes data = r.verified_data(e);
    EXPECT_TRUE(equal_bytes(data.view(), c.entries[i].data)) << e.name;
  }
}

INSTANTIATE_TEST_SUITE_P(
    ZipReader, Interop,
    ::testing::Combine(::testing::Values(InteropCase{"zip_python_deflated.zip",
                                                     {{"text.txt", text_lines(200), false},
                                                      {"pattern.bin", pattern(5000, 1), false},
                                                      {"empty.bin", {}, false},
                                                      {"stored.bin", pattern(300, 2), false}}},
                                         InteropCase{"zip_python_streamed.zip",
                                                     {{"text.txt", text_lines(200), true},
                                                      {"stored.bin", pattern(300, 2), true}}},
                                         InteropCase{"zip_infozip_9.zip",
                                                     {{"text.txt", text_lines(200), false},
                                                      {"pattern.bin", pattern(5000, 1), false},
                                                      {"dir/", {}, false},
                                                      {"dir/nested.txt", text_lines(3), false}}},
                                         InteropCase{"zip_infozip_stdin.zip",
                                                     {{"-", text_lines(50), true}}}),
                       kSources),
    [](const ::testing::TestParamInfo<std::tuple<InteropCase, Source>>& param) {
      const std::string& file = std::get<0>(param.param).file;
      return file.substr(0, file.find('.')) + "_" + to_string(std::get<1>(param.param));
    });

struct DescriptorLayout {
  bool signature;
  bool wide;
  std::uint16_t method;
};

class DataDescriptors : public ::testing::TestWithParam<std::tuple<DescriptorLayout, Source>> {};

TEST_P(DataDescriptors, EveryLayoutIsReadAndCheckedAgainstTheCentralRecord) {
  const auto [layout, source] = GetParam();
  TestEntry e = layout.method == zip::kMethodStored ? stored("s", pattern(700, 4), 0)
                                                    : deflated("s", text_lines(40));
  e.data_descriptor = true;
  e.descriptor_signature = layout.signature;
  e.descriptor_wide = layout.wide;
  const BuiltZip z = build_zip({e, stored("after", pattern(5, 5))});
  const ZipReader r = open_over(source, z.span());
  const ZipEntry& s = r.at("s");
  EXPECT_TRUE(s.has_data_descriptor);
  EXPECT_EQ(s.end_offset, z.entries[0].end_offset);
  EXPECT_TRUE(has_finding(r, ZipFindingKind::kDataDescriptor, "s"));
  EXPECT_FALSE(has_finding(r, ZipFindingKind::kGap, "s"));
  EXPECT_TRUE(equal_bytes(r.verified_data(s).view(), e.data));
}

INSTANTIATE_TEST_SUITE_P(
    ZipReader, DataDescriptors,
    ::testing::Combine(
        ::testing::Values(DescriptorLayout{true, false, 0}, DescriptorLayout{true, true, 0},
                          DescriptorLayout{false, false, 0}, DescriptorLayout{false, true, 0},
                          DescriptorLayout{true, false, 8}, DescriptorLayout{false, true, 8}),
        kSources),
    [](const ::testing::TestParamInfo<std::tuple<DescriptorLayout, Source>>& param) {
      const DescriptorLayout& layout = std::get<0>(param.param);
      return std::string(layout.signature ? "signed" : "unsigned") +
             (layout.wide ? "_wide" : "_narrow") + (layout.method == 0 ? "_stored" : "_deflated") +
             "_" + to_string(std::get<1>(param.param));
    });

TEST_P(OverSources, Zip64ArchiveBuiltByHandReadsCorrectly) {
  for (const bool sentinel_end : {true, false}) {
    SCOPED_TRACE(sentinel_end ? "sentinel end record" : "real values in the end record");
    TestEntry big = stored("big", pattern(5000, 7));
    big.zip64_sizes = true;
    big.zip64_offset = true;
    TestEntry small = deflated("small", text_lines(30));
    small.zip64_sizes = true;
    TestEntry streamed = stored("streamed", pattern(100, 8));
    streamed.zip64_sizes = true;
    streamed.data_descriptor = true;
    streamed.descriptor_wide = true;
    ZipBuildOptions options;
    options.zip64_end = true;
    options.sentinel_end = sentinel_end;
    const BuiltZip z = build_zip({big, small, streamed}, options);
    const ZipReader r = open(z.span());

    EXPECT_TRUE(r.has_zip64_end_record());
    EXPECT_EQ(r.tail_offset(), z.zip64_end_offset);
    EXPECT_EQ(r.central_directory_offset(), z.central_directory_offset);
    EXPECT_EQ(r.central_directory_size(), z.central_directory_size);
    ASSERT_EQ(r.entries().size(), 3u);
    for (const ZipEntry& e : r.entries()) EXPECT_TRUE(e.zip64) << e.name;
    EXPECT_EQ(r.at("big").size, 5000u);
    EXPECT_EQ(r.at("big").local_header_offset, 0u);
    EXPECT_EQ(r.at("big").data_offset % 64, 0u);
    EXPECT_TRUE(equal_bytes(r.verified_data(r.at("big")).view(), pattern(5000, 7)));
    EXPECT_TRUE(equal_bytes(r.verified_data(r.at("small")).view(), text_lines(30)));
    EXPECT_TRUE(equal_bytes(r.verified_data(r.at("streamed")).view(), pattern(100, 8)));
  }
}

TEST_P(OverSources, EmptyArchiveHasNoEntries) {
  const BuiltZip z = build_zip({});
  EXPECT_EQ(z.bytes.size(), 22u);
  const ZipReader r = open(z.span());
  EXPECT_TRUE(r.entries().empty());
  EXPECT_TRUE(r.findings().empty());
  EXPECT_EQ(r.find(""), nullptr);
}

TEST_P(OverSources, AcceptsWhatOtherToolsWriteWithFindings) {
  TestEntry directory = stored("dir/", {}, 0);
  TestEntry latin1 = stored("caf\xe9", pattern(10, 1));
  latin1.flags = 0;
  TestEntry utf8_flag_invalid = stored("bad\xff", pattern(10, 2));
  TestEntry extras = stored("extras", pattern(10, 3));
  extras.local_extra = extra_record(0x5455, {1, 2, 3, 4, 5});
  extras.central_extra = extra_record(0x7875, {1});
  extras.comment = "hello";
  TestEntry gap = stored("after_gap", pattern(10, 4));
  gap.gap_before = 100;
  ZipBuildOptions options;
  options.comment = "archive comment";
  const BuiltZip z = build_zip({directory, stored("Upper", pattern(10, 5)), latin1,
                                utf8_flag_invalid, extras, gap, stored("upper", pattern(10, 6))},
                               options);
  const ZipReader r = open(z.span());
  EXPECT_EQ(r.entries().size(), 7u);
  EXPECT_TRUE(r.at("dir/").is_directory());
  EXPECT_TRUE(has_finding(r, ZipFindingKind::kDirectory, "dir/"));
  EXPECT_TRUE(has_finding(r, ZipFindingKind::kNameEncoding, "caf\xe9"));
  EXPECT_TRUE(has_finding(r, ZipFindingKind::kNameEncoding, "bad\xff"));
  EXPECT_TRUE(has_finding(r, ZipFindingKind::kUnknownExtraField, "extras"));
  EXPECT_TRUE(has_finding(r, ZipFindingKind::kEntryComment, "extras"));
  EXPECT_TRUE(has_finding(r, ZipFindingKind::kCaseOnlyDuplicate, "upper"));
  EXPECT_TRUE(has_finding(r, ZipFindingKind::kGap, "extras"));  // The gap follows "extras".
  EXPECT_TRUE(has_finding(r, ZipFindingKind::kArchiveComment, ""));
  EXPECT_EQ(std::string(r.comment().begin(), r.comment().end()), "archive comment");
  EXPECT_EQ(std::string(r.at("extras").comment.begin(), r.at("extras").comment.end()), "hello");
  EXPECT_GT(r.at("extras").local_extra.size(), 9u);  // The 0x5455 record, then padding.
  EXPECT_EQ(r.at("extras").data_offset % 64, 0u);
  EXPECT_FALSE(has_finding(r, ZipFindingKind::kUnaligned, "Upper"));
  for (const ZipEntry& e : r.entries()) EXPECT_NO_THROW(r.verify(e)) << e.name;
}

TEST_P(OverSources, AGapBeforeTheFirstEntryIsAFinding) {
  TestEntry e = stored("late", pattern(10, 1));
  e.gap_before = 7;
  const BuiltZip z = build_zip({e});
  const ZipReader r = open(z.span());
  EXPECT_TRUE(has_finding(r, ZipFindingKind::kGap, ""));
  EXPECT_EQ(r.at("late").local_header_offset, 7u);
}

TEST_P(OverSources, AZipInsideTheArchiveCommentDoesNotConfuseIt) {
  const BuiltZip inner = build_zip({stored("inner", pattern(10, 1))});
  ZipBuildOptions options;
  options.comment = std::string(inner.bytes.begin(), inner.bytes.end());
  const BuiltZip outer = build_zip({stored("outer", pattern(20, 2))}, options);
  const ZipReader r = open(outer.span());
  ASSERT_EQ(r.entries().size(), 1u);
  EXPECT_EQ(r.entries()[0].name, "outer");
  EXPECT_EQ(r.end_record_offset(), outer.end_offset);
}

TEST_P(OverSources, VerifyNamesTheEntryOffsetAndBothCrcs) {
  BuiltZip z = build_zip({stored("a", pattern(10, 1)), stored("w", pattern(100, 2))});
  z.bytes[z.entries[1].data_offset + 50] ^= 0x01;
  const ZipReader r = open(z.span());
  const ZipEntry& w = r.at("w");
  Bytes corrupted = pattern(100, 2);
  corrupted[50] ^= 0x01;
  char expected[16];
  char actual[16];
  std::snprintf(expected, sizeof expected, "0x%08x", z.entries[1].crc32);
  std::snprintf(actual, sizeof actual, "0x%08x", onnxzip::crc32(corrupted));
  expect_error(
      [&] { r.verify(w); }, ErrorCode::kCorrupt,
      {archive_name(), "'w'", "offset " + std::to_string(w.local_header_offset), expected, actual});
  // The place as plain values too (Python's Error.entry and .offset).
  try {
    r.verify(w);
  } catch (const Error& error) {
    EXPECT_EQ(error.context().entry_name, "w");
    EXPECT_EQ(error.context().offset, w.local_header_offset);
  }
  EXPECT_NO_THROW(r.verify(r.at("a")));
  // data() itself does not check: it is the zero-copy path.
  EXPECT_NO_THROW((void)r.data(w));
}

// Both inflaters -- libdeflate for whole buffers, zlib in pieces above spill_threshold -- and
// every way to read an entry find the same faults with the same messages.
TEST_P(OverSources, BadDeflateStreamsAreCorruptOnRead) {
  const Bytes payload = text_lines(100);
  struct Reading {
    const char* how;
    std::uint64_t spill_threshold;
    std::function<void(const ZipReader&, const ZipEntry&)> read;
  };
  const std::vector<Reading> readings = {
      {"data, whole", ZipReaderOptions{}.spill_threshold,
       [](const ZipReader& r, const ZipEntry& e) { (void)r.data(e); }},
      {"data, spilled", 0, [](const ZipReader& r, const ZipEntry& e) { (void)r.data(e); }},
      {"verify, whole", ZipReaderOptions{}.spill_threshold,
       [](const ZipReader& r, const ZipEntry& e) { r.verify(e); }},
      {"verify, in pieces", 0, [](const ZipReader& r, const ZipEntry& e) { r.verify(e); }},
  };
  const auto with_size = [&](std::uint32_t size) {
    BuiltZip z = build_zip({deflated("d", payload)});
    z.put32(z.entries[0].local_header_offset + field::kLocalSize, size);
    z.put32(z.entries[0].central_header_offset + field::kCentralSize, size);
    return z;
  };
  // Entry "d" of `payload`'s size whose deflated data is `stream` as given (built stored, then
  // relabelled deflated, so the builder does not compress it again).
  const auto with_stream = [&](const Bytes& stream) {
    TestEntry e = deflated("d", payload);
    e.method = zip::kMethodStored;
    e.data = stream;
    BuiltZip z = build_zip({e});
    const auto& l = z.entries[0];
    z.put16(l.local_header_offset + field::kLocalMethod, zip::kMethodDeflated);
    z.put16(l.central_header_offset + field::kCentralMethod, zip::kMethodDeflated);
    z.put32(l.local_header_offset + field::kLocalSize, static_cast<std::uint32_t>(payload.size()));
    z.put32(l.central_header_offset + field::kCentralSize,
            static_cast<std::uint32_t>(payload.size()));
    return z;
  };
  for (const Reading& reading : readings) {
    SCOPED_TRACE(reading.how);
    ZipReaderOptions options;
    options.spill_threshold = reading.spill_threshold;
    const auto expect_read_error = [&](const BuiltZip& z, ErrorCode code,
                                       const std::vector<std::string>& fragments) {
      const ZipReader r = open(z.span(), options);
      expect_error([&] { reading.read(r, r.at("d")); }, code, fragments);
    };
    {
      SCOPED_TRACE("garbled stream");
      BuiltZip z = build_zip({deflated("d", payload)});
      for (std::uint64_t i = 0; i < 8; ++i) z.bytes[z.entries[0].data_offset + i] = 0xFF;
      expect_read_error(z, ErrorCode::kCorrupt, {"'d'", "invalid deflate stream"});
    }
    {
      SCOPED_TRACE("truncated stream");
      Bytes stream = testing::deflate_raw(payload);
      stream.resize(stream.size() / 2);
      const BuiltZip z = with_stream(stream);
      expect_read_error(
          z, ErrorCode::kCorrupt,
          {"'d'", "invalid deflate stream in the " + std::to_string(stream.size()) +
                      " bytes at offset " + std::to_string(z.entries[0].data_offset)});
    }
    {
      SCOPED_TRACE("recorded size too large");
      expect_read_error(
          with_size(static_cast<std::uint32_t>(payload.size() + 1)), ErrorCode::kCorrupt,
          {"'d'", "inflates to " + std::to_string(payload.size()) + " bytes, not the " +
                      std::to_string(payload.size() + 1) + " recorded"});
    }
    {
      SCOPED_TRACE("recorded size too small");
      expect_read_error(with_size(static_cast<std::uint32_t>(payload.size() - 1)),
                        ErrorCode::kCorrupt, {"'d'", "more than the"});
    }
    {
      SCOPED_TRACE("bytes after the end of the stream");
      Bytes stream = testing::deflate_raw(payload);
      stream.push_back(0);
      stream.push_back(0);
      expect_read_error(with_stream(stream), ErrorCode::kCorrupt,
                        {"'d'", "2 bytes before the entry's compressed data"});
    }
    {
      SCOPED_TRACE("above max_inflated_size");
      options.max_inflated_size = payload.size() - 1;
      expect_read_error(build_zip({deflated("d", payload)}), ErrorCode::kLimitExceeded,
                        {"'d'", "inflates to " + std::to_string(payload.size()) + " bytes",
                         "(ReadLimits::max_inflated_size: raise it for an archive you "
                         "trust)"});
    }
  }
}

// stream() hands on every entry's bytes in order, in pieces of at most kStreamPieceBytes,
// whichever way the entry is stored and inflated.
TEST_P(OverSources, StreamHandsOnEveryByteInBoundedPieces) {
  constexpr std::size_t kPiece = ZipReader::kStreamPieceBytes;
  for (const std::size_t size : {std::size_t{0}, std::size_t{1}, std::size_t{63}, std::size_t{64},
                                 std::size_t{65}, kPiece - 1, kPiece, kPiece + 1, 3 * kPiece + 5}) {
    const Bytes payload = pattern(size, static_cast<std::uint32_t>(size));
    const BuiltZip z = build_zip({stored("s", payload), deflated("d", payload)});
    for (const std::uint64_t spill_threshold : {ZipReaderOptions{}.spill_threshold, 0ul}) {
      ZipReaderOptions options;
      options.spill_threshold = spill_threshold;
      const ZipReader r = open(z.span(), options);
      for (const char* name : {"s", "d"}) {
        SCOPED_TRACE(std::to_string(size) + " bytes, entry " + name + ", spill threshold " +
                     std::to_string(spill_threshold));
        Bytes seen;
        std::size_t pieces = 0;
        r.stream(r.at(name), [&](ByteSpan piece) {
          ++pieces;
          EXPECT_FALSE(piece.empty());
          EXPECT_LE(piece.size(), kPiece);
          seen.insert(seen.end(), piece.begin(), piece.end());
        });
        EXPECT_EQ(seen, payload);
        EXPECT_EQ(pieces, (size + kPiece - 1) / kPiece);
        EXPECT_NO_THROW(r.verify(r.at(name)));
        EXPECT_TRUE(equal_bytes(r.verified_data(r.at(name)).view(), payload));
      }
    }
  }
}

// A wrong CRC-32 is found after the last piece, and by data() whenever it spills (the CRC-32 is
// computed on the way, so checking it costs nothing).
TEST_P(OverSources, StreamAndSpilledDataCheckTheCrc) {
  const Bytes payload = pattern(200'000, 4);
  BuiltZip z = build_zip({deflated("d", payload)});
  const std::uint32_t wrong = crc32(payload) ^ 1;
  z.put32(z.entries[0].local_header_offset + field::kLocalCrc, wrong);
  z.put32(z.entries[0].central_header_offset + field::kCentralCrc, wrong);
  for (const std::uint64_t spill_threshold : {ZipReaderOptions{}.spill_threshold, 0ul}) {
    SCOPED_TRACE("spill threshold " + std::to_string(spill_threshold));
    ZipReaderOptions options;
    options.spill_threshold = spill_threshold;
    const ZipReader r = open(z.span(), options);
    const ZipEntry& e = r.at("d");
    std::uint64_t seen = 0;
    expect_error([&] { r.stream(e, [&](ByteSpan piece) { seen += piece.size(); }); },
                 ErrorCode::kCorrupt, {"'d'", "CRC-32 mismatch"});
    EXPECT_EQ(seen, payload.size());
    expect_error([&] { r.verify(e); }, ErrorCode::kCorrupt, {"'d'", "CRC-32 mismatch"});
    expect_error([&] { (void)r.verified_data(e); }, ErrorCode::kCorrupt, {"CRC-32 mismatch"});
    if (spill_threshold == 0) {
      expect_error([&] { (void)r.data(e); }, ErrorCode::kCorrupt, {"'d'", "CRC-32 mismatch"});
    } else {
      EXPECT_TRUE(equal_bytes(r.data(e).view(), payload));  // data() alone does not check.
    }
  }
}

// Above spill_threshold, data() inflates into an unlinked file of spill_directory and borrows
// the bytes from its mapping: nothing is left in the folder, and the bytes outlive the reader.
TEST_P(OverSources, LargeDeflatedEntriesSpillToAnUnlinkedMappedFile) {
  const fs::path spill = temp_file("spill-" + std::to_string(::getpid()));
  fs::remove_all(spill);
  fs::create_directories(spill);
  const Bytes payload = pattern(3 * ZipReader::kStreamPieceBytes + 7, 5);
  const auto archive = std::make_shared<Bytes>(build_zip({deflated("d", payload)}).bytes);
  ZipReaderOptions options;
  options.spill_threshold = 64 * 1024;
  options.spill_directory = spill;
  TensorBytes bytes;
  TensorBytes verified;
  OwnerToken archive_owner;
  {
    const ZipReader r = open(*archive, options);
    archive_owner = r.owner();
    bytes = r.data(r.at("d"));
    verified = r.verified_data(r.at("d"));
  }
  for (const TensorBytes* b : {&bytes, &verified}) {
    EXPECT_TRUE(b->is_borrowed());
    ASSERT_NE(b->owner(), nullptr);
    EXPECT_NE(b->owner(), archive_owner);  // The spill file's mapping, not the archive.
    EXPECT_TRUE(equal_bytes(b->view(), payload));
  }
  EXPECT_TRUE(fs::is_empty(spill));
  {
    SCOPED_TRACE("at or under the threshold: owned memory");
    options.spill_threshold = payload.size();
    const ZipReader r = open(*archive, options);
    const TensorBytes whole = r.data(r.at("d"));
    EXPECT_TRUE(whole.is_owned());
    EXPECT_TRUE(equal_bytes(whole.view(), payload));
  }
  {
    SCOPED_TRACE("a spill folder that does not exist");
    options.spill_threshold = 0;
    options.spill_directory = spill / "absent";
    const ZipReader r = open(*archive, options);
    expect_error([&] { (void)r.data(r.at("d")); }, ErrorCode::kIo,
                 {"'d'", "cannot inflate", (spill / "absent").string(),
                  "ZipReaderOptions::spill_directory"});
  }
  fs::remove_all(spill);
}

// The compression ratio limit: a zip bomb (long runs of zeros deflate to about 1000:1) is
// refused before anything is inflated, unless the entry is under the grace size or the limit is
// raised.
TEST_P(OverSources, CompressionRatioLimitRefusesBombs) {
  const Bytes zeros(2 << 20, 0);
  const BuiltZip z = build_zip({deflated("bomb", zeros), stored("flat", zeros),
                                deflated("grace", Bytes(kCompressionRatioGraceSize, 0)),
                                deflated("over", Bytes(kCompressionRatioGraceSize + 1, 0))});
  const ZipReader r = open(z.span());
  const ZipEntry& bomb = r.at("bomb");
  ASSERT_GT(bomb.size / bomb.compressed_size, 100u);  // What makes it a bomb.
  const std::vector<std::string> fragments = {
      "'bomb'", "deflated from " + std::to_string(bomb.compressed_size) + " to 2097152 bytes",
      "compression ratio of " + std::to_string(bomb.size / bomb.compressed_size) + ":1",
      "above the limit of 100:1",
      "(ReadLimits::max_compression_ratio: raise it for an archive you trust, 0 for no "
      "limit)"};
  bool consumed = false;
  // The library names its option, not a flag of the onnxzip tool (which says that itself).
  try {
    (void)r.data(bomb);
  } catch (const Error& e) {
    // The message starts with the archive's path, which may itself hold "onnxzip".
    EXPECT_EQ(e.message().find("--max"), std::string::npos) << e.message();
    EXPECT_EQ(e.message().find("onnxzip "), std::string::npos) << e.message();
  }
  expect_error([&] { (void)r.data(bomb); }, ErrorCode::kLimitExceeded, fragments);
  expect_error([&] { (void)r.verified_data(bomb); }, ErrorCode::kLimitExceeded, fragments);
  expect_error([&] { r.verify(bomb); }, ErrorCode::kLimitExceeded, fragments);
  expect_error([&] { r.stream(bomb, [&](ByteSpan) { consumed = true; }); },
               ErrorCode::kLimitExceeded, fragments);
  EXPECT_FALSE(consumed);  // Refused from the recorded sizes, before inflating.
  expect_error([&] { r.verify(r.at("over")); }, ErrorCode::kLimitExceeded, {"'over'", "100:1"});
  // Stored bytes are no bomb, and small entries pass whatever their ratio.
  EXPECT_NO_THROW(r.verify(r.at("flat")));
  EXPECT_NO_THROW(r.verify(r.at("grace")));
  EXPECT_TRUE(equal_bytes(r.data(r.at("grace")).view(), Bytes(kCompressionRatioGraceSize, 0)));

  for (const std::uint64_t raised : {0ul, 2000ul}) {
    SCOPED_TRACE("max_compression_ratio " + std::to_string(raised));
    ZipReaderOptions options;
    options.max_compression_ratio = raised;
    const ZipReader trusting = open(z.span(), options);
    EXPECT_NO_THROW(trusting.verify(trusting.at("bomb")));
    EXPECT_TRUE(equal_bytes(trusting.data(trusting.at("bomb")).view(), zeros));
  }
}

TEST_P(OverSources, EntriesOfAnotherArchiveAreInvalidArguments) {
  const BuiltZip one = build_zip({stored("a", pattern(10, 1)), stored("b", pattern(10, 2))});
  const BuiltZip two = build_zip({stored("x", pattern(500, 1))});
  const ZipReader r1 = open(one.span());
  const ZipReader r2 = open(two.span());
  expect_error([&] { (void)r1.data(r2.at("x")); }, ErrorCode::kInvalidArgument,
               {"'x'", "does not belong"});
  // A copy of one of its own entries is fine.
  const ZipEntry copy = r1.at("b");
  EXPECT_TRUE(equal_bytes(r1.data(copy).view(), pattern(10, 2)));
}

INSTANTIATE_TEST_SUITE_P(ZipReader, OverSources, kSources,
                         [](const ::testing::TestParamInfo<Source>& param) {
                           return to_string(param.param);
                         });

// A layer above ZIP may know what follows its archives (ZipTrailerResolver; for .onnxz files the
// interrupted edit record of spec §9.6, tested with the archive layer): the archive is then the
// source's first bytes, up to where the resolver says. It is asked only when no end record ends
// the source; saying nothing leaves the error as it was; pointing where no end record ends is an
// error naming its record.
TEST_P(OverSources, ATrailerResolverSaysWhereTheArchiveEnds) {
  const BuiltZip z = build_zip({stored("a", pattern(100, 1)), deflated("b", text_lines(20))});
  const auto with_trailer = [&](std::uint64_t archive_end) {
    Bytes bytes = z.bytes;
    const std::string magic = "TRAILER!";
    bytes.insert(bytes.end(), magic.begin(), magic.end());
    for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<std::uint8_t>(archive_end >> (8 * i)));
    return bytes;
  };
  int asked = 0;
  const ZipTrailerResolver resolver = [&](const ByteSource& source) -> std::optional<ZipTrailer> {
    ++asked;
    const TensorBytes tail = source.read(source.size() - 16, 16);
    if (std::string(tail.data(), tail.data() + 8) != "TRAILER!") return std::nullopt;
    std::uint64_t archive_end = 0;
    for (int i = 7; i >= 0; --i) archive_end = (archive_end << 8) | tail.data()[8 + i];
    return ZipTrailer{archive_end, source.size() - 16, "test trailer", "a trailer"};
  };
  const Bytes trailed = with_trailer(z.bytes.size());
  const ZipReader r = open(trailed, {}, resolver);
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(r.size(), z.bytes.size());
  ASSERT_TRUE(r.trailer().has_value());
  EXPECT_EQ(r.trailer()->finding, "a trailer");
  EXPECT_EQ(r.trailer()->offset, z.bytes.size());
  ASSERT_EQ(r.entries().size(), 2u);
  EXPECT_TRUE(equal_bytes(r.verified_data(r.at("b")).view(), text_lines(20)));
  if (!ranges()) {
    EXPECT_EQ(r.bytes().size(), z.bytes.size());
  }

  const ZipReader plain = open(z.span(), {}, resolver);
  EXPECT_EQ(asked, 1);  // Not asked: the end record ends the source.
  EXPECT_FALSE(plain.trailer().has_value());

  const std::vector<std::string> trailing = {archive_name(), "end of central directory record",
                                             "bytes after the archive"};
  expect_error([&] { (void)open(trailed); }, ErrorCode::kCorrupt, trailing);
  Bytes garbage = z.bytes;
  garbage.insert(garbage.end(), 16, 'x');
  expect_error([&] { (void)open(garbage, {}, resolver); }, ErrorCode::kCorrupt, trailing);
  expect_error([&] { (void)open(with_trailer(z.bytes.size() - 1), {}, resolver); },
               ErrorCode::kCorrupt,
               {archive_name() + ": test trailer at offset " + std::to_string(z.bytes.size()) +
                ": the archive it points to ends at offset " + std::to_string(z.bytes.size() - 1) +
                ", but no end of central directory record ends there"});
}

// ---------------------------------------------------------------------------------------------
// The byte-source seam: what an open reads, and local headers read with their data (kOnRead).

// LocalHeaderScope::kOnRead reads the last entry's local header at open and every other one
// with its data: the data and the entry found are those of a full open, a broken local header is
// the same Error, only later, and findings speak only of the headers read at open.
TEST_P(OverSources, OnReadScopeChecksEachLocalHeaderWithItsData) {
  std::vector<TestEntry> entries;
  for (int i = 0; i < 4; ++i) {
    entries.push_back(
        stored("entry_" + std::to_string(i), pattern(100 + 10 * i, i), i == 1 ? 0 : 64));
  }
  entries.push_back(deflated("text", text_lines(30)));
  const BuiltZip z = build_zip(entries);
  const ZipReaderOptions on_read = scoped(LocalHeaderScope::kOnRead);
  const ZipReader full = open(z.span());
  const ZipReader r = open(z.span(), on_read);
  ASSERT_EQ(r.entries().size(), entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const ZipEntry& e = r.entries()[i];
    SCOPED_TRACE(e.name);
    EXPECT_EQ(e.local_header_read, i + 1 == entries.size());
    EXPECT_EQ(e.data_offset, e.local_header_read ? full.entries()[i].data_offset : 0u);
    EXPECT_TRUE(equal_bytes(r.data(e).view(), entries[i].data));
    EXPECT_TRUE(equal_bytes(r.verified_data(e).view(), entries[i].data));
    EXPECT_NO_THROW(r.verify(e));
    if (e.is_stored() && !ranges()) {
      EXPECT_EQ(r.stored_data(e).data(), r.bytes().data() + full.entries()[i].data_offset);
    }
  }
  // Entry 1 is unaligned: a finding of the full open, not of this one, which never read it.
  EXPECT_TRUE(has_finding(full, ZipFindingKind::kUnaligned, "entry_1"));
  EXPECT_FALSE(has_finding(r, ZipFindingKind::kUnaligned, "entry_1"));

  // A local header that disagrees with its central record: the Error a full open gives, when the
  // entry is read.
  BuiltZip broken = z;
  broken.put32(z.entries[2].local_header_offset + field::kLocalCrc, 0x12345678);
  const std::vector<std::string> fragments = {
      archive_name(),
      "'entry_2' (local header at offset " + std::to_string(z.entries[2].local_header_offset) + ")",
      "the local header says CRC-32 0x12345678"};
  expect_error([&] { (void)open(broken.span()); }, ErrorCode::kCorrupt, fragments);
  const ZipReader lazy = open(broken.span(), on_read);
  EXPECT_NO_THROW((void)lazy.data(lazy.at("entry_1")));
  expect_error([&] { (void)lazy.data(lazy.at("entry_2")); }, ErrorCode::kCorrupt, fragments);
  expect_error([&] { lazy.verify(lazy.at("entry_2")); }, ErrorCode::kCorrupt, fragments);
  // The last entry's, read at open, at open.
  broken = z;
  broken.put32(z.entries[4].local_header_offset + field::kLocalCrc, 0x12345678);
  expect_error([&] { (void)open(broken.span(), on_read); }, ErrorCode::kCorrupt, {"'text'"});
}

// What opening costs a source that reads ranges, counted at the source: one read of the tail
// when the end records, the central directory and the last entry fit in tail_read_size, else
// one more; then none for the last entry's data (held since the open), nor for what the open's
// reads held, and one for each other entry: its local header and data, up to the next entry's.
TEST(ZipReaderReads, OpenReadsTheTailOnceOrTwiceAndEachEntryOnce) {
  struct Case {
    const char* label;
    std::size_t weights;
    std::size_t weight_size;
    std::size_t model_size;
    std::uint64_t tail_read_size;
    bool zip64;
    std::size_t open_reads;
  };
  constexpr std::uint64_t kLeast = 22 + 65535;  // What an end record is searched in.
  const Case cases[] = {
      {"all in the first read", 3, 100'000, 1000, ZipReaderOptions{}.tail_read_size, false, 1},
      {"the tail in the first read, weights before it", 3, 100'000, 1000, kLeast, false, 1},
      {"zip64 end records", 3, 100'000, 1000, kLeast, true, 1},
      {"a model larger than the first read", 3, 100'000, 200'000, 100'000, false, 2},
      // 2,000 records of 67 bytes: a directory larger than the first read, whose last record,
      // the model's, says where the model starts, so that one more read brings both.
      {"a central directory larger than the first read", 2000, 100, 1000, 100'000, false, 2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.label);
    std::vector<TestEntry> entries;
    for (std::size_t i = 0; i < c.weights; ++i) {
      entries.push_back(stored("weight_number_" + std::to_string(i),
                               pattern(c.weight_size, static_cast<std::uint32_t>(i))));
    }
    entries.push_back(stored("__MODEL_PROTO", pattern(c.model_size, 99), 0));
    ZipBuildOptions build;
    build.zip64_end = c.zip64;
    build.sentinel_end = c.zip64;
    const BuiltZip z = build_zip(entries, build);
    const auto source = std::make_shared<test_support::CountingSource>(
        test_support::ranges_of(z.span(), "counted"));
    ZipReaderOptions on_read = scoped(LocalHeaderScope::kOnRead);
    on_read.tail_read_size = c.tail_read_size;
    const ZipReader r = ZipReader::open(source, on_read);
    EXPECT_EQ(source->reads(), c.open_reads);
    EXPECT_TRUE(equal_bytes(r.verified_data(r.at("__MODEL_PROTO")).view(), entries.back().data));
    EXPECT_EQ(source->reads(), c.open_reads);
    // What the open held: the first read's bytes, or from the model on after a second read.
    const std::uint64_t held_from =
        c.open_reads == 1 ? z.bytes.size() - std::min<std::uint64_t>(
                                                 z.bytes.size(), std::max(c.tail_read_size, kLeast))
                          : z.entries.back().local_header_offset;
    for (std::size_t i = 0; i + 1 < r.entries().size(); ++i) {
      const ZipEntry& e = r.entries()[i];
      const std::uint64_t next = r.entries()[i + 1].local_header_offset;
      const std::size_t reads = source->reads();
      const std::uint64_t bytes = source->bytes_read();
      EXPECT_TRUE(equal_bytes(r.data(e).view(), entries[i].data)) << e.name;
      const bool held = e.local_header_offset >= held_from;
      EXPECT_EQ(source->reads() - reads, held ? 0u : 1u) << e.name;
      EXPECT_EQ(source->bytes_read() - bytes, held ? 0u : next - e.local_header_offset) << e.name;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Every MUST-reject case of the format decisions, one test case each: the code and a message
// naming the place.

struct Rejected {
  Bytes bytes;
  std::vector<std::string> fragments;
};

struct RejectCase {
  std::string name;
  ErrorCode code;
  std::function<Rejected()> make;
  ZipReaderOptions options = {};
};

// Two aligned stored entries; most cases patch one field of it.
BuiltZip base() { return build_zip({stored("a", pattern(100, 1)), stored("b", pattern(50, 2))}); }

BuiltZip base_zip64(bool sentinel_end) {
  TestEntry a = stored("a", pattern(100, 1));
  a.zip64_sizes = true;
  ZipBuildOptions options;
  options.zip64_end = true;
  options.sentinel_end = sentinel_end;
  return build_zip({a, stored("b", pattern(50, 2))}, options);
}

std::string at(std::uint64_t offset) { return "offset " + std::to_string(offset); }

Rejected with_name(const std::string& name) {
  const BuiltZip z = build_zip({stored("ok", pattern(10, 1)), stored(name, pattern(10, 2))});
  return {z.bytes, {at(z.entries[1].central_header_offset)}};
}

Rejected patched_central(std::size_t entry, std::size_t field_offset, std::uint32_t value,
                         int width = 4) {
  BuiltZip z = base();
  const std::uint64_t offset = z.entries[entry].central_header_offset + field_offset;
  width == 2 ? z.put16(offset, static_cast<std::uint16_t>(value)) : z.put32(offset, value);
  return {z.bytes, {entry == 0 ? "'a'" : "'b'", at(z.entries[entry].central_header_offset)}};
}

Rejected patched_local(std::size_t entry, std::size_t field_offset, std::uint32_t value,
                       int width = 4) {
  BuiltZip z = base();
  const std::uint64_t offset = z.entries[entry].local_header_offset + field_offset;
  width == 2 ? z.put16(offset, static_cast<std::uint16_t>(value)) : z.put32(offset, value);
  return {z.bytes, {entry == 0 ? "'a'" : "'b'", at(z.entries[entry].local_header_offset)}};
}

// Gives entry `entry` of base() the sizes `size` in both headers (stays self-consistent).
Rejected resized(std::size_t entry, std::uint32_t size) {
  BuiltZip z = base();
  const auto& l = z.entries[entry];
  for (const std::size_t f : {field::kLocalCompressedSize, field::kLocalSize}) {
    z.put32(l.local_header_offset + f, size);
  }
  for (const std::size_t f : {field::kCentralCompressedSize, field::kCentralSize}) {
    z.put32(l.central_header_offset + f, size);
  }
  return {z.bytes, {entry == 0 ? "'a'" : "'b'", at(l.local_header_offset)}};
}

Rejected patched_end(std::size_t field_offset, std::uint32_t value, int width) {
  BuiltZip z = base();
  const std::uint64_t offset = z.end_offset + field_offset;
  width == 2 ? z.put16(offset, static_cast<std::uint16_t>(value)) : z.put32(offset, value);
  return {z.bytes, {"end of central directory record", at(z.end_offset)}};
}

std::vector<RejectCase> reject_cases() {
  using C = ErrorCode;
  std::vector<RejectCase> cases = {
      // Not a ZIP, truncated, trailing bytes.
      {"NotAZip", C::kCorrupt,
       [] {
         return Rejected{pattern(1000, 3), {"not a ZIP archive"}};
       }},
      {"EmptyFile", C::kCorrupt,
       [] {
         return Rejected{{}, {"not a ZIP archive", "0 bytes"}};
       }},
      {"TruncatedInsideEndRecord", C::kCorrupt,
       [] {
         BuiltZip z = base();
         z.bytes.resize(z.bytes.size() - 5);
         return Rejected{z.bytes, {"not a ZIP archive"}};
       }},
      {"TruncatedInsideEntries", C::kCorrupt,
       [] {
         BuiltZip z = base();
         z.bytes.resize(z.entries[1].data_offset);
         return Rejected{z.bytes, {"not a ZIP archive"}};
       }},
      {"TrailingGarbage", C::kCorrupt,
       [] {
         BuiltZip z = base();
         z.bytes.push_back('x');
         return Rejected{
             z.bytes,
             {"end of central directory record", at(z.end_offset), "comment ends at offset"}};
       }},
      {"CommentLengthPastTheEnd", C::kCorrupt,
       [] { return patched_end(field::kEndCommentLength, 10, 2); }},
      {"BytesPrepended", C::kCorrupt,
       [] {
         BuiltZip z = base();
         z.bytes.insert(z.bytes.begin(), 4, 0);
         return Rejected{z.bytes, {at(z.end_offset + 4), "does not end where the end records"}};
       }},
      {"GapBeforeTheEndRecord", C::kCorrupt,
       [] {
         BuiltZip z = base();
         z.bytes.insert(z.bytes.begin() + static_cast<std::ptrdiff_t>(z.end_offset), 0);
         return Rejected{z.bytes, {at(z.end_offset + 1), "does not end where the end records"}};
       }},
      // End record or central directory pointing outside the file.
      {"DirectoryOffsetOutsideTheFile", C::kCorrupt,
       [] {
         Rejected r = patched_end(field::kEndDirectoryOffset, 0x7FFFFFFF, 4);
         r.fragments.push_back("central directory at offset 2147483647");
         return r;
       }},
      {"DirectorySizeTooLarge", C::kCorrupt,
       [] {
         const BuiltZip z = base();
         Rejected r = patched_end(field::kEndDirectorySize,
                                  static_cast<std::uint32_t>(z.central_directory_size + 1), 4);
         r.fragments.push_back("does not end where the end records start");
         return r;
       }},
      // Multi-disk.
      {"MultiDiskEndRecord", C::kUnsupported,
       [] {
         Rejected r = patched_end(field::kEndDisk, 1, 2);
         r.fragments.push_back("multi-disk");
         return r;
       }},
      {"MultiDiskDirectoryDisk", C::kUnsupported,
       [] {
         Rejected r = patched_end(field::kEndDirectoryDisk, 1, 2);
         r.fragments.push_back("multi-disk");
         return r;
       }},
      {"MultiDiskLocator", C::kUnsupported,
       [] {
         BuiltZip z = base_zip64(false);
         z.put32(z.locator_offset + field::kLocatorTotalDisks, 2);
         return Rejected{
             z.bytes,
             {"zip64 end of central directory locator", at(z.locator_offset), "multi-disk"}};
       }},
      {"MultiDiskEntry", C::kUnsupported,
       [] {
         Rejected r = patched_central(1, field::kCentralDisk, 1, 2);
         r.fragments.push_back("disk 1");
         return r;
       }},
      // zip64 end records contradicting the end record.
      {"Zip64CountContradictsEndRecord", C::kCorrupt,
       [] {
         BuiltZip z = base_zip64(false);
         z.put64(z.zip64_end_offset + field::kEnd64EntriesOnDisk, 3);
         z.put64(z.zip64_end_offset + field::kEnd64Entries, 3);
         return Rejected{z.bytes, {at(z.end_offset), at(z.zip64_end_offset), "entry count"}};
       }},
      {"Zip64SizeContradictsEndRecord", C::kCorrupt,
       [] {
         BuiltZip z = base_zip64(false);
         z.put64(z.zip64_end_offset + field::kEnd64DirectorySize, z.central_directory_size + 1);
         return Rejected{z.bytes, {at(z.zip64_end_offset), "central directory size"}};
       }},
      {"Zip64OffsetContradictsEndRecord", C::kCorrupt,
       [] {
         BuiltZip z = base_zip64(false);
         z.put64(z.zip64_end_offset + field::kEnd64DirectoryOffset, z.central_directory_offset - 1);
         return Rejected{z.bytes, {at(z.zip64_end_offset), "central directory offset"}};
       }},
      {"Zip64LocatorMisplaced", C::kCorrupt,
       [] {
         BuiltZip z = base_zip64(true);
         z.put64(z.locator_offset + 8, z.zip64_end_offset - 8);
         return Rejected{z.bytes, {at(z.zip64_end_offset - 8)}};
       }},
      // Central entry count that does not match the records found.
      {"CountHigherThanRecords", C::kCorrupt,
       [] {
         const std::string long_name(60, 'n');
         BuiltZip z = build_zip(
             {stored(long_name + "1", pattern(10, 1)), stored(long_name + "2", pattern(10, 2))});
         z.put16(z.end_offset + field::kEndEntriesOnDisk, 3);
         z.put16(z.end_offset + field::kEndEntries, 3);
         return Rejected{z.bytes, {at(z.end_offset), "ends after 2 records"}};
       }},
      {"CountLowerThanRecords", C::kCorrupt,
       [] {
         BuiltZip z = base();
         z.put16(z.end_offset + field::kEndEntriesOnDisk, 1);
         z.put16(z.end_offset + field::kEndEntries, 1);
         return Rejected{z.bytes, {at(z.end_offset), "follow the last of them"}};
       }},
      {"AbsurdCount", C::kCorrupt,
       [] {
         BuiltZip z = base();
         z.put16(z.end_offset + field::kEndEntriesOnDisk, 0xFFFE);
         z.put16(z.end_offset + field::kEndEntries, 0xFFFE);
         return Rejected{z.bytes, {at(z.end_offset), "counts 65534 entries", "holds at most 2"}};
       }},
      {"AbsurdZip64Count", C::kCorrupt,
       [] {
         BuiltZip z = base_zip64(true);
         z.put64(z.zip64_end_offset + field::kEnd64EntriesOnDisk, std::uint64_t{1} << 60);
         z.put64(z.zip64_end_offset + field::kEnd64Entries, std::uint64_t{1} << 60);
         return Rejected{z.bytes, {at(z.zip64_end_offset), "holds at most 2"}};
       }},
      // Local header disagreeing with its central record.
      {"LocalSignature", C::kCorrupt,
       [] {
         Rejected r = patched_local(1, 0, 0x04034b51);
         r.fragments.push_back("bad signature");
         return r;
       }},
      {"LocalName", C::kCorrupt,
       [] {
         BuiltZip z = base();
         z.bytes[z.entries[1].local_header_offset + zip::LocalFileHeader::kSize] = 'c';
         return Rejected{z.bytes,
                         {"'b'", at(z.entries[1].local_header_offset), "names the entry 'c'"}};
       }},
      {"LocalMethod", C::kCorrupt,
       [] {
         Rejected r = patched_local(0, field::kLocalMethod, 8, 2);
         r.fragments.push_back("compression method 8");
         return r;
       }},
      {"LocalDataDescriptorFlag", C::kCorrupt,
       [] {
         Rejected r =
             patched_local(0, field::kLocalFlags, zip::kFlagUtf8 | zip::kFlagDataDescriptor, 2);
         r.fragments.push_back("flags 0x0808");
         return r;
       }},
      {"LocalCompressedSize", C::kCorrupt,
       [] {
         Rejected r = patched_local(0, field::kLocalCompressedSize, 99);
         r.fragments.push_back("compressed size 99");
         return r;
       }},
      {"LocalUncompressedSize", C::kCorrupt,
       [] {
         Rejected r = patched_local(0, field::kLocalSize, 101);
         r.fragments.push_back("uncompressed size 101");
         return r;
       }},
      {"LocalCrc", C::kCorrupt,
       [] {
         Rejected r = patched_local(1, field::kLocalCrc, 0x12345678);
         r.fragments.push_back("CRC-32 0x12345678");
         return r;
       }},
      {"DataDescriptorContradictsCentralRecord", C::kCorrupt,
       [] {
         TestEntry e = stored("s", pattern(64, 1));
         e.data_descriptor = true;
         BuiltZip z = build_zip({e});
         z.put32(z.entries[0].end_offset - 12, 0xDEADBEEF);  // The descriptor's CRC.
         return Rejected{
             z.bytes, {"'s'", at(z.entries[0].end_offset - 16), "data descriptor", "0xdeadbeef"}};
       }},
      // Data past the file, overlapping another entry or the central directory.
      {"DataOverlapsTheCentralDirectory", C::kCorrupt,
       [] {
         Rejected r = resized(1, 51);
         r.fragments.push_back("overlaps the central directory");
         return r;
       }},
      {"DataPastTheEndOfTheFile", C::kCorrupt,
       [] {
         Rejected r = resized(1, 0x7FFFFFFF);
         r.fragments.push_back("2147483647 bytes overlaps");
         return r;
       }},
      {"DataOverlapsTheNextLocalHeader", C::kCorrupt,
       [] {
         Rejected r = resized(0, 101);
         r.fragments.push_back("overlaps the local header of entry 'b'");
         return r;
       }},
      {"EntriesShareALocalHeader", C::kCorrupt,
       [] {
         BuiltZip z = base();
         z.put32(z.entries[1].central_header_offset + field::kCentralLocalOffset,
                 static_cast<std::uint32_t>(z.entries[0].local_header_offset));
         return Rejected{
             z.bytes,
             {"'a'", "'b'", at(z.entries[0].local_header_offset), "shares its local header"}};
       }},
      {"LocalHeaderInsideTheCentralDirectory", C::kCorrupt,
       [] {
         BuiltZip z = base();
         z.put32(z.entries[1].central_header_offset + field::kCentralLocalOffset,
                 static_cast<std::uint32_t>(z.central_directory_offset + 4));
         return Rejected{
             z.bytes,
             {"'b'", at(z.central_directory_offset + 4), "not before the central directory"}};
       }},
      // Duplicates, encryption, methods.
      {"DuplicateName", C::kCorrupt,
       [] {
         const BuiltZip z =
             build_zip({stored("same", pattern(10, 1)), stored("same", pattern(20, 2))});
         return Rejected{z.bytes,
                         {"'same'", at(z.entries[0].central_header_offset),
                          at(z.entries[1].central_header_offset), "duplicate name"}};
       }},
      {"EncryptedFlagBit0", C::kUnsupported,
       [] {
         Rejected r =
             patched_central(0, field::kCentralFlags, zip::kFlagUtf8 | zip::kFlagEncrypted, 2);
         r.fragments.push_back("encrypted");
         return r;
       }},
      {"EncryptedFlagBit6", C::kUnsupported,
       [] {
         Rejected r = patched_central(1, field::kCentralFlags,
                                      zip::kFlagUtf8 | zip::kFlagStrongEncryption, 2);
         r.fragments.push_back("encrypted");
         return r;
       }},
      {"EncryptedMethod99", C::kUnsupported,
       [] {
         Rejected r = patched_central(1, field::kCentralMethod, 99, 2);
         r.fragments.push_back("method 99");
         return r;
       }},
      {"MethodBzip2", C::kUnsupported,
       [] {
         Rejected r = patched_central(0, field::kCentralMethod, 12, 2);
         r.fragments.push_back("compression method 12");
         return r;
       }},
      // Names.
      {"NameDotDot", C::kCorrupt,
       [] {
         Rejected r = with_name("../evil");
         r.fragments.push_back("'..' path component");
         return r;
       }},
      {"NameInnerDotDot", C::kCorrupt,
       [] {
         Rejected r = with_name("a/../../evil");
         r.fragments.push_back("'..' path component");
         return r;
       }},
      {"NameFinalDotDot", C::kCorrupt,
       [] {
         Rejected r = with_name("a/..");
         r.fragments.push_back("'..' path component");
         return r;
       }},
      {"NameAbsolute", C::kCorrupt,
       [] {
         Rejected r = with_name("/etc/passwd");
         r.fragments.push_back("absolute");
         return r;
       }},
      {"NameDriveLetter", C::kCorrupt,
       [] {
         Rejected r = with_name("C:evil");
         r.fragments.push_back("drive letter");
         return r;
       }},
      {"NameNul", C::kCorrupt,
       [] {
         Rejected r = with_name(std::string("a\0b", 3));
         r.fragments.push_back("'a\\x00b'");
         r.fragments.push_back("NUL");
         return r;
       }},
      {"NameBackslash", C::kCorrupt,
       [] {
         Rejected r = with_name("a\\b");
         r.fragments.push_back("backslash");
         return r;
       }},
      {"NameEmpty", C::kCorrupt,
       [] {
         Rejected r = with_name("");
         r.fragments.push_back("empty entry name");
         return r;
       }},
      // Names or extra fields longer than the record allows.
      {"CentralNameLongerThanTheDirectory", C::kCorrupt,
       [] {
         Rejected r = patched_central(1, field::kCentralNameLength, 0xFFFF, 2);
         r.fragments.erase(r.fragments.begin());  // The name is what cannot be read.
         r.fragments.push_back("run past the end of the central directory");
         return r;
       }},
      {"CentralExtraRecordLongerThanTheField", C::kCorrupt,
       [] {
         TestEntry e = stored("x", pattern(10, 1));
         e.central_extra = extra_record(0x5455, {1, 2, 3});
         BuiltZip z = build_zip({e});
         const std::uint64_t record = z.entries[0].central_header_offset + 46 + 1;
         z.put16(record + 2, 40);
         return Rejected{z.bytes, {"'x'", "extra field record 0x5455", at(record)}};
       }},
      {"LocalExtraLongerThanTheEntry", C::kCorrupt,
       [] {
         Rejected r = patched_local(1, field::kLocalExtraLength, 0x4000, 2);
         r.fragments.push_back("run into the central directory");
         return r;
       }},
      {"LocalExtraRecordLongerThanTheField", C::kCorrupt,
       [] {
         TestEntry e = stored("x", pattern(10, 1), 0);
         e.local_extra = extra_record(0x5455, {1, 2, 3});
         BuiltZip z = build_zip({e});
         const std::uint64_t record = z.entries[0].local_header_offset + 30 + 1;
         z.put16(record + 2, 4);
         return Rejected{z.bytes, {"'x'", "extra field record 0x5455", at(record)}};
       }},
      // zip64 fields that cannot be resolved or are ambiguous.
      {"Zip64SentinelWithoutExtraField", C::kCorrupt,
       [] {
         BuiltZip z = base();
         z.put32(z.entries[0].central_header_offset + field::kCentralLocalOffset, 0xFFFFFFFF);
         return Rejected{z.bytes,
                         {"'a'", at(z.entries[0].central_header_offset), "no zip64 extra field"}};
       }},
      {"Zip64ExtraFieldTooShort", C::kCorrupt,
       [] {
         TestEntry e = stored("x", pattern(10, 1));
         e.zip64_offset = true;
         BuiltZip z = build_zip({e});
         // Claim the sizes are in the zip64 field too, which holds only the offset.
         z.put32(z.entries[0].central_header_offset + field::kCentralSize, 0xFFFFFFFF);
         z.put32(z.entries[0].central_header_offset + field::kCentralCompressedSize, 0xFFFFFFFF);
         return Rejected{z.bytes, {"'x'", "zip64 extra field too short"}};
       }},
      {"TwoZip64ExtraFields", C::kCorrupt,
       [] {
         TestEntry e = stored("x", pattern(10, 1));
         e.zip64_offset = true;
         e.central_extra = extra_record(zip::kExtraZip64, {0, 0, 0, 0, 0, 0, 0, 0});
         const BuiltZip z = build_zip({e});
         return Rejected{z.bytes, {"'x'", "two zip64 extra fields"}};
       }},
      {"TwoZip64ExtraFieldsInTheLocalHeader", C::kCorrupt,
       [] {
         TestEntry e = stored("x", pattern(10, 1));
         e.zip64_sizes = true;
         e.local_extra = extra_record(zip::kExtraZip64, std::vector<std::uint8_t>(16, 0));
         const BuiltZip z = build_zip({e});
         // The extra field starts after the 30-byte header and the name; the first record
         // takes 4 + 16 bytes.
         return Rejected{z.bytes,
                         {"entry 'x' (local header at offset 0)",
                          "two zip64 extra fields in the local header (offsets 31 and 51)"}};
       }},
      // Sizes that cannot be true.
      {"StoredSizesDiffer", C::kCorrupt,
       [] {
         Rejected r = patched_central(0, field::kCentralCompressedSize, 99);
         r.fragments.push_back("stored entry with compressed size 99");
         return r;
       }},
      {"DeflateRatioImpossible", C::kCorrupt,
       [] {
         BuiltZip z = build_zip({deflated("d", text_lines(10))});
         z.put32(z.entries[0].central_header_offset + field::kCentralSize, 0x7FFFFFFF);
         return Rejected{z.bytes, {"'d'", "1032:1"}};
       }},
  };
  RejectCase limit{"MoreEntriesThanMaxEntries", ErrorCode::kLimitExceeded, [] {
                     const BuiltZip z = base();
                     return Rejected{z.bytes, {at(z.end_offset), "max_entries"}};
                   }};
  limit.options.max_entries = 1;
  cases.push_back(limit);
  return cases;
}

void PrintTo(const RejectCase& c, std::ostream* os) { *os << c.name; }

class MustReject : public ::testing::TestWithParam<std::tuple<RejectCase, Source>> {};

TEST_P(MustReject, WithTheCodeAndAMessageNamingThePlace) {
  // Named copies, not a structured binding: clang 14 cannot capture one in the lambda.
  const RejectCase& c = std::get<0>(GetParam());
  const Source source = std::get<1>(GetParam());
  Rejected r = c.make();
  r.fragments.push_back(archive_name());
  expect_error([&] { (void)open_over(source, r.bytes, c.options); }, c.code, r.fragments);
}

INSTANTIATE_TEST_SUITE_P(ZipReader, MustReject,
                         ::testing::Combine(::testing::ValuesIn(reject_cases()), kSources),
                         [](const ::testing::TestParamInfo<std::tuple<RejectCase, Source>>& param) {
                           return std::get<0>(param.param).name + "_" +
                                  to_string(std::get<1>(param.param));
                         });

// ---------------------------------------------------------------------------------------------
// Damage anywhere must give a result or an Error, never a crash or an out-of-bounds read
// (ASan/UBSan builds check the latter).

BuiltZip varied_archive() {
  TestEntry zip64 = stored("z64", pattern(80, 3));
  zip64.zip64_sizes = true;
  zip64.zip64_offset = true;
  TestEntry described = deflated("dd", text_lines(8));
  described.data_descriptor = true;
  described.descriptor_signature = false;
  ZipBuildOptions options;
  options.zip64_end = true;
  options.comment = "c";
  return build_zip({stored("a", pattern(70, 1)), deflated("d", text_lines(12)), zip64, described},
                   options);
}

// In memory, and through a source that reads ranges with every local header left to the read
// of its data (the bounds of what kOnRead reads, under damage).
void read_everything(ByteSpan bytes) {
  const ZipReaderOptions on_read = scoped(LocalHeaderScope::kOnRead);
  for (const bool ranges : {false, true}) {
    try {
      const ZipReader r = ranges ? ZipReader::open(test_support::ranges_of(bytes), on_read)
                                 : ZipReader::from_bytes(bytes, kNoOwner);
      for (const ZipEntry& e : r.entries()) {
        try {
          r.verify(e);
          (void)r.find(e.name);
        } catch (const Error&) {
        }
      }
    } catch (const Error&) {
    }
  }
}

TEST(ZipReader, EveryPrefixIsRejectedOrReadWithoutCrashing) {
  const BuiltZip z = varied_archive();
  ASSERT_NO_THROW({
    const ZipReader r = ZipReader::from_bytes(z.span(), kNoOwner);
    for (const ZipEntry& e : r.entries()) r.verify(e);
  });
  std::size_t accepted = 0;
  for (std::size_t n = 0; n < z.bytes.size(); ++n) {
    // An exactly-sized heap copy, so any read past the prefix is a heap overflow ASan sees.
    const auto prefix = std::make_unique<std::uint8_t[]>(n);
    std::copy_n(z.bytes.begin(), n, prefix.get());
    try {
      const ZipReader r = ZipReader::from_bytes({prefix.get(), n}, kNoOwner);
      ++accepted;
    } catch (const Error& e) {
      EXPECT_TRUE(e.code() == ErrorCode::kCorrupt || e.code() == ErrorCode::kUnsupported)
          << e.what();
    }
    read_everything({prefix.get(), n});
  }
  // The end record sits at the very end, so no proper prefix is an archive.
  EXPECT_EQ(accepted, 0u);
}

TEST(ZipReader, EveryFlippedByteIsRejectedOrReadWithoutCrashing) {
  const BuiltZip z = varied_archive();
  for (std::size_t i = 0; i < z.bytes.size(); ++i) {
    for (const std::uint8_t mask : {0x01, 0x80, 0xFF}) {
      const auto copy = std::make_unique<std::uint8_t[]>(z.bytes.size());
      std::copy(z.bytes.begin(), z.bytes.end(), copy.get());
      copy[i] ^= mask;
      read_everything({copy.get(), z.bytes.size()});
    }
  }
}

}  // namespace
}  // namespace onnxzip
