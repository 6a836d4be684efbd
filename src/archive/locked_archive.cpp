#include "locked_archive.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

#include "onnxzip/error.h"

namespace onnxzip::archive_detail {
namespace {

// How often the path may name another file than the one just locked before the edit gives up:
// each time, someone renamed a file over it during one open and lock.
constexpr int kMaxOpens = 8;
// The lock is polled, first often (a reader holds it for a tail read), then less.
constexpr std::chrono::milliseconds kFirstPoll{1};
constexpr std::chrono::milliseconds kLongestPoll{20};

ArchiveOpenedHook& opened_hook() {
  static ArchiveOpenedHook hook;
  return hook;
}

detail::Fd open_for_editing(const std::filesystem::path& path, const std::string& source,
                            bool follow_symlinks) {
  detail::Fd fd(
      ::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NONBLOCK | (follow_symlinks ? 0 : O_NOFOLLOW)));
  if (fd.get() < 0) {
    const int error = errno;
    if (error == ELOOP && !follow_symlinks) {
      throw Error(ErrorCode::kInvalidArgument,
                  source +
                      ": is a symbolic link; refusing to edit it (following it, the file "
                      "it leads to is edited: OutputFileOptions::follow_symlinks)");
    }
    throw Error(error == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo,
                source + ": cannot open for editing: " + std::strerror(error));
  }
  struct stat status {};
  if (::fstat(fd.get(), &status) != 0 || !S_ISREG(status.st_mode)) {
    throw Error(ErrorCode::kIo, {.file = source}, "not a regular file");
  }
  return fd;
}

std::string seconds_text(std::chrono::milliseconds wait) {
  const auto count = wait.count();
  if (count % 1000 == 0) return std::to_string(count / 1000) + " s";
  return std::to_string(count) + " ms";
}

// The editor's claim (which keeps new readers out, posix_file.h), then LOCK_EX on `fd`, both
// polled until `wait` is over.
void lock_exclusive(int fd, const std::string& source, std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  std::chrono::milliseconds poll = kFirstPoll;
  for (;;) {
    // Another editor's claim is waited for as its lock is.
    const bool claimed = detail::claim_for_editing(fd);
    if (claimed && ::flock(fd, LOCK_EX | LOCK_NB) == 0) return;
    const int error = claimed ? errno : EWOULDBLOCK;
    if (error == EINTR) continue;
    if (error != EWOULDBLOCK) {
      throw Error(ErrorCode::kIo, {.file = source},
                  std::string("cannot edit: cannot lock: ") + std::strerror(error));
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      throw Error(ErrorCode::kIo, {.file = source},
                  "cannot edit: locked by another process (another edit of it is in progress) "
                  "for the " +
                      seconds_text(wait) + " this edit waits");
    }
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(poll, deadline - now));
    poll = std::min(poll * 2, kLongestPoll);
  }
}

}  // namespace

LockedArchive::LockedArchive(const std::filesystem::path& path, bool follow_symlinks,
                             std::chrono::milliseconds wait)
    : path_(path), source_(path.string()) {
  for (int open = 0; open < kMaxOpens; ++open) {
    fd_ = open_for_editing(path_, source_, follow_symlinks);
    if (opened_hook()) opened_hook()();
    lock_exclusive(fd_.get(), source_, wait);
    // A file renamed over the path while this one was opened or waited for (a compaction
    // publishes its new file so while holding the old file's lock): the edit is for the path.
    if (detail::path_names_file_of(path_, fd_.get())) return;
  }
  throw Error(ErrorCode::kChanged, {.file = source_},
              "cannot edit: another file was renamed over the path at each of " +
                  std::to_string(kMaxOpens) + " attempts to open and lock it");
}

std::uint64_t LockedArchive::size() const {
  struct stat status {};
  if (::fstat(fd_.get(), &status) != 0) {
    throw Error(ErrorCode::kIo, {.file = source_},
                std::string("cannot stat: ") + std::strerror(errno));
  }
  return static_cast<std::uint64_t>(status.st_size);
}

std::shared_ptr<const MappedFile> LockedArchive::map(FileAccess access) const {
  const int copy = ::fcntl(fd_.get(), F_DUPFD_CLOEXEC, 0);
  if (copy < 0) {
    throw Error(ErrorCode::kIo, {.file = source_},
                std::string("cannot duplicate its descriptor: ") + std::strerror(errno));
  }
  return MappedFile::adopt(copy, source_, access);
}

void LockedArchive::check_path_names_it() const {
  if (!detail::path_names_file_of(path_, fd_.get())) {
    throw Error(ErrorCode::kChanged, {.file = source_},
                "cannot edit: the path names another file now (one was renamed over it during "
                "the edit); nothing was written: edit the file at the path again");
  }
}

void set_archive_opened_hook(ArchiveOpenedHook hook) { opened_hook() = std::move(hook); }

}  // namespace onnxzip::archive_detail
