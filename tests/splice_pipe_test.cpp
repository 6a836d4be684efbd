// SplicePipeShelf: pipes of a capacity splice can fill in large steps, one kept idle while an
// output file is open and lent again, none once the last is closed, none shared with a child
// after fork().
#include "splice_pipe.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <utility>

#include "onnxzip/internal/mapped_file.h"
#include "output_file.h"
#include "support/scratch_dir.h"

namespace onnxzip::detail {
namespace {

namespace fs = std::filesystem;

// Registered as a user for its lifetime, as an open output file is.
class ShelfUser final {
 public:
  ShelfUser() { SplicePipeShelf::instance().add_user(); }
  ~ShelfUser() { SplicePipeShelf::instance().remove_user(); }
  ShelfUser(const ShelfUser&) = delete;
  ShelfUser& operator=(const ShelfUser&) = delete;
};

TEST(SplicePipeShelf, LendsOnePipeAgainWhileUsedAndKeepsNoneAfterTheLastUser) {
  SplicePipeShelf& shelf = SplicePipeShelf::instance();
  ASSERT_FALSE(shelf.holds_a_pipe());
  {
    const ShelfUser user;
    std::unique_ptr<SplicePipe> pipe = shelf.take();
    ASSERT_NE(pipe, nullptr);
    EXPECT_GE(pipe->capacity, kSplicePipeCapacities[std::size(kSplicePipeCapacities) - 1]);
    EXPECT_EQ(pipe->maker, ::getpid());
    const SplicePipe* lent = pipe.get();
    shelf.give(std::move(pipe));
    EXPECT_TRUE(shelf.holds_a_pipe());
    std::unique_ptr<SplicePipe> again = shelf.take();
    EXPECT_EQ(again.get(), lent) << "the idle pipe is lent again, not a new one made";
    std::unique_ptr<SplicePipe> second = shelf.take();  // Two at once: a new one.
    ASSERT_NE(second, nullptr);
    EXPECT_NE(second->read_end.get(), again->read_end.get());
    shelf.give(std::move(again));
    shelf.give(std::move(second));  // The shelf holds one already: this one is closed.
    EXPECT_TRUE(shelf.holds_a_pipe());
  }
  EXPECT_FALSE(shelf.holds_a_pipe()) << "no descriptor may outlive the last user";
}

TEST(SplicePipeShelf, AnOutputFileCopyingFromAMappedFileLeavesThePipeForTheNext) {
  test_support::ScratchDir dir("splice_pipe");
  const fs::path source = dir / "source.bin";
  test_support::write_file_bytes(source, std::string(1 << 20, 's'));
  const auto mapping = MappedFile::open(source);
  SplicePipeShelf& shelf = SplicePipeShelf::instance();
  {
    AtomicOutputFile out(dir / "copy.bin");
    out.write(mapping->bytes().subspan(1));
    EXPECT_TRUE(shelf.holds_a_pipe());
    out.commit();
  }
  EXPECT_FALSE(shelf.holds_a_pipe());
  EXPECT_EQ(fs::file_size(dir / "copy.bin"), (1u << 20) - 1);
}

TEST(SplicePipeShelf, AChildAfterForkMakesItsOwnPipe) {
  SplicePipeShelf& shelf = SplicePipeShelf::instance();
  const ShelfUser user;
  std::unique_ptr<SplicePipe> pipe = shelf.take();
  ASSERT_NE(pipe, nullptr);
  shelf.give(std::move(pipe));
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const std::unique_ptr<SplicePipe> own = shelf.take();
    ::_exit(own != nullptr && own->maker == ::getpid() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  // The parent's idle pipe is still its own.
  pipe = shelf.take();
  ASSERT_NE(pipe, nullptr);
  EXPECT_EQ(pipe->maker, ::getpid());
  shelf.give(std::move(pipe));
}

}  // namespace
}  // namespace onnxzip::detail
