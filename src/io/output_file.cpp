#include "output_file.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>

#include "check.h"
#include "fast_path.h"
#include "file_extent.h"
#include "onnxzip/error.h"
#include "output_file_testing.h"
#include "posix_file.h"
#include "splice_pipe.h"

namespace onnxzip {
namespace {

namespace fs = std::filesystem;

std::string errno_text(int error) { return std::strerror(error); }

// Pieces of a file mapping at least this large are copied from the file (copy_from_file); smaller
// ones go through the buffer, where one page fault maps their pages (the kernel's fault-around).
constexpr std::size_t kFileCopyMinBytes = std::size_t{64} << 10;

constexpr std::uint64_t kBlockBytes = 4096;

detail::SpliceRefusal& splice_refusal() {
  static detail::SpliceRefusal refusal = detail::SpliceRefusal::kNone;
  return refusal;
}

// splice(2), or, under the test hook, EINVAL as from a file system that takes no part in it.
ssize_t splice_bytes(int from, loff_t* from_offset, int to, loff_t* to_offset, std::size_t count,
                     bool into_output) {
  const detail::SpliceRefusal refusal = splice_refusal();
  if (refusal == detail::SpliceRefusal::kAll ||
      (into_output && refusal == detail::SpliceRefusal::kIntoOutput)) {
    errno = EINVAL;
    return -1;
  }
  return ::splice(from, from_offset, to, to_offset, count, 0);
}

// The errors of splice from or into a file system that does not support it (ENOSYS: a kernel
// without it; EAGAIN: one that would not wait for a source opened with O_NONBLOCK, as legacy data
// files are), rather than of the bytes or the files.
bool cannot_splice(int error) {
  return error == EINVAL || error == EOPNOTSUPP || error == ENOSYS || error == EAGAIN;
}

detail::RenameHook& rename_hook() {
  static detail::RenameHook hook;
  return hook;
}

// rename(2), or the errno it failed with (EIO when the test hook refuses it).
int rename_file(const fs::path& from, const fs::path& to) {
  if (const detail::RenameHook& hook = rename_hook(); hook && !hook(from, to)) return EIO;
  return ::rename(from.c_str(), to.c_str()) == 0 ? 0 : errno;
}

void sync_folder(const fs::path& folder) {
  const detail::Fd dir_fd(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir_fd.get() >= 0) ::fsync(dir_fd.get());
}

fs::path folder_of(const fs::path& file) {
  return file.has_parent_path() ? file.parent_path() : fs::path(".");
}

[[noreturn]] void refuse(const fs::path& path, const std::string& why) {
  throw Error(ErrorCode::kInvalidArgument, {.file = path.string()}, why);
}

// The file a new regular file may replace at `path`: `path` itself when nothing or a regular file
// is there; with follow_symlinks the regular file a link there leads to. Anything else is refused,
// so that a rename never puts a regular file where a device, FIFO, socket or folder was.
fs::path replaceable_destination(const fs::path& path, bool follow_symlinks) {
  struct stat status {};
  if (::lstat(path.c_str(), &status) != 0) {
    const int error = errno;
    if (error == ENOENT) return path;  // A missing folder is reported when the file is created.
    throw Error(ErrorCode::kIo, {.file = path.string()}, "cannot examine: " + errno_text(error));
  }
  if (S_ISREG(status.st_mode)) return path;
  if (!S_ISLNK(status.st_mode)) {
    refuse(path, std::string("is ") + detail::file_type_name(status.st_mode) +
                     ", not a regular file; refusing to replace it");
  }
  if (!follow_symlinks) {
    refuse(path,
           "is a symbolic link; refusing to replace it (following it, the file it leads to is "
           "replaced instead: --follow-symlinks, OutputFileOptions::follow_symlinks)");
  }
  std::error_code ec;
  const fs::path target = fs::canonical(path, ec);
  struct stat target_status {};
  if (ec || ::stat(target.c_str(), &target_status) != 0) {
    refuse(path, "is a symbolic link to a file that does not exist");
  }
  if (!S_ISREG(target_status.st_mode)) {
    refuse(path, "is a symbolic link to " + target.string() + ", which is " +
                     detail::file_type_name(target_status.st_mode) +
                     ", not a regular file; refusing to replace it");
  }
  return target;
}

// A fresh hidden name next to `destination` (".NAME.tmp.<16 hex digits>").
fs::path temporary_name(const fs::path& destination) {
  static thread_local std::mt19937_64 random = [] {
    std::random_device entropy;
    return std::mt19937_64(static_cast<std::uint64_t>(entropy()) << 32 ^ entropy());
  }();
  char suffix[24];
  std::snprintf(suffix, sizeof suffix, ".tmp.%016llx", static_cast<unsigned long long>(random()));
  // Built by appends: g++ 12 at -O3 misreports `"." + string` as an overlapping memcpy.
  std::string name(".");
  name += destination.filename().string();
  name += suffix;
  return folder_of(destination) / name;
}

// The renames of commit_together, each remembered so that a failure can take the set back.
class SetSwap final {
 public:
  // Renames what is at `destination` (if anything) to a temporary name beside it.
  void move_aside(const fs::path& destination) {
    struct stat status {};
    if (::lstat(destination.c_str(), &status) != 0) return;  // Nothing there.
    const fs::path aside = temporary_name(destination);
    if (const int error = rename_file(destination, aside); error != 0) {
      throw Error(ErrorCode::kIo, {.file = destination.string()},
                  "cannot move the old file aside to " + aside.string() + ": " + errno_text(error));
    }
    moved_.push_back({destination, aside});
  }
  void place(const fs::path& temporary, const fs::path& destination) {
    if (const int error = rename_file(temporary, destination); error != 0) {
      throw Error(ErrorCode::kIo, {.file = destination.string()},
                  "cannot rename " + temporary.string() + " over it: " + errno_text(error));
    }
    placed_.push_back(destination);
  }
  // Back to the old set, newest step first; best effort, the first failure is what is reported.
  void undo() noexcept {
    for (auto it = placed_.rbegin(); it != placed_.rend(); ++it) ::unlink(it->c_str());
    for (auto it = moved_.rbegin(); it != moved_.rend(); ++it) {
      static_cast<void>(rename_file(it->aside, it->destination));
    }
  }
  // Removes the old files moved aside, once the new set is in place.
  void drop_old() noexcept {
    for (const MovedAside& m : moved_) ::unlink(m.aside.c_str());
  }

