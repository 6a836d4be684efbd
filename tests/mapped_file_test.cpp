// MappedFile: mapped or read bytes of a regular file and of nothing else, the descriptor that was
// checked, adoption of descriptors, and the registry of live mappings (describe_address).
#include "onnxzip/internal/mapped_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "file_extent.h"
#include "onnxzip/error.h"
#include "posix_file_testing.h"
#include "support/scratch_dir.h"
#include "support/special_files.h"

namespace onnxzip {
namespace {

namespace fs = std::filesystem;
using test_support::make_socket;
using test_support::ScratchDir;
using test_support::write_file_bytes;

// Calls that could block forever on a FIFO run under an alarm: a hang kills the test binary
// (SIGALRM) instead of stalling the suite.
class HangGuard final {
 public:
  HangGuard() { ::alarm(20); }
  ~HangGuard() { ::alarm(0); }
  HangGuard(const HangGuard&) = delete;
  HangGuard& operator=(const HangGuard&) = delete;
};

std::string pattern(std::size_t size) {
  std::string bytes(size, '\0');
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>(i * 7 + 3);
  return bytes;
}

std::string as_string(ByteSpan bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

void expect_error(const std::function<void()>& call, ErrorCode code, const std::string& message) {
  try {
    call();
    ADD_FAILURE() << "no error; expected " << message;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

class MappedFileTest : public ::testing::TestWithParam<FileAccess> {};

INSTANTIATE_TEST_SUITE_P(Access, MappedFileTest,
                         ::testing::Values(FileAccess::kMap, FileAccess::kRead,
                                           FileAccess::kMapPrivate),
                         [](const auto& param_info) {
                           switch (param_info.param) {
                             case FileAccess::kMap:
                               return "Map";
                             case FileAccess::kRead:
                               return "Read";
                             case FileAccess::kMapPrivate:
                               return "MapPrivate";
                             case FileAccess::kRanges:  // No bytes to give: byte_source_test.
                               return "Ranges";
                           }
                           return "Unknown";
                         });

TEST_P(MappedFileTest, GivesTheBytesOfRegularFilesOfEverySize) {
  ScratchDir dir("mapped_file");
  for (const std::size_t size : {0, 1, 63, 64, 65, 4096, 4097, 3 << 20}) {
    const fs::path path = dir / ("f" + std::to_string(size));
    write_file_bytes(path, pattern(size));
    const auto file = MappedFile::open(path, GetParam());
    EXPECT_EQ(as_string(file->bytes()), pattern(size)) << size;
    EXPECT_EQ(file->path(), path);
    EXPECT_EQ(file->access(), GetParam());
    if (size != 0) {
      // Page-aligned either way, so that 64-byte aligned entries are aligned in memory.
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(file->bytes().data()) % 4096, 0u);
    }
  }
}

TEST_P(MappedFileTest, KeepsTheDescriptorOfTheFileItChecked) {
  ScratchDir dir("mapped_file");
  const fs::path path = dir / "model";
  write_file_bytes(path, "first");
  const auto file = MappedFile::open(path, GetParam());
  struct stat by_path {};
  ASSERT_EQ(::stat(path.c_str(), &by_path), 0);
  // Another file now takes the name; the MappedFile still is, and reads, the first one.
  write_file_bytes(dir / "second", "SECOND!");
  fs::rename(dir / "second", path);
  struct stat by_fd {};
  ASSERT_EQ(::fstat(file->descriptor(), &by_fd), 0);
  EXPECT_EQ(by_fd.st_ino, by_path.st_ino);
  EXPECT_EQ(by_fd.st_dev, by_path.st_dev);
  char head[5] = {};
  ASSERT_EQ(::pread(file->descriptor(), head, sizeof(head), 0), 5);
  EXPECT_EQ(std::string(head, 5), "first");
  EXPECT_EQ(as_string(file->bytes()), "first");
}

// The race of a file replaced between its open (and check) and its mapping: what is mapped is
// the descriptor, never a second open of the path.
TEST_P(MappedFileTest, MapsTheDescriptorItIsGivenNotWhatItsPathNamesNow) {
  ScratchDir dir("mapped_file");
  const fs::path path = dir / "model";
  write_file_bytes(path, "first");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  write_file_bytes(dir / "second", "SECOND!");
  fs::rename(dir / "second", path);
  const auto file = MappedFile::adopt(fd, path, GetParam());
  EXPECT_EQ(as_string(file->bytes()), "first");
  EXPECT_EQ(file->access(), GetParam());
  EXPECT_EQ(file->path(), path);
}

// Makes path_of_descriptor find nothing, as on a system without procfs, for one test.
class WithoutProcfs final {
 public:
  WithoutProcfs() { detail::set_descriptor_paths_for_testing(false); }
  ~WithoutProcfs() { detail::set_descriptor_paths_for_testing(true); }
  WithoutProcfs(const WithoutProcfs&) = delete;
  WithoutProcfs& operator=(const WithoutProcfs&) = delete;
};

// The descriptor itself is mapped, so a system without procfs maps all the same.
TEST(MappedFileWithoutProcfs, MapsTheDescriptorItChecked) {
  const WithoutProcfs no_procfs;
  ScratchDir dir("mapped_file");
  const fs::path path = dir / "model";
  write_file_bytes(path, "first");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  write_file_bytes(dir / "second", "SECOND!");
  fs::rename(dir / "second", path);
  const auto file = MappedFile::adopt(fd, path);
  EXPECT_EQ(as_string(file->bytes()), "first");
  EXPECT_EQ(file->access(), FileAccess::kMap);
  char name[64];
  EXPECT_TRUE(MappedFile::describe_address(file->bytes().data(), name, sizeof(name)));
}

// The descriptors this process has open now (/proc/self/fd, less the one listing it).
std::size_t open_descriptors() {
  std::size_t count = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator("/proc/self/fd")) ++count;
  return count - 1;
}

// Issue 32 defect 7: a mapping used to hold two descriptors (ours and Boost's re-open through
// /proc/self/fd), halving the archives a process can hold open under `ulimit -n`.
TEST_P(MappedFileTest, HoldsOneDescriptorPerOpenFile) {
  ScratchDir dir("mapped_file");
  write_file_bytes(dir / "model", std::string(10000, 'x'));
  const std::size_t before = open_descriptors();
  std::vector<std::shared_ptr<const MappedFile>> files;
  for (int i = 0; i < 8; ++i) files.push_back(MappedFile::open(dir / "model", GetParam()));
  EXPECT_EQ(open_descriptors(), before + 8);
  files.clear();
  EXPECT_EQ(open_descriptors(), before);
}

// Whether the file was written since it was opened.
TEST_P(MappedFileTest, ChangedSaysWhetherTheFileWasWrittenSinceItWasOpened) {
  ScratchDir dir("mapped_file");
  write_file_bytes(dir / "model", std::string(10000, 'x'));
  const auto file = MappedFile::open(dir / "model", GetParam());
  EXPECT_FALSE(file->changed());
  {
    std::ofstream out(dir / "model", std::ios::binary | std::ios::app);
    out << "more";
  }
  EXPECT_TRUE(file->changed());
}

TEST_P(MappedFileTest, RefusesWhatIsNotARegularFileAtOnce) {
  ScratchDir dir("mapped_file");
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  make_socket(dir / "sock");
  fs::create_directory(dir / "folder");
  struct Case {
    std::string name;
    std::string kind;
  };
  std::vector<Case> cases = {{"fifo", "a FIFO"}, {"sock", "a socket"}, {"folder", "a folder"}};
  // A device node of our own (the null device's numbers) needs root.
  if (test_support::make_null_device(dir / "device")) {
    cases.push_back({"device", "a character device"});
  }
  const HangGuard guard;
  for (const Case& c : cases) {
    const fs::path path = dir / c.name;
    expect_error([&] { MappedFile::open(path, GetParam()); }, ErrorCode::kIo,
                 path.string() + ": not a regular file (" + c.kind + ")");
  }
  expect_error([&] { MappedFile::open(dir / "missing", GetParam()); }, ErrorCode::kNotFound,
               (dir / "missing").string() + ": no such file");
}

TEST_P(MappedFileTest, AdoptsADescriptorOfAnUnlinkedFile) {
  ScratchDir dir("mapped_file");
  const fs::path path = dir / "temporary";
  write_file_bytes(path, pattern(10000));
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  fs::remove(path);
  const auto file = MappedFile::adopt(fd, "scratch data", GetParam());
  EXPECT_EQ(as_string(file->bytes()), pattern(10000));
  EXPECT_EQ(file->descriptor(), fd);
  EXPECT_EQ(file->path(), fs::path("scratch data"));
}

TEST_P(MappedFileTest, AdoptRefusesAndClosesADescriptorOfAFifo) {
  ScratchDir dir("mapped_file");
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  const int fd = ::open((dir / "fifo").c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  expect_error([&] { MappedFile::adopt(fd, "the fifo", GetParam()); }, ErrorCode::kIo,
               "the fifo: not a regular file (a FIFO)");
  EXPECT_EQ(::fcntl(fd, F_GETFD), -1);  // Taken over, so closed on failure too.
  EXPECT_EQ(errno, EBADF);
  expect_error([&] { MappedFile::adopt(-1, "nothing", GetParam()); }, ErrorCode::kInvalidArgument,
               "nothing: adopt: no file descriptor");
}

TEST(MappedFileRead, OwnsItsBytesSoTheFileMayShrinkAfterwards) {
  ScratchDir dir("mapped_file");
  const fs::path path = dir / "shared";
  write_file_bytes(path, pattern(1 << 20));
  const auto file = MappedFile::open(path, FileAccess::kRead);
  fs::resize_file(path, 0);
  // Mapped, this would raise SIGBUS.
  EXPECT_EQ(as_string(file->bytes()), pattern(1 << 20));
}

TEST(MappedFileRead, AFileShorterThanItsSizeSaysIsAnError) {
  // sysfs files claim a page (st_size 4096) and hold a line: for a reader trusting fstat, the
  // same as a file that shrank after fstat.
  const fs::path path = "/sys/kernel/mm/transparent_hugepage/enabled";
  struct stat status {};
  if (::stat(path.c_str(), &status) != 0 || !S_ISREG(status.st_mode) || status.st_size != 4096) {
    GTEST_SKIP() << "no sysfs file of the expected kind here";
  }
  expect_error([&] { MappedFile::open(path, FileAccess::kRead); }, ErrorCode::kChanged,
               path.string() + ": the file changed while it was being read: it shrank (");
}

TEST(MappedFileRegistry, NamesTheFileOfAnAddressInsideAMapping) {
  ScratchDir dir("mapped_file");
  const fs::path path = dir / "weights.bin";
  write_file_bytes(path, pattern(10000));
  auto file = MappedFile::open(path);
  const ByteSpan bytes = file->bytes();
  char name[4096];
  for (const std::size_t at : {std::size_t{0}, std::size_t{5000}, std::size_t{9999}}) {
    ASSERT_TRUE(MappedFile::describe_address(bytes.data() + at, name, sizeof(name))) << at;
    EXPECT_EQ(std::string(name), path.string());
  }
  EXPECT_FALSE(MappedFile::describe_address(bytes.data() + 10000, name, sizeof(name)));
  EXPECT_STREQ(name, "");
  // Cut to the capacity, always terminated.
  char short_name[5];
  ASSERT_TRUE(MappedFile::describe_address(bytes.data(), short_name, sizeof(short_name)));
  EXPECT_EQ(std::string(short_name), path.string().substr(0, 4));
  const void* const inside = bytes.data() + 1;
  file.reset();
  EXPECT_FALSE(MappedFile::describe_address(inside, name, sizeof(name)));
}

TEST(MappedFileRegistry, KnowsNothingOfReadFilesOrEmptyFiles) {
  ScratchDir dir("mapped_file");
  write_file_bytes(dir / "read", pattern(100));
  write_file_bytes(dir / "empty", "");
  const auto read = MappedFile::open(dir / "read", FileAccess::kRead);
  char name[256];
  EXPECT_FALSE(MappedFile::describe_address(read->bytes().data(), name, sizeof(name)));
  const auto empty = MappedFile::open(dir / "empty");
  EXPECT_FALSE(MappedFile::describe_address(empty->bytes().data(), name, sizeof(name)));
  EXPECT_FALSE(MappedFile::describe_address(name, nullptr, 0));
}

TEST(MappedFileRegistry, DescribesManyLiveMappingsAndReusesTheirSlots) {
  ScratchDir dir("mapped_file");
  // Several blocks of slots (they grow from 4 to 256 a block), and a second round after all were
  // released.
  for (int round = 0; round < 2; ++round) {
    std::vector<std::shared_ptr<const MappedFile>> files;
    for (int i = 0; i < 300; ++i) {
      const fs::path path = dir / ("f" + std::to_string(i));
      if (round == 0) write_file_bytes(path, pattern(64 + i));
      files.push_back(MappedFile::open(path));
    }
    char name[4096];
    for (int i = 0; i < 300; ++i) {
      const ByteSpan bytes = files[i]->bytes();
      ASSERT_TRUE(MappedFile::describe_address(bytes.data() + bytes.size() - 1, name, sizeof(name)))
          << i;
      EXPECT_EQ(std::string(name), (dir / ("f" + std::to_string(i))).string());
    }
  }
}

TEST(MappedFileRegistry, TellsTheFileAndOffsetOfASpanInsideOneMapping) {
  ScratchDir dir("mapped_file");
  const fs::path path = dir / "weights.bin";
  write_file_bytes(path, pattern(10000));
  auto file = MappedFile::open(path);
  const ByteSpan bytes = file->bytes();
  for (const auto& [at, size] : {std::pair<std::size_t, std::size_t>{0, 10000},
                                 {0, 1},
                                 {4096, 1},
                                 {5000, 5000},
                                 {9999, 1}}) {
    const std::optional<detail::FileExtent> extent =
        detail::file_extent_of(bytes.subspan(at, size));
    ASSERT_TRUE(extent.has_value()) << at << "+" << size;
    EXPECT_EQ(extent->descriptor, file->descriptor());
    EXPECT_EQ(extent->offset, at);
  }
  // Past the mapping's end, empty, the process's own memory, a file read into memory: none.
  EXPECT_FALSE(detail::file_extent_of(ByteSpan(bytes.data() + 5000, 5001)).has_value());
  EXPECT_FALSE(detail::file_extent_of(bytes.first(0)).has_value());
  const std::vector<std::uint8_t> heap(100, 1);
  EXPECT_FALSE(detail::file_extent_of(heap).has_value());
  const auto read = MappedFile::open(path, FileAccess::kRead);
  EXPECT_FALSE(detail::file_extent_of(read->bytes()).has_value());
  const ByteSpan gone = bytes.first(100);
  file.reset();
  EXPECT_FALSE(detail::file_extent_of(gone).has_value());
}

TEST(MappedFilePrivate, AWriteCopiesThePageAndNeverReachesTheFile) {
  ScratchDir dir("mapped_file");
  const fs::path path = dir / "weights.bin";
  const std::string original = pattern(3 * 4096);
  write_file_bytes(path, original);
  const auto file = MappedFile::open(path, FileAccess::kMapPrivate);
  EXPECT_EQ(file->access(), FileAccess::kMapPrivate);
  ASSERT_EQ(as_string(file->bytes()), original);
  // What a binding's user does to a view (torch's mul_ on a tensor over the mapping): with
  // kMap this write is a SIGSEGV.
  auto* const writable = const_cast<std::uint8_t*>(file->bytes().data());
  writable[4096] = static_cast<std::uint8_t>(~writable[4096]);
  EXPECT_NE(as_string(file->bytes()), original);
  const auto again = MappedFile::open(path, FileAccess::kRead);
  EXPECT_EQ(as_string(again->bytes()), original);
  // The pages may differ from the file: no writer may copy them from it by extent.
  EXPECT_FALSE(detail::file_extent_of(file->bytes()).has_value());
  char name[256];
  EXPECT_TRUE(MappedFile::describe_address(file->bytes().data() + 5, name, sizeof name));
}

}  // namespace
}  // namespace onnxzip
