#include "posix_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>
#include <thread>
#include <utility>

#include "onnxzip/error.h"
#include "posix_file_testing.h"

namespace onnxzip::detail {

void Fd::reset() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

const char* file_type_name(mode_t mode) noexcept {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "an unknown kind of file";
}

FileIdentity identity_of(const struct stat& status) noexcept {
  return {status.st_dev, status.st_ino};
}

FileVersion version_of(const struct stat& status) noexcept {
  return {status.st_size, status.st_mtim, status.st_ctim};
}

std::optional<FileVersion> version_of_descriptor(int fd) noexcept {
  struct stat status {};
  if (::fstat(fd, &status) != 0) return std::nullopt;
  return version_of(status);
}

SharedFileLock::SharedFileLock(int fd, const std::string& name, std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  // Polled rather than blocking, so that an edit that never ends cannot hang a reader.
  std::chrono::microseconds pause{100};
  for (;;) {
    // An editor's claim is waited for as its exclusive lock is.
    if (!claimed_for_editing(fd)) {
      if (::flock(fd, LOCK_SH | LOCK_NB) == 0) break;
      const int error = errno;
      if (error == EINTR) continue;
      if (error != EWOULDBLOCK) return;  // No locks here (ENOLCK, EOPNOTSUPP, EINVAL): hold none.
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      throw Error(ErrorCode::kChanged, {.file = name},
                  "it is being edited (another process holds its lock for longer than " +
                      std::to_string(wait.count()) + " ms)");
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds{20'000});
  }
  fd_ = fd;
}

SharedFileLock::~SharedFileLock() {
  if (fd_ >= 0) ::flock(fd_, LOCK_UN);
}

namespace {

// The byte an editor's claim covers: the archive's first, which no reader's lock ever covers.
struct flock claim_range(short type) noexcept {
  struct flock range {};
  range.l_type = type;
  range.l_whence = SEEK_SET;
  range.l_start = 0;
  range.l_len = 1;
  return range;
}

}  // namespace

bool claim_for_editing(int fd) noexcept {
  struct flock range = claim_range(F_WRLCK);
  while (::fcntl(fd, F_OFD_SETLK, &range) != 0) {
    if (errno == EINTR) continue;
    return errno != EAGAIN && errno != EACCES;  // Held by another editor, or no such locks here.
  }
  return true;
}

bool claimed_for_editing(int fd) noexcept {
  struct flock range = claim_range(F_RDLCK);
  if (::fcntl(fd, F_OFD_GETLK, &range) != 0) return false;
  return range.l_type != F_UNLCK;
}

bool path_names_file_of(const std::filesystem::path& path, int fd) noexcept {
  struct stat by_path {};
  struct stat by_descriptor {};
  return ::stat(path.c_str(), &by_path) == 0 && ::fstat(fd, &by_descriptor) == 0 &&
         identity_of(by_path) == identity_of(by_descriptor);
}

namespace {
std::atomic<bool> g_descriptor_paths{true};
}  // namespace

void set_descriptor_paths_for_testing(bool available) noexcept { g_descriptor_paths = available; }

namespace {
// Set by tests only, while no reader runs; the flag spares readers a look at the function.
std::atomic<bool> g_read_hook_set{false};
FileReadHook& read_hook() {
  static FileReadHook* const hook = new FileReadHook;
  return *hook;
}
}  // namespace

void set_file_read_hook_for_testing(FileReadHook hook) {
  read_hook() = std::move(hook);
  g_read_hook_set.store(static_cast<bool>(read_hook()), std::memory_order_release);
}

void run_file_read_hook(std::uint64_t offset, std::uint64_t length) {
  if (g_read_hook_set.load(std::memory_order_acquire)) read_hook()(offset, length);
}

std::string path_of_descriptor(int fd) {
  if (!g_descriptor_paths) return {};
  // Only procfs resolves /proc/self/fd/N to the open file; anything else mounted there would
  // resolve it by name. PROC_SUPER_MAGIC, from <linux/magic.h>.
  constexpr long kProcSuperMagic = 0x9fa0;
  struct statfs proc {};
  if (::statfs("/proc/self/fd", &proc) != 0 || static_cast<long>(proc.f_type) != kProcSuperMagic) {
    return {};
  }
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  if (::access(path.c_str(), F_OK) != 0) return {};
  return path;
}

namespace {

[[noreturn]] void fail_not_regular(const std::filesystem::path& path, mode_t mode) {
  throw Error(ErrorCode::kIo, {.file = path.string()},
              "not a regular file (" + std::string(file_type_name(mode)) + ")");
}

[[noreturn]] void fail_errno(const std::filesystem::path& path, const char* what, int error) {
  if (error == ENOENT) throw Error(ErrorCode::kNotFound, {.file = path.string()}, "no such file");
  throw Error(ErrorCode::kIo, {.file = path.string()},
              what + std::string(": ") + std::strerror(error));
}

}  // namespace

RegularFile open_regular_file(const std::filesystem::path& path) {
  struct stat by_path {};
  if (::stat(path.c_str(), &by_path) != 0) fail_errno(path, "cannot examine", errno);
  if (!S_ISREG(by_path.st_mode)) fail_not_regular(path, by_path.st_mode);
  RegularFile file;
  file.fd = Fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (file.fd.get() < 0) fail_errno(path, "cannot open", errno);
  // The path may have been replaced between stat and open: what counts is the descriptor.
  if (::fstat(file.fd.get(), &file.status) != 0) fail_errno(path, "cannot examine", errno);
  if (!S_ISREG(file.status.st_mode)) fail_not_regular(path, file.status.st_mode);
  return file;
}

}  // namespace onnxzip::detail