 private:
  struct MovedAside {
    fs::path destination;
    fs::path aside;
  };
  std::vector<MovedAside> moved_;  // In the order they were moved.
  std::vector<fs::path> placed_;   // Destinations the new files were renamed to.
};

}  // namespace

void detail::set_rename_hook(RenameHook hook) { rename_hook() = std::move(hook); }

void detail::set_splice_refusal(SpliceRefusal refusal) { splice_refusal() = refusal; }

AtomicOutputFile::AtomicOutputFile(fs::path destination, OutputFileOptions options,
                                   std::size_t buffer_size)
    : options_(options), buffer_size_(buffer_size) {
  if (destination.filename().empty()) {
    throw Error(ErrorCode::kInvalidArgument, {.file = destination.string()}, "not a file name");
  }
  destination_ = replaceable_destination(destination, options_.follow_symlinks);
  name_ = destination_.string();
  folder_ = folder_of(destination_);
  // An unnamed file first: should the process die before commit, nothing is left behind. The
  // file gets 0666 minus the umask, the permissions any ordinary new file of the user would get.
  fd_ = ::open(folder_.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0666);
  if (fd_ < 0 && errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) {
    throw Error(ErrorCode::kIo, {.file = destination_.string()},
                "cannot create a temporary file in " + folder_.string() + ": " + errno_text(errno));
  }
  // File systems without unnamed files: a hidden named one, created exclusively.
  for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
    temporary_ = temporary_name(destination_);
    fd_ = ::open(temporary_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0 && errno != EEXIST) {
      throw Error(ErrorCode::kIo, {.file = destination_.string()},
                  "cannot create temporary file " + temporary_.string() + ": " + errno_text(errno));
    }
  }
  if (fd_ < 0) {
    throw Error(ErrorCode::kIo, {.file = destination_.string()},
                "cannot find a free temporary name");
  }
  detail::SplicePipeShelf::instance().add_user();
  buffer_.reserve(buffer_size_);
}

