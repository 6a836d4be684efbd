#include "memory_splice.h"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>

namespace onnxzip::detail {

namespace {

// The pipe's capacity: the default maximum an unprivileged process may ask for
// (/proc/sys/fs/pipe-max-size); one vmsplice and one splice move this much.
constexpr int kPipeBytes = 1 << 20;

// Both ends of a pipe, closed on every way out: bytes lent to a pipe that could not be spliced
// into the file go with it.
class Pipe final {
 public:
  Pipe() noexcept {
    if (::pipe2(ends_, O_CLOEXEC) != 0) ends_[0] = ends_[1] = -1;
  }
  ~Pipe() {
    if (ends_[0] >= 0) ::close(ends_[0]);
    if (ends_[1] >= 0) ::close(ends_[1]);
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;

  bool open() const noexcept { return ends_[0] >= 0; }
  int read_end() const noexcept { return ends_[0]; }
  int write_end() const noexcept { return ends_[1]; }

 private:
  int ends_[2];
};

}  // namespace

std::size_t splice_from_memory(const int fd, const ByteSpan bytes,
                               const std::uint64_t offset) noexcept {
  if (bytes.empty()) return 0;
  const Pipe pipe;
  if (!pipe.open()) return 0;
  ::fcntl(pipe.write_end(), F_SETPIPE_SZ, kPipeBytes);  // Refused: the default 64 KiB serves.
  auto file_offset = static_cast<loff_t>(offset);
  std::size_t written = 0;
  while (written < bytes.size()) {
    iovec lent{const_cast<std::uint8_t*>(bytes.data() + written), bytes.size() - written};
    const ssize_t in_pipe = ::vmsplice(pipe.write_end(), &lent, 1, 0);
    if (in_pipe < 0 && errno == EINTR) continue;
    if (in_pipe <= 0) return written;
    auto left = static_cast<std::size_t>(in_pipe);
    while (left > 0) {
      const ssize_t n = ::splice(pipe.read_end(), nullptr, fd, &file_offset, left, SPLICE_F_MOVE);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return written;
      left -= static_cast<std::size_t>(n);
      written += static_cast<std::size_t>(n);
    }
  }
  return written;
}

}  // namespace onnxzip::detail
