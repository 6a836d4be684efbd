#include "onnxzip/internal/byte_source.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "onnxzip/error.h"

namespace onnxzip {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

Bytes pattern(std::size_t size) {
  Bytes bytes(size);
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::uint8_t>(i * 7 + 3);
  return bytes;
}

fs::path temp_path(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / "onnxzip_byte_source_test";
  fs::create_directories(dir);
  return dir / (std::to_string(::getpid()) + "-" + name);
}

void write_file(const fs::path& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good());
}

void expect_error(const std::function<void()>& f, ErrorCode code,
                  const std::vector<std::string>& fragments) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const std::string& fragment : fragments) {
      EXPECT_NE(e.message().find(fragment), std::string::npos) << fragment << " in " << e.what();
    }
  }
}

struct Kind {
  const char* label;
  ByteSource::Access access;
  std::function<std::shared_ptr<const ByteSource>(const fs::path&, const Bytes&)> make;
};

// Every kind of source, over the same bytes: its access, its size and name, and every range
// read both ways equal to the bytes; borrowed reads from memory and mappings, reads of their own
// (aligned as in the file) from a source that reads ranges.
TEST(ByteSource, EveryKindReadsTheSameBytes) {
  const Bytes content = pattern(10'000);
  const fs::path path = temp_path("source.bin");
  write_file(path, content);
  const Kind kinds[] = {
      {"mapped", ByteSource::Access::kMapped,
       [](const fs::path& p, const Bytes&) { return ByteSource::open(p); }},
      {"read whole", ByteSource::Access::kInMemory,
       [](const fs::path& p, const Bytes&) { return ByteSource::open(p, FileAccess::kRead); }},
      {"caller's bytes", ByteSource::Access::kInMemory,
       [](const fs::path& p, const Bytes& b) {
         return ByteSource::of_bytes(b, kNoOwner, p.string());
       }},
      {"ranges", ByteSource::Access::kRanges,
       [](const fs::path& p, const Bytes&) { return ByteSource::open_ranges(p); }},
      {"file opened for ranges", ByteSource::Access::kRanges,
       [](const fs::path& p, const Bytes&) {
         return ByteSource::of_file(MappedFile::open(p, FileAccess::kRanges));
       }},
  };
  for (const Kind& kind : kinds) {
    SCOPED_TRACE(kind.label);
    const std::shared_ptr<const ByteSource> source = kind.make(path, content);
    EXPECT_EQ(source->access(), kind.access);
    EXPECT_EQ(source->size(), content.size());
    EXPECT_EQ(source->name(), path.string());
    const bool ranges = kind.access == ByteSource::Access::kRanges;
    EXPECT_EQ(source->bytes().size(), ranges ? 0u : content.size());
    for (const std::uint64_t offset : {0ul, 1ul, 63ul, 64ul, 65ul, 4095ul, 9999ul, 10'000ul}) {
      for (const std::uint64_t length : {0ul, 1ul, 100ul}) {
        if (offset + length > content.size()) continue;
        const TensorBytes read = source->read(offset, length);
        ASSERT_EQ(read.size(), length);
        EXPECT_TRUE(read.is_borrowed());
        EXPECT_TRUE(std::equal(read.view().begin(), read.view().end(), content.begin() + offset));
        if (ranges) {
          ASSERT_NE(read.owner(), nullptr);
          EXPECT_EQ(reinterpret_cast<std::uintptr_t>(read.data()) % 64, offset % 64);
        } else if (length > 0) {
          EXPECT_EQ(read.data(), source->bytes().data() + offset);
          EXPECT_EQ(read.owner(), source->owner());
        }
        Bytes copy(length, 0xEE);
        source->read_into(offset, copy);
        EXPECT_TRUE(std::equal(copy.begin(), copy.end(), content.begin() + offset));
      }
    }
    expect_error([&] { (void)source->read(9'990, 11); }, ErrorCode::kInvalidArgument,
                 {path.string(), "11 bytes at offset 9990", "10000 bytes"});
    Bytes out(2);
    expect_error([&] { source->read_into(~std::uint64_t{0}, out); }, ErrorCode::kInvalidArgument,
                 {path.string()});
  }
  fs::remove(path);
}

// A file opened with FileAccess::kRanges is neither mapped nor read: it has no bytes, and its
// source reads through its descriptor, which the source keeps open after the file's last user.
TEST(ByteSource, AFileOpenedForRangesIsReadThroughItsDescriptor) {
  const Bytes content = pattern(5000);
  const fs::path path = temp_path("ranges.bin");
  write_file(path, content);
  std::shared_ptr<const MappedFile> file = MappedFile::open(path, FileAccess::kRanges);
  EXPECT_TRUE(file->bytes().empty());
  EXPECT_EQ(file->access(), FileAccess::kRanges);
  const std::shared_ptr<const ByteSource> source = ByteSource::of_file(std::move(file));
  const TensorBytes read = source->read(4000, 1000);
  EXPECT_TRUE(std::equal(read.view().begin(), read.view().end(), content.begin() + 4000));
  fs::remove(path);
}

// A source that reads ranges reads the file when asked: one that shrank since is an Error
// saying so, never short bytes.
TEST(ByteSource, RangesOfAFileThatShrankAreAnError) {
  const fs::path path = temp_path("shrinking.bin");
  write_file(path, pattern(5000));
  const std::shared_ptr<const ByteSource> source = ByteSource::open_ranges(path);
  fs::resize_file(path, 3000);
  EXPECT_EQ(source->read(0, 3000).size(), 3000u);
  expect_error([&] { (void)source->read(2000, 2000); }, ErrorCode::kChanged,
               {path.string(), "shrank", "5000 bytes", "offset 2000", "offset 3000"});
  fs::remove(path);
}

// open_ranges checks what it opens as MappedFile::open does.
TEST(ByteSource, OpenRangesWantsARegularFile) {
  const fs::path missing = temp_path("missing.bin");
  expect_error([&] { (void)ByteSource::open_ranges(missing); }, ErrorCode::kNotFound,
               {missing.string()});
  const fs::path folder = temp_path("folder");
  fs::create_directories(folder);
  expect_error([&] { (void)ByteSource::open_ranges(folder); }, ErrorCode::kIo,
               {folder.string(), "not a regular file"});
  fs::remove(folder);
  expect_error([] { (void)ByteSource::of_file(nullptr); }, ErrorCode::kInvalidArgument,
               {"no file"});
}

}  // namespace
}  // namespace onnxzip