fs::path AtomicOutputFile::make_shared_temporary(const fs::path& destination,
                                                 const OutputFileOptions& options,
                                                 std::uint64_t size) {
  if (destination.filename().empty()) {
    throw Error(ErrorCode::kInvalidArgument, {.file = destination.string()}, "not a file name");
  }
  const fs::path checked = replaceable_destination(destination, options.follow_symlinks);
  for (int attempt = 0; attempt < 100; ++attempt) {
    fs::path temporary = temporary_name(checked);
    const detail::Fd fd(::open(temporary.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666));
    if (fd.get() < 0 && errno == EEXIST) continue;
    if (fd.get() < 0) {
      throw Error(ErrorCode::kIo, {.file = checked.string()},
                  "cannot create temporary file " + temporary.string() + ": " + errno_text(errno));
    }
    // Reserved up front: a full disk fails here, before any writer has written a byte.
    int error = size == 0 ? 0 : ::posix_fallocate(fd.get(), 0, static_cast<off_t>(size));
    if (error == EOPNOTSUPP || error == EINVAL) {
      error = ::ftruncate(fd.get(), static_cast<off_t>(size)) == 0 ? 0 : errno;
    }
    if (error != 0) {
      ::unlink(temporary.c_str());
      throw Error(ErrorCode::kIo, {.file = checked.string()},
                  "cannot reserve " + std::to_string(size) + " bytes for " + temporary.string() +
                      ": " + errno_text(error));
    }
    return temporary;
  }
  throw Error(ErrorCode::kIo, {.file = checked.string()}, "cannot find a free temporary name");
}

std::unique_ptr<AtomicOutputFile> AtomicOutputFile::adopt(fs::path destination, fs::path temporary,
                                                          OutputFileOptions options,
                                                          std::uint64_t position) {
  return std::unique_ptr<AtomicOutputFile>(new AtomicOutputFile(
      Adopted{}, std::move(destination), std::move(temporary), options, position));
}

AtomicOutputFile::AtomicOutputFile(Adopted, fs::path destination, fs::path temporary,
                                   OutputFileOptions options, std::uint64_t position)
    : options_(options), buffer_size_(kDefaultBufferSize), adopted_(true) {
  destination_ = replaceable_destination(destination, options_.follow_symlinks);
  folder_ = folder_of(destination_);
  fd_ = ::open(temporary.c_str(), O_RDWR | O_CLOEXEC);
  if (fd_ < 0) {
    const int error = errno;
    throw Error(error == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo,
                {.file = destination_.string()},
                "cannot open the temporary " + temporary.string() + ": " + errno_text(error));
  }
  temporary_ = std::move(temporary);
  position_ = position;
  flushed_position_ = position;
  detail::SplicePipeShelf::instance().add_user();
  buffer_.reserve(buffer_size_);
}

AtomicOutputFile::~AtomicOutputFile() { discard(); }

int AtomicOutputFile::close_file() noexcept {
  const int error = ::close(fd_) == 0 ? 0 : errno;
  fd_ = -1;
  detail::SplicePipeShelf::instance().remove_user();
  return error;
}

void AtomicOutputFile::discard() noexcept {
  if (fd_ >= 0) static_cast<void>(close_file());
  if (!committed_ && !adopted_ && !temporary_.empty()) {
    ::unlink(temporary_.c_str());
    temporary_.clear();
  }
}

void AtomicOutputFile::ensure_open(const char* operation) const {
  if (fd_ < 0) {
    throw Error(ErrorCode::kBadState, {.file = destination_.string()},
                std::string(operation) + " after the file was committed or abandoned");
  }
}

