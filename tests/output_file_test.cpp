#include "output_file.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "onnxzip/error.h"
#include "onnxzip/internal/mapped_file.h"
#include "output_file_testing.h"
#include "support/special_files.h"

namespace onnxzip {
namespace {

namespace fs = std::filesystem;

class OutputFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("onnxzip_output_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::size_t files_in_dir() const {
    return static_cast<std::size_t>(
        std::distance(fs::directory_iterator(dir_), fs::directory_iterator()));
  }
  static std::string read_all(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

  fs::path dir_;
};

ByteSpan as_bytes(const std::string& s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

TEST_F(OutputFileTest, CommitPublishesExactlyWhatWasWritten) {
  const fs::path dest = dir_ / "out.bin";
  {
    // A buffer of 8 bytes exercises both the buffered and the direct path.
    AtomicOutputFile out(dest, OutputFileOptions{}, 8);
    out.write(as_bytes("head"));
    out.write(as_bytes("0123456789abcdef"));
    out.write_zeros(3);
    out.write(as_bytes("xy"));
    out.write_at(0, as_bytes("HE"));
    EXPECT_EQ(out.position(), 25u);
    EXPECT_FALSE(fs::exists(dest));
    out.commit();
  }
  EXPECT_EQ(read_all(dest), std::string("HEad0123456789abcdef") + std::string(3, '\0') + "xy");
  EXPECT_EQ(files_in_dir(), 1u) << "no temporary may remain";
}

TEST_F(OutputFileTest, ReservedBytesReadAsZerosUntilWriteAtFillsThem) {
  const fs::path dest = dir_ / "reserved.bin";
  {
    AtomicOutputFile out(dest);
    out.write(as_bytes("ab"));
    out.reserve(5);
    out.write(as_bytes("cd"));
    out.reserve(3);
    out.write(as_bytes("e"));
    out.write_at(2, as_bytes("HEAD"));
    EXPECT_EQ(out.position(), 13u);
    out.commit();
  }
  EXPECT_EQ(read_all(dest), std::string("abHEAD") + '\0' + "cd" + std::string(3, '\0') + "e");
}

// Kilobytes of the mapping containing `address` that are in the process's page tables
// (/proc/self/smaps "Rss"): 0 when nothing has touched its pages.
std::uint64_t mapped_kib(const void* address) {
  std::ifstream smaps("/proc/self/smaps");
  const auto wanted = reinterpret_cast<std::uintptr_t>(address);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    unsigned long long begin = 0;
    unsigned long long end = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx ", &begin, &end) == 2) {
      inside = wanted >= begin && wanted < end;
    } else if (inside && line.rfind("Rss:", 0) == 0) {
      return std::strtoull(line.c_str() + 4, nullptr, 10);
    }
  }
  ADD_FAILURE() << "no mapping holds the address";
  return 0;
}

// The ways write() copies the bytes of a mapped file, each reached on purpose: from a block
// boundary to a block boundary (shared blocks where the file system shares extents, else
// splice), off one (splice), and with splice refused from the start (the buffer) or only into the
// output (the bytes in the pipe are read out of it; the buffer does the rest).
struct CopyPath {
  const char* name;
  std::size_t start;  // Of the source bytes, in a file written at output offset 0 or 4096.
  detail::SpliceRefusal refusal;
};
const CopyPath kCopyPaths[] = {
    {"block-aligned", 4096, detail::SpliceRefusal::kNone},
    {"splice", 4097, detail::SpliceRefusal::kNone},
    {"buffer", 4097, detail::SpliceRefusal::kAll},
    {"splice, then the buffer", 4097, detail::SpliceRefusal::kIntoOutput},
};

// Sets the refusal for one scope.
class SpliceRefusalScope final {
 public:
  explicit SpliceRefusalScope(detail::SpliceRefusal refusal) {
    detail::set_splice_refusal(refusal);
  }
  ~SpliceRefusalScope() { detail::set_splice_refusal(detail::SpliceRefusal::kNone); }
  SpliceRefusalScope(const SpliceRefusalScope&) = delete;
  SpliceRefusalScope& operator=(const SpliceRefusalScope&) = delete;
};

TEST_F(OutputFileTest, BytesOfAMappedFileAreCopiedFromTheFileNotThroughTheMapping) {
  const fs::path source = dir_ / "source.bin";
  // Over 1 MiB past the copied start, so that a copy takes more than one pipe's worth.
  std::string content((3 << 20) + 5, '\0');
  for (std::size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>(i * 7 + i / 4096);
  std::ofstream(source, std::ios::binary) << content;
  const auto mapping = MappedFile::open(source);
  const ByteSpan bytes = mapping->bytes();
  for (const CopyPath& path : kCopyPaths) {
    SCOPED_TRACE(path.name);
    const SpliceRefusalScope refusal(path.refusal);
    const fs::path dest = dir_ / "copy.bin";
    const std::string head(4096, 'h');
    {
      AtomicOutputFile out(dest);
      out.write(as_bytes(head));                      // The copy starts at offset 4096.
      out.write(bytes.subspan(path.start, 100000));   // Smaller than the buffer.
      out.write(bytes.subspan(path.start + 100000));  // Larger.
      out.write(as_bytes("tail"));
      out.commit();
    }
    EXPECT_TRUE(read_all(dest) == head + content.substr(path.start) + "tail");
    EXPECT_EQ(mapped_kib(bytes.data()), 0u) << "a page of the source mapping was touched";
  }
}

// Whichever way the bytes go, the same error, and nothing left behind.
TEST_F(OutputFileTest, AMappedSourceTruncatedMeanwhileIsAnIoErrorNotACrash) {
  const fs::path source = dir_ / "shrinking.bin";
  std::ofstream(source, std::ios::binary) << std::string(3 << 20, 'w');
  const auto mapping = MappedFile::open(source);
  fs::resize_file(source, 300000);
  const fs::path dest = dir_ / "out.bin";
  for (const CopyPath& path : kCopyPaths) {
    SCOPED_TRACE(path.name);
    const SpliceRefusalScope refusal(path.refusal);
    try {
      AtomicOutputFile out(dest);
      out.write(mapping->bytes().subspan(path.start));
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kIo);
      EXPECT_EQ(e.message(),
                dest.string() + ": the source file ended at offset 300000, before the " +
                    std::to_string((3 << 20) - path.start) + " bytes to copy from offset " +
                    std::to_string(path.start) + " (was it truncated?)");
    }
    EXPECT_FALSE(fs::exists(dest));
  }
}

// Bytes of `path` in extents the file system marks shared with another file (FIEMAP).
std::uint64_t shared_bytes(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  constexpr std::size_t kExtents = 512;
  std::vector<std::uint8_t> storage(sizeof(fiemap) + kExtents * sizeof(fiemap_extent));
  auto* map = reinterpret_cast<fiemap*>(storage.data());
  map->fm_length = FIEMAP_MAX_OFFSET;
  map->fm_flags = FIEMAP_FLAG_SYNC;
  map->fm_extent_count = kExtents;
  std::uint64_t shared = 0;
  if (::ioctl(fd, FS_IOC_FIEMAP, map) == 0) {
    for (std::uint32_t i = 0; i < map->fm_mapped_extents; ++i) {
      if (map->fm_extents[i].fe_flags & FIEMAP_EXTENT_SHARED)
        shared += map->fm_extents[i].fe_length;
    }
  }
  ::close(fd);
  return shared;
}

// On a file system that shares extents (XFS with reflink, btrfs; a folder on one is named by
// ONNXZIP_TEST_REFLINK_DIR, else the test is skipped): block-aligned pieces are shared while every
// piece of the output is, none once one is not; the bytes are the source's either way, and a
// source truncated meanwhile is the copy's error.
TEST_F(OutputFileTest, OnAReflinkFileSystemAlignedPiecesShareBlocksUntilOneCannot) {
  const char* folder = std::getenv("ONNXZIP_TEST_REFLINK_DIR");
  if (folder == nullptr || *folder == '\0') GTEST_SKIP() << "ONNXZIP_TEST_REFLINK_DIR is not set";
  const fs::path dir = fs::path(folder) / ("onnxzip_reflink_test." + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path source = dir / "source.bin";
  std::string content(4 << 20, '\0');
  for (std::size_t i = 0; i < content.size(); ++i)
    content[i] = static_cast<char>(i * 13 + i / 4096);
  std::ofstream(source, std::ios::binary) << content;
  const auto mapping = MappedFile::open(source);
  const ByteSpan bytes = mapping->bytes();
  const auto copy = [&](const fs::path& dest, std::size_t second_start) {
    AtomicOutputFile out(dest);
    out.write(bytes.subspan(0, 1 << 20));             // Aligned at both ends: shared.
    out.write(bytes.subspan(second_start, 1 << 20));  // At output offset 1 MiB.
    out.commit();
  };
  copy(dir / "aligned.bin", 2 << 20);
  EXPECT_TRUE(read_all(dir / "aligned.bin") ==
              content.substr(0, 1 << 20) + content.substr(2 << 20, 1 << 20));
  EXPECT_EQ(shared_bytes(dir / "aligned.bin"), 2u << 20) << "both pieces shared";
  copy(dir / "mixed.bin", (2 << 20) + 64);
  EXPECT_TRUE(read_all(dir / "mixed.bin") ==
              content.substr(0, 1 << 20) + content.substr((2 << 20) + 64, 1 << 20));
  EXPECT_EQ(shared_bytes(dir / "mixed.bin"), 1u << 20) << "the first piece only";
  fs::resize_file(source, 300000);
  try {
    AtomicOutputFile out(dir / "truncated.bin");
    out.write(bytes.subspan(0, 1 << 20));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_EQ(e.message(), (dir / "truncated.bin").string() +
                               ": the source file ended at offset 300000, before the 1048576 "
                               "bytes to copy from offset 0 (was it truncated?)");
  }
  fs::remove_all(dir);
}

TEST_F(OutputFileTest, AbandonedWriteLeavesDestinationUntouched) {
  const fs::path dest = dir_ / "keep.bin";
  std::ofstream(dest) << "original";
  {
    AtomicOutputFile out(dest);
    out.write(as_bytes("new contents"));
    // Unnamed until commit: nothing of it shows in the folder.
    EXPECT_TRUE(out.temporary_path().empty());
    EXPECT_EQ(files_in_dir(), 1u);
  }
  EXPECT_EQ(read_all(dest), "original");
  EXPECT_EQ(files_in_dir(), 1u);
}

TEST_F(OutputFileTest, WritesAfterCommitAndPatchesPastTheEndAreRefused) {
  AtomicOutputFile out(dir_ / "x.bin");
  out.write(as_bytes("abc"));
  try {
    out.write_at(2, as_bytes("zz"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  }
  out.commit();
  try {
    out.write(as_bytes("d"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadState);
  }
}

TEST_F(OutputFileTest, MissingFolderIsAnIoErrorNamingTheFile) {
  try {
    AtomicOutputFile out(dir_ / "no" / "such" / "dir" / "f.bin");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("f.bin"), std::string::npos);
  }
}

TEST_F(OutputFileTest, MappedFileSeesCommittedBytesAndOutlivesItsOwnerHandle) {
  const fs::path dest = dir_ / "m.bin";
  {
    AtomicOutputFile out(dest);
    out.write(as_bytes("mapped!"));
    out.commit();
  }
  auto mapped = MappedFile::open(dest);
  ASSERT_EQ(mapped->bytes().size(), 7u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(mapped->bytes().data()), 7), "mapped!");
  std::ofstream(dir_ / "empty.bin").close();
  EXPECT_TRUE(MappedFile::open(dir_ / "empty.bin")->bytes().empty());
  try {
    MappedFile::open(dir_ / "absent.bin");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(std::string(e.what()).find("absent.bin"), std::string::npos);
  }
}

// --- What may be replaced ---

// Makes a node of each kind that is not a regular file; character devices only as root.
std::map<std::string, fs::path> make_special_files(const fs::path& dir) {
  std::map<std::string, fs::path> made;
  const fs::path fifo = dir / "fifo";
  if (::mkfifo(fifo.c_str(), 0644) == 0) made.emplace("a FIFO", fifo);
  test_support::make_socket(dir / "sock");
  if (fs::exists(fs::symlink_status(dir / "sock"))) made.emplace("a socket", dir / "sock");
  const fs::path device = dir / "null";
  if (test_support::make_null_device(device)) {
    made.emplace("a character device", device);
  }
  fs::create_directory(dir / "folder");
  made.emplace("a folder", dir / "folder");
  return made;
}

mode_t type_of(const fs::path& path) {
  struct stat status {};
  EXPECT_EQ(::lstat(path.c_str(), &status), 0) << path;
  return status.st_mode & S_IFMT;
}

TEST_F(OutputFileTest, OnlyARegularFileOrNothingIsReplaced) {
  const auto special = make_special_files(dir_);
  ASSERT_GE(special.size(), 3u) << "a FIFO, a socket and a folder at least";
  for (const auto& [kind, path] : special) {
    const mode_t before = type_of(path);
    try {
      AtomicOutputFile out(path);
      out.write(as_bytes("x"));
      out.commit();
      FAIL() << kind << " was replaced";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << kind;
      EXPECT_NE(std::string(e.what()).find(path.string() + ": is " + kind), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
    }
    EXPECT_EQ(type_of(path), before) << kind << " must still be there, unchanged";
  }
  EXPECT_EQ(files_in_dir(), special.size()) << "no temporary may remain";
}

TEST_F(OutputFileTest, ANodeThatAppearsBeforeTheRenameIsNotReplacedEither) {
  const fs::path dest = dir_ / "out.bin";
  AtomicOutputFile out(dest);
  out.write(as_bytes("x"));
  ASSERT_EQ(::mkfifo(dest.c_str(), 0644), 0);
  EXPECT_THROW(out.commit(), Error);
  EXPECT_EQ(type_of(dest), static_cast<mode_t>(S_IFIFO));
  EXPECT_EQ(files_in_dir(), 1u);
}

TEST_F(OutputFileTest, ASymbolicLinkIsRefusedUnlessFollowedThenItsTargetIsReplaced) {
  const fs::path target = dir_ / "target.bin";
  const fs::path link = dir_ / "link.bin";
  std::ofstream(target) << "old";
  fs::create_symlink("target.bin", link);
  try {
    AtomicOutputFile out(link);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("is a symbolic link; refusing to replace it"),
              std::string::npos)
        << e.what();
  }
  {
    AtomicOutputFile out(link, {.follow_symlinks = true});
    EXPECT_EQ(out.destination(), fs::canonical(target));
    out.write(as_bytes("new"));
    out.commit();
  }
  EXPECT_TRUE(fs::is_symlink(link)) << "the link stays";
  EXPECT_EQ(read_all(target), "new");

  // A link to nothing, or to something that is not a regular file, is refused either way.
  fs::create_symlink("missing", dir_ / "dangling");
  EXPECT_THROW(AtomicOutputFile(dir_ / "dangling", {.follow_symlinks = true}), Error);
  ASSERT_EQ(::mkfifo((dir_ / "fifo").c_str(), 0644), 0);
  fs::create_symlink("fifo", dir_ / "to_fifo");
  EXPECT_THROW(AtomicOutputFile(dir_ / "to_fifo", {.follow_symlinks = true}), Error);
  EXPECT_EQ(type_of(dir_ / "fifo"), static_cast<mode_t>(S_IFIFO));
}

TEST_F(OutputFileTest, AProcessKilledMidWriteLeavesNothingBehind) {
  std::ofstream(dir_ / "keep.bin") << "original";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    AtomicOutputFile out(dir_ / "keep.bin");
    const std::string block(1 << 20, 'x');
    for (int i = 0; i < 8; ++i) out.write(as_bytes(block));
    ::raise(SIGKILL);  // As kill -9 would, in the middle of the write.
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(files_in_dir(), 1u) << "no temporary may remain after kill -9";
  EXPECT_EQ(read_all(dir_ / "keep.bin"), "original");
}

// --- Sets ---

class OutputSetTest : public OutputFileTest {
 protected:
  void TearDown() override {
    detail::set_rename_hook(nullptr);
    OutputFileTest::TearDown();
  }

  // Writes "<tag>:<name>" into model.onnx and each of `data`, committed together.
  void write_set(const std::string& tag, const std::vector<std::string>& data) {
    std::vector<std::unique_ptr<AtomicOutputFile>> files;
    std::vector<AtomicOutputFile*> others;
    for (const std::string& name : data) {
      files.push_back(std::make_unique<AtomicOutputFile>(dir_ / name));
      files.back()->write(as_bytes(tag + ":" + name));
      others.push_back(files.back().get());
    }
    AtomicOutputFile model(dir_ / "model.onnx");
    model.write(as_bytes(tag + ":model.onnx"));
    commit_together(others, model);
  }

  // "old", "new" or "none" for the model; every data file must then be of the same set, except
  // with no model (anything goes: nothing refers to them).
  std::string set_state(const std::vector<std::string>& data) const {
    if (!fs::exists(dir_ / "model.onnx")) return "none";
    const std::string model = read_all(dir_ / "model.onnx");
    const std::string tag = model.substr(0, model.find(':'));
    for (const std::string& name : data) {
      if (read_all(dir_ / name) != tag + ":" + name) return "mixed (" + tag + " model)";
    }
    return tag;
  }

  // Names in the folder that are not part of a set (temporaries).
  std::size_t hidden_files() const {
    std::size_t n = 0;
    for (const auto& entry : fs::directory_iterator(dir_)) {
      n += entry.path().filename().string().starts_with(".");
    }
    return n;
  }
};

TEST_F(OutputSetTest, ANewSetReplacesTheOldAndLeavesNoTemporary) {
  const std::vector<std::string> data = {"w.bin", "w.bin.1"};
  write_set("old", data);
  EXPECT_EQ(set_state(data), "old");
  write_set("new", data);
  EXPECT_EQ(set_state(data), "new");
  EXPECT_EQ(hidden_files(), 0u);
  EXPECT_EQ(files_in_dir(), 3u);
}

TEST_F(OutputSetTest, EveryInstantBetweenRenamesHoldsTheOldSetTheNewSetOrNoModel) {
  const std::vector<std::string> data = {"w.bin", "w.bin.1"};
  // A crash just before rename k: the folder as it is when the hook is called.
  for (int crash_at = 0;; ++crash_at) {
    write_set("old", data);
    int renames = 0;
    std::string seen;
    detail::set_rename_hook([&](const fs::path&, const fs::path&) {
      if (renames++ == crash_at) seen = set_state(data);
      return true;
    });
    write_set("new", data);
    detail::set_rename_hook(nullptr);
    if (seen.empty()) {
      EXPECT_GE(crash_at, 6) << "2 renames per data file, 2 for the model";
      break;
    }
    EXPECT_TRUE(seen == "old" || seen == "new" || seen == "none")
        << "before rename " << crash_at << ": " << seen;
    EXPECT_EQ(set_state(data), "new");
  }
}

TEST_F(OutputSetTest, AFailedRenameRestoresTheOldSetWhicheverItIs) {
  const std::vector<std::string> data = {"w.bin", "w.bin.1"};
  for (int fail_at = 0;; ++fail_at) {
    write_set("old", data);
    int renames = 0;
    detail::set_rename_hook([&](const fs::path&, const fs::path&) { return renames++ != fail_at; });
    bool failed = false;
    try {
      write_set("new", data);
    } catch (const Error& e) {
      failed = true;
      EXPECT_EQ(e.code(), ErrorCode::kIo);
    }
    detail::set_rename_hook(nullptr);
    if (!failed) {
      EXPECT_GE(fail_at, 6);
      break;
    }
    EXPECT_EQ(set_state(data), "old") << "after failing rename " << fail_at;
    EXPECT_EQ(hidden_files(), 0u) << "after failing rename " << fail_at;
  }
}

TEST_F(OutputSetTest, AFirstSetAppearsWholeOrNotAtAll) {
  const std::vector<std::string> data = {"w.bin"};
  detail::set_rename_hook(
      [](const fs::path&, const fs::path& to) { return to.filename() != "model.onnx"; });
  EXPECT_THROW(write_set("new", data), Error);
  detail::set_rename_hook(nullptr);
  EXPECT_EQ(files_in_dir(), 0u);
}

}  // namespace
}  // namespace onnxzip
