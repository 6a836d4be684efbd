// Private to the library: the archive file an in-place edit or a signing opens, locks and
// writes -- the one descriptor the edit reads and writes, never the path again.
//
// Who holds the lock (flock, advisory, on the open file): an editor LOCK_EX, for the whole edit;
// a reader LOCK_SH, while it reads the archive's tail. An editor that finds the lock held waits
// for it (readers let go within a tail read), up to a bound after which it gives up: a second
// editor is refused, never let in beside the first. Once locked, the editor checks that the path
// still names the file it locked: an archive renamed over the path meanwhile (a compaction, a
// convert, a deploy script) is opened and locked again, so that an edit never lands in a file no
// path names any more.
#ifndef ONNXZIP_SRC_LOCKED_ARCHIVE_H_
#define ONNXZIP_SRC_LOCKED_ARCHIVE_H_

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "onnxzip/internal/mapped_file.h"
#include "posix_file.h"

namespace onnxzip::archive_detail {

class LockedArchive final {
 public:
  // Opens `path` for reading and writing (a symbolic link refused unless `follow_symlinks`),
  // checks it is a regular file, takes LOCK_EX, waiting up to `wait` for other holders, and makes
  // sure the path names the locked file, opening it again when it does not (a few times).
  // Errors naming the path: kNotFound "cannot open for editing: No such file..."; kInvalidArgument
  // for a refused link; kIo "not a regular file", or "cannot edit: locked by another process"
  // once `wait` is over; kChanged when the path names yet another file at each attempt.
  LockedArchive(const std::filesystem::path& path, bool follow_symlinks,
                std::chrono::milliseconds wait);

  int fd() const noexcept { return fd_.get(); }
  // The file's size now (fstat). Error(kIo) naming the path.
  std::uint64_t size() const;
  // The locked file, opened for reading through a copy of its descriptor: mapped, or with
  // FileAccess::kRanges read in ranges (what an edit that needs the tail only takes).
  std::shared_ptr<const MappedFile> map(FileAccess access = FileAccess::kMap) const;
  // Error(kChanged), nothing written, when the path no longer names the locked file: checked
  // again just before the first write, since a writer that does not take the lock may rename
  // over the path at any time.
  void check_path_names_it() const;

 private:
  std::filesystem::path path_;
  std::string source_;
  detail::Fd fd_;
};

// --- Test seam (tests only; nothing in the library sets it) ---

// Called after each open of the archive, before its lock is taken: a test renames another file
// over the path there, as a concurrent process could.
using ArchiveOpenedHook = std::function<void()>;
void set_archive_opened_hook(ArchiveOpenedHook hook);

}  // namespace onnxzip::archive_detail

#endif  // ONNXZIP_SRC_LOCKED_ARCHIVE_H_