void AtomicOutputFile::write_fully(const std::uint8_t* data, std::size_t size,
                                   std::uint64_t offset) {
  while (size > 0) {
    const ssize_t n =
        ::pwrite(fd_, data, std::min<std::size_t>(size, 1u << 30), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail_write(errno, offset);
    data += n;
    size -= static_cast<std::size_t>(n);
    offset += static_cast<std::uint64_t>(n);
  }
}

void AtomicOutputFile::fail_write(int error, std::uint64_t offset) {
  discard();
  throw Error(ErrorCode::kIo, {.file = destination_.string()},
              "write at offset " + std::to_string(offset) + " failed: " + errno_text(error));
}

void AtomicOutputFile::flush_buffer() {
  if (!buffer_.empty()) {
    write_fully(buffer_.data(), buffer_.size(), flushed_position_);
    flushed_position_ += buffer_.size();
    buffer_.clear();
  }
  ONNXZIP_DCHECK(flushed_position_ == position_);
}

void AtomicOutputFile::write(ByteSpan bytes) {
  ensure_open("write");
  // A large piece of a file mapping is copied from that file (copy_from_file), not through the
  // mapping, which write() would touch page by page.
  const std::optional<detail::FileExtent> extent =
      bytes.size() >= kFileCopyMinBytes ? detail::file_extent_of(bytes) : std::nullopt;
  if (!extent && bytes.size() < buffer_size_) {
    if (buffer_.size() + bytes.size() > buffer_size_) flush_buffer();
    buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
  } else {
    flush_buffer();
    // Blocks that may be shared (share_blocks) are not allocated first only to be given back.
    if (!extent || !may_share_blocks_) allocate_ahead(bytes.size());
    if (extent) {
      copy_from_file(*extent, bytes);
    } else {
      // Large pieces go straight to pwrite, not through the buffer. (vmsplice into a pipe and
      // splice into the file, which lends the kernel the pages instead, measured slower on XFS
      // and ext4, in bench/zip_bench.cpp and for onnxzip.save in bench/python_bench.py.)
      write_fully(bytes.data(), bytes.size(), flushed_position_);
    }
    flushed_position_ += bytes.size();
  }
  position_ += bytes.size();
  // What is not yet written is exactly the buffer.
  ONNXZIP_DCHECK(position_ == flushed_position_ + buffer_.size());
  ONNXZIP_DCHECK(buffer_.size() <= buffer_size_);
}

// Allocates the blocks of the `count` bytes about to be written at flushed_position_, in one
// extent: a file system that allocates as the bytes come (ext4's delayed allocation) does so page
// by page under writeback, where a large write into a new file then waits. A hint: a file system
// without fallocate allocates as before, and a full disk is reported by the write.
void AtomicOutputFile::allocate_ahead(std::uint64_t count) noexcept {
  if (!detail::fast_path_on(detail::FastPath::kAllocateAhead) || no_allocate_ahead_) return;
  if (::fallocate(fd_, 0, static_cast<off_t>(flushed_position_), static_cast<off_t>(count)) != 0 &&
      (errno == EOPNOTSUPP || errno == ENOSYS)) {
    no_allocate_ahead_ = true;
  }
}

// Bytes of a mapped file are copied from the file, never through the mapping (which write() would
// fault in page by page, and which raises SIGBUS, not an error, where the file was truncated), in
// the cheapest way the system offers, each falling back to the next:
//  1. shared, not copied (FICLONERANGE), where both offsets sit on a block boundary and the file
//     system shares extents (XFS with reflink, btrfs): whole blocks only, the rest is copied;
//  2. splice() through a pipe of 1 MiB: the kernel copies page cache into page cache once, as cp
//     does with copy_file_range. copy_file_range itself splices through a pipe of 64 KiB, which
//     measured slower in CPU for payload-sized pieces than a 1 MiB pipe, which matches cp
//     (bench/convert_cli_bench.py);
//  3. pread and pwrite through a page-aligned buffer (no pipe to be had, a file system without
//     splice), which costs about what copy_file_range does.
void AtomicOutputFile::copy_from_file(const detail::FileExtent& extent, ByteSpan bytes) {
  const std::uint64_t size = bytes.size();
  std::uint64_t done = share_blocks(extent, size);
  done = copy_by_splice(extent, done, size);
  if (done < size) copy_through_buffer(extent, done, size);
}

// How many of the first bytes at `extent` became shared blocks of this file (0: none). Blocks
// are shared only while every piece so far could be: an output that has to copy bytes anyway is
// not turned into a file with shared extents by the few pieces whose offsets happen to line up,
// since XFS then checks every later write against them, which slows a conversion at the default
// alignment down (bench/reflink_probe.sh compares alignments; bench/fast_path_bench.cpp times
// sharing against copying).
std::uint64_t AtomicOutputFile::share_blocks(const detail::FileExtent& extent, std::uint64_t size) {
  const std::uint64_t whole_blocks = size - size % kBlockBytes;
  if (!may_share_blocks_ || !detail::fast_path_on(detail::FastPath::kShareBlocks) ||
      extent.offset % kBlockBytes != 0 || flushed_position_ % kBlockBytes != 0 ||
      whole_blocks == 0) {
    may_share_blocks_ = false;
    return 0;
  }
  file_clone_range range{};
  range.src_fd = extent.descriptor;
  range.src_offset = extent.offset;
  range.src_length = whole_blocks;
  range.dest_offset = flushed_position_;
  if (::ioctl(fd_, FICLONERANGE, &range) == 0) return whole_blocks;
  // ext4 and tmpfs share nothing; another file system, a source truncated meanwhile: the copy
  // takes the bytes, and reports what is wrong with the source.
  may_share_blocks_ = false;
  return 0;
}

// Bytes [done, size) of the `size` bytes at `extent`, to flushed_position_ + done on, through a
// pipe. Returns how far it got: short of `size` only when splice is not to be had here, and the
// caller copies the rest another way.
std::uint64_t AtomicOutputFile::copy_by_splice(const detail::FileExtent& extent, std::uint64_t done,
                                               std::uint64_t size) {
  if (no_splice_) return done;
  detail::SplicePipeShelf& shelf = detail::SplicePipeShelf::instance();
  std::unique_ptr<detail::SplicePipe> pipe = shelf.take();
  if (!pipe) return done;
  while (done < size && !no_splice_) {
    auto from = static_cast<loff_t>(extent.offset + done);
    const auto want =
        static_cast<std::size_t>(std::min<std::uint64_t>(size - done, pipe->capacity));
    // The pipe is empty: this never waits for room.
    const ssize_t in =
        splice_bytes(extent.descriptor, &from, pipe->write_end.get(), nullptr, want, false);
    if (in < 0 && errno == EINTR) continue;
    if (in < 0 && cannot_splice(errno)) {
      no_splice_ = true;
      break;
    }
    if (in <= 0) fail_source(in < 0 ? errno : 0, extent.offset + done, extent, size);
    done += splice_out(*pipe, static_cast<std::size_t>(in), flushed_position_ + done);
  }
  shelf.give(std::move(pipe));
  return done;
}

// Moves the `count` bytes in `pipe` to the file at `offset`; returns `count`. Should the file
// system take no spliced pages, they are read out of the pipe and written, and splice is not used
// again for this file.
std::size_t AtomicOutputFile::splice_out(detail::SplicePipe& pipe, std::size_t count,
                                         std::uint64_t offset) {
  std::size_t moved = 0;
  while (moved < count) {
    auto to = static_cast<loff_t>(offset + moved);
    const ssize_t n = splice_bytes(pipe.read_end.get(), nullptr, fd_, &to, count - moved, true);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && cannot_splice(errno)) {
      no_splice_ = true;
      empty_pipe(pipe, count - moved, offset + moved);
      break;
    }
    if (n <= 0) fail_write(n < 0 ? errno : EIO, offset + moved);
    moved += static_cast<std::size_t>(n);
  }
  return count;
}

