#include "posix_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace onnxzip::detail {
namespace {

// Whether `fd` is an open descriptor of this process.
bool is_open(int fd) { return ::fcntl(fd, F_GETFD) != -1 || errno != EBADF; }

int open_null() {
  const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  EXPECT_GE(fd, 0);
  return fd;
}

TEST(Fd, ClosesItsDescriptorWhenItGoesAway) {
  int raw = -1;
  {
    const Fd fd(open_null());
    raw = fd.get();
    EXPECT_TRUE(is_open(raw));
  }
  EXPECT_FALSE(is_open(raw));
  EXPECT_EQ(Fd().get(), -1);
}

TEST(Fd, MovingHandsOverTheDescriptorAndClosesTheOneReplaced) {
  Fd first(open_null());
  const int raw = first.get();
  Fd second(std::move(first));
  EXPECT_EQ(first.get(), -1);  // NOLINT(bugprone-use-after-move): the promise under test.
  EXPECT_EQ(second.get(), raw);

  Fd third(open_null());
  const int replaced = third.get();
  third = std::move(second);
  EXPECT_EQ(third.get(), raw);
  EXPECT_FALSE(is_open(replaced));
  EXPECT_TRUE(is_open(raw));
}

TEST(Fd, ReleaseGivesUpOwnershipAndResetCloses) {
  Fd fd(open_null());
  const int raw = fd.release();
  EXPECT_EQ(fd.get(), -1);
  EXPECT_TRUE(is_open(raw));  // Released: the holder did not close it.
  ::close(raw);

  Fd other(open_null());
  const int closed = other.get();
  other.reset();
  EXPECT_EQ(other.get(), -1);
  EXPECT_FALSE(is_open(closed));
  other.reset();  // Nothing held: nothing happens.
  EXPECT_EQ(other.get(), -1);
}

}  // namespace
}  // namespace onnxzip::detail
