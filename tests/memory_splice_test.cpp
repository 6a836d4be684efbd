#include "memory_splice.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace onnxzip::detail {
namespace {

namespace fs = std::filesystem;

class MemorySpliceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = fs::temp_directory_path() /
            ("onnxzip_memory_splice_" + std::to_string(::getpid()) + ".bin");
  }
  void TearDown() override { fs::remove(path_); }

  int open_for_writing() const {
    return ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  }
  std::vector<std::uint8_t> file_bytes() const {
    std::ifstream in(path_, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

  fs::path path_;
};

TEST_F(MemorySpliceTest, WritesEveryByteAtTheOffset) {
  // Sizes around a page and past the pipe's capacity, from an address that is not page aligned.
  for (const std::size_t size : {std::size_t{1}, std::size_t{63}, std::size_t{4096},
                                 std::size_t{4097}, (std::size_t{3} << 20) + 5}) {
    std::vector<std::uint8_t> memory(size + 3);
    for (std::size_t i = 0; i < memory.size(); ++i) memory[i] = static_cast<std::uint8_t>(i * 7);
    const ByteSpan bytes(memory.data() + 3, size);
    const int fd = open_for_writing();
    ASSERT_GE(fd, 0);
    const std::uint64_t offset = 100;
    EXPECT_EQ(splice_from_memory(fd, bytes, offset), size) << size;
    ::close(fd);
    const std::vector<std::uint8_t> file = file_bytes();
    ASSERT_EQ(file.size(), offset + size) << size;
    EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), file.begin() + offset)) << size;
  }
}

TEST_F(MemorySpliceTest, NothingIsEmpty) {
  const int fd = open_for_writing();
  ASSERT_GE(fd, 0);
  EXPECT_EQ(splice_from_memory(fd, ByteSpan(), 0), 0u);
  ::close(fd);
  EXPECT_TRUE(file_bytes().empty());
}

TEST_F(MemorySpliceTest, LeavesToTheCallerWhatItCannotLend) {
  // Memory that may not be read: the kernel refuses to lend it, nothing is written, no crash.
  void* const unreadable = ::mmap(nullptr, 8192, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(unreadable, MAP_FAILED);
  const int fd = open_for_writing();
  ASSERT_GE(fd, 0);
  EXPECT_EQ(splice_from_memory(fd, ByteSpan(static_cast<const std::uint8_t*>(unreadable), 8192), 0),
            0u);
  ::close(fd);
  ::munmap(unreadable, 8192);
  EXPECT_TRUE(file_bytes().empty());
}

TEST_F(MemorySpliceTest, LeavesAFileItCannotWriteToTheCaller) {
  { std::ofstream create(path_); }
  const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  const std::vector<std::uint8_t> memory(10000, 1);
  EXPECT_EQ(splice_from_memory(fd, memory, 0), 0u);
  ::close(fd);
  EXPECT_TRUE(file_bytes().empty());
}

}  // namespace
}  // namespace onnxzip::detail