// Reads the `count` bytes left in `pipe` and writes them at `offset`.
void AtomicOutputFile::empty_pipe(detail::SplicePipe& pipe, std::size_t count,
                                  std::uint64_t offset) {
  ensure_copy_buffer();
  while (count > 0) {
    const ssize_t n =
        ::read(pipe.read_end.get(), copy_buffer_.data(), std::min(count, copy_buffer_.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail_write(n < 0 ? errno : EIO, offset);
    write_fully(copy_buffer_.data(), static_cast<std::size_t>(n), offset);
    count -= static_cast<std::size_t>(n);
    offset += static_cast<std::uint64_t>(n);
  }
}

void AtomicOutputFile::ensure_copy_buffer() {
  constexpr std::size_t kPieceBytes = std::size_t{256} << 10;
  constexpr std::size_t kPageBytes = 4096;
  // Page-aligned: the kernel copies page cache into a destination off a 64-byte boundary several
  // times slower on some CPUs (see kPageBytes in crc_worker.cpp).
  if (copy_buffer_.empty()) copy_buffer_ = OwnedBytes(kPieceBytes, kPageBytes);
}

// Bytes [done, size) of the `size` bytes at `extent`, to flushed_position_ + done on.
void AtomicOutputFile::copy_through_buffer(const detail::FileExtent& extent, std::uint64_t done,
                                           std::uint64_t size) {
  ensure_copy_buffer();
  while (done < size) {
    const std::uint64_t from = extent.offset + done;
    const auto piece =
        static_cast<std::size_t>(std::min<std::uint64_t>(size - done, copy_buffer_.size()));
    const ssize_t n =
        ::pread(extent.descriptor, copy_buffer_.data(), piece, static_cast<off_t>(from));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail_source(n < 0 ? errno : 0, from, extent, size);
    write_fully(copy_buffer_.data(), static_cast<std::size_t>(n), flushed_position_ + done);
    done += static_cast<std::uint64_t>(n);
  }
}

// `error` 0: the source ended at `source_offset`; else the errno of reading it there.
void AtomicOutputFile::fail_source(int error, std::uint64_t source_offset,
                                   const detail::FileExtent& extent, std::uint64_t size) {
  discard();
  if (error == 0) {
    throw Error(ErrorCode::kIo, {.file = destination_.string()},
                "the source file ended at offset " + std::to_string(source_offset) +
                    ", before the " + std::to_string(size) + " bytes to copy from offset " +
                    std::to_string(extent.offset) + " (was it truncated?)");
  }
  throw Error(ErrorCode::kIo, {.file = destination_.string()},
              "copying from offset " + std::to_string(source_offset) +
                  " of the source file failed: " + errno_text(error));
}

void AtomicOutputFile::flush() {
  ensure_open("flush");
  flush_buffer();
}

detail::Fd AtomicOutputFile::reader() const {
  ensure_open("reader");
  detail::Fd copy(::fcntl(fd_, F_DUPFD_CLOEXEC, 0));
  if (copy.get() < 0) {
    throw Error(ErrorCode::kIo, {.file = destination_.string()},
                "cannot duplicate the output's descriptor: " + errno_text(errno));
  }
  return copy;
}

void AtomicOutputFile::reserve(std::uint64_t count) {
  ensure_open("reserve");
  flush_buffer();
  flushed_position_ += count;
  position_ += count;
}

void AtomicOutputFile::write_zeros(std::uint64_t count) {
  static constexpr std::uint8_t kZeros[4096] = {};
  while (count > 0) {
    const auto piece = static_cast<std::size_t>(std::min<std::uint64_t>(count, sizeof kZeros));
    write(ByteSpan(kZeros, piece));
    count -= piece;
  }
}

void AtomicOutputFile::write_at(std::uint64_t offset, ByteSpan bytes) {
  ensure_open("write_at");
  if (!fits(offset, bytes.size(), position_)) {
    throw Error(ErrorCode::kInvalidArgument, {.file = destination_.string()},
                "write_at offset " + std::to_string(offset) + " length " +
                    std::to_string(bytes.size()) + " is past the written end " +
                    std::to_string(position_));
  }
  flush_buffer();
  write_fully(bytes.data(), bytes.size(), offset);
}

void AtomicOutputFile::seal() {
  ensure_open("commit");
  flush_buffer();
  const auto fail = [&](const std::string& what, int error) {
    discard();
    throw Error(ErrorCode::kIo, {.file = destination_.string()}, what + ": " + errno_text(error));
  };
  // An adopted file may hold more than was written: an earlier attempt's tail.
  if (adopted_ && ::ftruncate(fd_, static_cast<off_t>(position_)) != 0) {
    fail("cannot cut the file at its end", errno);
  }
  if (options_.durable && ::fsync(fd_) != 0) fail("fsync failed", errno);
  if (temporary_.empty()) {
    // The unnamed file gets a hidden name for the rename. Through /proc the descriptor's file is
    // linked by any user; AT_EMPTY_PATH (without /proc) needs CAP_DAC_READ_SEARCH.
    const std::string by_descriptor = "/proc/self/fd/" + std::to_string(fd_);
    for (int attempt = 0; attempt < 100 && temporary_.empty(); ++attempt) {
      const fs::path name = temporary_name(destination_);
      int result =
          ::linkat(AT_FDCWD, by_descriptor.c_str(), AT_FDCWD, name.c_str(), AT_SYMLINK_FOLLOW);
      if (result != 0 && errno == ENOENT) {
        result = ::linkat(fd_, "", AT_FDCWD, name.c_str(), AT_EMPTY_PATH);
      }
      if (result == 0) {
        temporary_ = name;
      } else if (errno != EEXIST) {
        fail("cannot give the temporary file a name in " + folder_.string(), errno);
      }
    }
    if (temporary_.empty()) fail("cannot find a free temporary name", EEXIST);
  }
  if (const int error = close_file(); error != 0) fail("close failed", error);
}

void AtomicOutputFile::publish() {
  try {
    replaceable_destination(destination_, false);
  } catch (...) {
    discard();
    throw;
  }
  if (const int error = rename_file(temporary_, destination_); error != 0) {
    discard();
    throw Error(ErrorCode::kIo, {.file = destination_.string()},
                "cannot rename " + temporary_.string() + " over it: " + errno_text(error));
  }
  committed_ = true;
  temporary_.clear();
  if (options_.durable) sync_folder(folder_);
}

void AtomicOutputFile::commit() {
  seal();
  publish();
}

void commit_together(std::span<AtomicOutputFile* const> others, AtomicOutputFile& primary,
                     std::span<const fs::path> retired) {
  // 1. Every file complete under a temporary name; a failure here leaves every destination as it
  // was (the files' destructors drop the temporaries).
  for (AtomicOutputFile* file : others) file->seal();
  primary.seal();
  for (AtomicOutputFile* file : others) replaceable_destination(file->destination_, false);
  replaceable_destination(primary.destination_, false);

  SetSwap swap;
  try {
    // 2. The old primary goes first: from now until step 4 there is no primary to pair with the
    // data files being replaced.
    swap.move_aside(primary.destination_);
    // 3. The files the primary refers to.
    for (AtomicOutputFile* file : others) {
      swap.move_aside(file->destination_);
      swap.place(file->temporary_, file->destination_);
    }
    // 4. The old set's files the new one does not have, then the new primary: the new set is
    // complete.
    for (const fs::path& file : retired) swap.move_aside(file);
    swap.place(primary.temporary_, primary.destination_);
  } catch (...) {
    swap.undo();
    for (AtomicOutputFile* file : others) file->discard();
    primary.discard();
    throw;
  }
  // 5. The new set is in place; the old one goes.
  swap.drop_old();
  std::set<fs::path> folders;
  for (AtomicOutputFile* file : others) {
    file->committed_ = true;
    file->temporary_.clear();
    folders.insert(file->folder_);
  }
  primary.committed_ = true;
  primary.temporary_.clear();
  folders.insert(primary.folder_);
  if (primary.options_.durable) {
    for (const fs::path& folder : folders) sync_folder(folder);
  }
}

}  // namespace onnxzip
