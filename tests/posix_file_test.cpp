// posix_file: whether a path still names the file a descriptor is open on (the one device and
// inode check), and the path of a descriptor itself.
#include "posix_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "posix_file_testing.h"
#include "support/scratch_dir.h"

namespace onnxzip {
namespace {

namespace fs = std::filesystem;
using test_support::ScratchDir;
using test_support::write_file_bytes;

detail::Fd open_read_only(const fs::path& path) {
  return detail::Fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
}

TEST(PosixFile, APathNamesTheFileOfADescriptorUntilItIsReplaced) {
  ScratchDir dir("posix_file");
  const fs::path path = dir / "model";
  write_file_bytes(path, "first");
  const detail::Fd fd = open_read_only(path);
  ASSERT_GE(fd.get(), 0);
  EXPECT_TRUE(detail::path_names_file_of(path, fd.get()));
  fs::create_symlink(path, dir / "link");
  EXPECT_TRUE(detail::path_names_file_of(dir / "link", fd.get()));  // Links are followed.

  write_file_bytes(dir / "second", "first");  // Same bytes, another file.
  EXPECT_FALSE(detail::path_names_file_of(dir / "second", fd.get()));
  fs::rename(dir / "second", path);
  EXPECT_FALSE(detail::path_names_file_of(path, fd.get()));
  fs::remove(path);
  EXPECT_FALSE(detail::path_names_file_of(path, fd.get()));
  EXPECT_FALSE(detail::path_names_file_of(dir / "link", -1));
}

TEST(PosixFile, IdentityIsDeviceAndInode) {
  ScratchDir dir("posix_file");
  write_file_bytes(dir / "a", "x");
  fs::create_hard_link(dir / "a", dir / "b");
  write_file_bytes(dir / "c", "x");
  struct stat a {};
  struct stat b {};
  struct stat c {};
  ASSERT_EQ(::stat((dir / "a").c_str(), &a), 0);
  ASSERT_EQ(::stat((dir / "b").c_str(), &b), 0);
  ASSERT_EQ(::stat((dir / "c").c_str(), &c), 0);
  EXPECT_EQ(detail::identity_of(a), detail::identity_of(b));
  EXPECT_NE(detail::identity_of(a), detail::identity_of(c));
  EXPECT_EQ(detail::identity_of(a).inode, a.st_ino);
  EXPECT_EQ(detail::identity_of(a).device, a.st_dev);
}

TEST(PosixFile, ThePathOfADescriptorOpensThatFileEvenAfterItsNameIsGone) {
  ScratchDir dir("posix_file");
  const fs::path path = dir / "model";
  write_file_bytes(path, "first");
  const detail::Fd fd = open_read_only(path);
  ASSERT_GE(fd.get(), 0);
  fs::remove(path);
  const std::string by_descriptor = detail::path_of_descriptor(fd.get());
  if (by_descriptor.empty()) GTEST_SKIP() << "no procfs at /proc";
  std::ifstream in(by_descriptor, std::ios::binary);
  const std::string contents((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  EXPECT_EQ(contents, "first");
  EXPECT_EQ(detail::path_of_descriptor(-1), "");

  detail::set_descriptor_paths_for_testing(false);
  EXPECT_EQ(detail::path_of_descriptor(fd.get()), "");
  detail::set_descriptor_paths_for_testing(true);
  EXPECT_EQ(detail::path_of_descriptor(fd.get()), by_descriptor);
}

}  // namespace
}  // namespace onnxzip
