// Internal: POSIX file descriptors, and opening an input file without ever blocking on it.
#ifndef ONNXZIP_POSIX_FILE_H_
#define ONNXZIP_POSIX_FILE_H_

#include <sys/stat.h>

#include <chrono>
#include <compare>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>

namespace onnxzip::detail {

// A file descriptor closed when it goes away; -1 when none.
class Fd final {
 public:
  Fd() noexcept = default;
  explicit Fd(int fd) noexcept : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }

  int get() const noexcept { return fd_; }
  int release() noexcept { return std::exchange(fd_, -1); }
  void reset() noexcept;

 private:
  int fd_ = -1;
};

// "a FIFO", "a socket", "a character device", "a block device", "a folder", "a symbolic link",
// "a regular file", or "an unknown kind of file".
const char* file_type_name(mode_t mode) noexcept;

// An open input file and what fstat said about that very descriptor.
struct RegularFile {
  Fd fd;
  struct stat status {};
};

// What makes two opens the same file: its device and inode.
struct FileIdentity {
  dev_t device = 0;
  ino_t inode = 0;

  friend auto operator<=>(const FileIdentity&, const FileIdentity&) = default;
};
FileIdentity identity_of(const struct stat& status) noexcept;

// An editor's claim on the file open on `fd` (opened for writing): an open-file-description lock
// (F_OFD_SETLK) on its first byte, which is independent of flock and is released when the last
// descriptor of that open file closes. Returns false when another editor holds the claim; true
// when this one now holds it, or when the file system has no such locks (then readers see none
// either, and the editor waits for LOCK_EX as before).
bool claim_for_editing(int fd) noexcept;
// Whether another open file holds an editor's claim on the file open on `fd`
// (claim_for_editing); false where the file system has no such locks.
bool claimed_for_editing(int fd) noexcept;

// True when `path` (symbolic links followed) names the very file open on `fd` now: the one
// place the library checks that a path it opens or resolves a second time is still the file it
// opened and checked first. False when either cannot be examined.
bool path_names_file_of(const std::filesystem::path& path, int fd) noexcept;

// A path that opens the file open on `fd` itself, whatever its name now or whether it has one
// ("/proc/self/fd/N": the kernel resolves it to the open file, not by name), or "" when the
// system offers none (no procfs at /proc). For libraries that open files only by path (Boost's
// mapping), so that what they open is the descriptor that was checked.
std::string path_of_descriptor(int fd);

// What changes when a file is written: its size, and its modification and change times (with
// their nanoseconds). Two equal versions of one descriptor, taken before and after a read, mean
// that no write is known to have happened in between (a file system whose clock is coarse may
// miss a write in the same tick: a reader also takes SharedFileLock and checks CRC-32s).
struct FileVersion {
  off_t size = 0;
  timespec modified{};
  timespec changed{};

  friend bool operator==(const FileVersion& a, const FileVersion& b) noexcept {
    return a.size == b.size && a.modified.tv_sec == b.modified.tv_sec &&
           a.modified.tv_nsec == b.modified.tv_nsec && a.changed.tv_sec == b.changed.tv_sec &&
           a.changed.tv_nsec == b.changed.tv_nsec;
  }
};
FileVersion version_of(const struct stat& status) noexcept;
// The version of the file open on `fd` now; nullopt when fstat fails.
std::optional<FileVersion> version_of_descriptor(int fd) noexcept;

// A shared lock (flock LOCK_SH) on the file open on `fd`, held while it lives. An in-place edit
// holds the exclusive lock from before its first write to after its last (spec §9.6), so a reader
// that reads the tail under this lock reads it whole, old or new, never half of an edit. Waits up
// to `wait` for an edit to end, then Error(kChanged) naming `name` ("it is being edited");
// where the file system has no locks (ENOLCK, EOPNOTSUPP...), holds none: the reader's check of
// FileVersion and CRC-32s is then what protects it. The lock belongs to the open file
// description: never take it on a duplicate of a descriptor whose exclusive lock an editor holds
// (flock would convert that lock).
//
// flock has no writer preference: readers whose shared locks overlap without a gap would keep an
// editor out for ever. So an editor first claims the file (claim_for_editing), and a reader that
// finds the claim waits as it waits for the exclusive lock; the readers already in finish their
// tail reads, and the editor's LOCK_EX then comes within one tail read.
class SharedFileLock final {
 public:
  static constexpr std::chrono::milliseconds kDefaultWait{10'000};
  SharedFileLock(int fd, const std::string& name, std::chrono::milliseconds wait = kDefaultWait);
  ~SharedFileLock();
  SharedFileLock(const SharedFileLock&) = delete;
  SharedFileLock& operator=(const SharedFileLock&) = delete;

  // Whether a lock is held (false where the file system has none).
  bool held() const noexcept { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// Opens `path` read-only with O_NONBLOCK (opening a FIFO with no writer, or a device, must not
// hang) and checks through fstat that the descriptor is a regular file; its type is also
// checked by path first, so that a device is not even opened. Errors name the path:
// kNotFound "no such file"; kIo "not a regular file (a FIFO)", "cannot open: ...".
RegularFile open_regular_file(const std::filesystem::path& path);

}  // namespace onnxzip::detail

#endif  // ONNXZIP_POSIX_FILE_H_
