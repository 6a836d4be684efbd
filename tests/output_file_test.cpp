#include "onnxzip/output_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "onnxzip/error.h"
#include "onnxzip/mapped_file.h"

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
    OutputFileOptions options;
    options.buffer_size = 8;  // Exercise both the buffered and the direct path.
    AtomicOutputFile out(dest, options);
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

TEST_F(OutputFileTest, AbandonedWriteLeavesDestinationUntouched) {
  const fs::path dest = dir_ / "keep.bin";
  std::ofstream(dest) << "original";
  {
    AtomicOutputFile out(dest);
    out.write(as_bytes("new contents"));
    EXPECT_TRUE(fs::exists(out.temporary_path()));
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

}  // namespace
}  // namespace onnxzip
