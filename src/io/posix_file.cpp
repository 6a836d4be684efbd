#include "posix_file.h"

#include <fcntl.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

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
