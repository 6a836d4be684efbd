#include "onnxzip/output_file.h"

#include <fcntl.h>
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

#include "file_extent.h"
#include "onnxzip/error.h"
#include "output_file_testing.h"
#include "posix_file.h"

namespace onnxzip {
namespace {

namespace fs = std::filesystem;

std::string errno_text(int error) { return std::strerror(error); }

// Pieces of a file mapping at least this large are copied from the file (copy_from_file); smaller
// ones go through the buffer, where one page fault maps their pages (the kernel's fault-around).
constexpr std::size_t kFileCopyMinBytes = std::size_t{64} << 10;

detail::RenameHook& rename_hook() {
  static detail::RenameHook hook;
  return hook;
}

// rename(2), or the errno it failed with (EIO when the test hook refuses it).
int rename_file(const fs::path& from, const fs::path& to) {
  if (const detail::RenameHook& hook = rename_hook(); hook && !hook(from, to)) return EIO;
  return ::rename(from.c_str(), to.c_str()) == 0 ? 0 : errno;
}

// Maps in the pages of `bytes` before write() copies from them. The kernel copies a write's
// source with page faults disabled: at a page not mapped yet (a file mapping nothing has read:
// the payloads of a model loaded with no_copy) the copy stops, the kernel faults the pages in and
// starts over, which made writing from a mapped archive about a fifth slower than `cp`. Reading
// one byte per page faults them in from user space instead, 16 pages per fault (the kernel's
// fault-around): about 25 ms per GiB, and 6 ms when the pages are mapped already (a heap buffer,
// a payload whose CRC-32 was just computed). MADV_POPULATE_READ takes about 50 ms either way.
// A source that is a mapping of a file truncated meanwhile raises SIGBUS here as it does in any
// read of the mapping (a CRC-32, a parse).
void touch_pages(ByteSpan bytes) {
  constexpr std::size_t kPage = 4096;
  if (bytes.empty()) return;
  const volatile std::uint8_t* const p = bytes.data();
  for (std::size_t at = 0; at < bytes.size(); at += kPage) static_cast<void>(p[at]);
  static_cast<void>(p[bytes.size() - 1]);
}

void sync_folder(const fs::path& folder) {
  const detail::Fd dir_fd(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir_fd.get() >= 0) ::fsync(dir_fd.get());
}

fs::path folder_of(const fs::path& file) {
  return file.has_parent_path() ? file.parent_path() : fs::path(".");
}

[[noreturn]] void refuse(const fs::path& path, const std::string& why) {
  throw Error(ErrorCode::kInvalidArgument, path.string() + ": " + why);
}

// The file a new regular file may replace at `path`: `path` itself when nothing or a regular file
// is there; with follow_symlinks the regular file a link there leads to. Anything else is refused,
// so that a rename never puts a regular file where a device, FIFO, socket or folder was.
fs::path replaceable_destination(const fs::path& path, bool follow_symlinks) {
  struct stat status {};
  if (::lstat(path.c_str(), &status) != 0) {
    const int error = errno;
    if (error == ENOENT) return path;  // A missing folder is reported when the file is created.
    throw Error(ErrorCode::kIo, path.string() + ": cannot examine: " + errno_text(error));
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
      throw Error(ErrorCode::kIo, destination.string() + ": cannot move the old file aside to " +
                                      aside.string() + ": " + errno_text(error));
    }
    moved_.push_back({destination, aside});
  }
  void place(const fs::path& temporary, const fs::path& destination) {
    if (const int error = rename_file(temporary, destination); error != 0) {
      throw Error(ErrorCode::kIo, destination.string() + ": cannot rename " + temporary.string() +
                                      " over it: " + errno_text(error));
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

AtomicOutputFile::AtomicOutputFile(fs::path destination, OutputFileOptions options)
    : options_(options) {
  if (destination.filename().empty()) {
    throw Error(ErrorCode::kInvalidArgument, destination.string() + ": not a file name");
  }
  destination_ = replaceable_destination(destination, options_.follow_symlinks);
  folder_ = folder_of(destination_);
  // An unnamed file first: should the process die before commit, nothing is left behind. The
  // file gets 0666 minus the umask, the permissions any ordinary new file of the user would get.
  fd_ = ::open(folder_.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
  if (fd_ < 0 && errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) {
    throw Error(ErrorCode::kIo, destination_.string() + ": cannot create a temporary file in " +
                                    folder_.string() + ": " + errno_text(errno));
  }
  // File systems without unnamed files: a hidden named one, created exclusively.
  for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
    temporary_ = temporary_name(destination_);
    fd_ = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0 && errno != EEXIST) {
      throw Error(ErrorCode::kIo, destination_.string() + ": cannot create temporary file " +
                                      temporary_.string() + ": " + errno_text(errno));
    }
  }
  if (fd_ < 0) {
    throw Error(ErrorCode::kIo, destination_.string() + ": cannot find a free temporary name");
  }
  buffer_.reserve(options_.buffer_size);
}

AtomicOutputFile::~AtomicOutputFile() { discard(); }

void AtomicOutputFile::discard() noexcept {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  if (!committed_ && !temporary_.empty()) {
    ::unlink(temporary_.c_str());
    temporary_.clear();
  }
}

void AtomicOutputFile::ensure_open(const char* operation) const {
  if (fd_ < 0) {
    throw Error(ErrorCode::kBadState, destination_.string() + ": " + operation +
                                          " after the file was committed or abandoned");
  }
}

void AtomicOutputFile::write_fully(const std::uint8_t* data, std::size_t size,
                                   std::uint64_t offset) {
  while (size > 0) {
    const ssize_t n =
        ::pwrite(fd_, data, std::min<std::size_t>(size, 1u << 30), static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      discard();
      throw Error(ErrorCode::kIo, destination_.string() + ": write at offset " +
                                      std::to_string(offset) + " failed: " + errno_text(error));
    }
    data += n;
    size -= static_cast<std::size_t>(n);
    offset += static_cast<std::uint64_t>(n);
  }
}

void AtomicOutputFile::flush_buffer() {
  if (!buffer_.empty()) {
    write_fully(buffer_.data(), buffer_.size(), flushed_position_);
    flushed_position_ += buffer_.size();
    buffer_.clear();
  }
}

void AtomicOutputFile::write(ByteSpan bytes) {
  ensure_open("write");
  // A large piece of a file mapping is copied from that file (copy_from_file), not through the
  // mapping, which write() would touch page by page.
  const std::optional<detail::FileExtent> extent =
      bytes.size() >= kFileCopyMinBytes ? detail::file_extent_of(bytes) : std::nullopt;
  if (!extent && bytes.size() < options_.buffer_size) {
    if (buffer_.size() + bytes.size() > options_.buffer_size) flush_buffer();
    buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
  } else {
    flush_buffer();
    if (extent) {
      copy_from_file(*extent, bytes);
    } else {
      // Large pieces go straight to pwrite, not through the buffer. (vmsplice into a pipe and
      // splice into the file, which lends the kernel the pages instead, measured slower on this
      // project's VM: 1 GiB in 1 MiB pieces took 0.21-0.27 s against 0.16-0.18 s on XFS and
      // 0.39-0.57 s against 0.34-0.46 s on ext4, and onnxzip.save of a 1 GiB ModelProto just
      // built in Python 1.3-3.9 s against 0.19-0.50 s.)
      touch_pages(bytes);
      write_fully(bytes.data(), bytes.size(), flushed_position_);
    }
    flushed_position_ += bytes.size();
  }
  position_ += bytes.size();
}

// copy_file_range is used where it can share the source's blocks instead of copying them (XFS,
// btrfs): both offsets on a 4 KiB boundary. Elsewhere the kernel's own copy (a splice through a
// pipe of 64 KiB pieces) measured slower than pread and pwrite through a page-aligned buffer, the
// way cp --reflink=never copies: 1 GiB to 64-aligned offsets with the CRC-32 read beside it took
// 0.39 s against 0.31 s on XFS and 0.58 s against 0.52 s on ext4 (medians of 5, this project's
// 2-core VM).
void AtomicOutputFile::copy_from_file(const detail::FileExtent& extent, ByteSpan bytes) {
  constexpr std::uint64_t kBlockBytes = 4096;
  if (extent.offset % kBlockBytes != 0 || flushed_position_ % kBlockBytes != 0) {
    copy_through_buffer(extent, 0, bytes.size());
    return;
  }
  auto from = static_cast<loff_t>(extent.offset);
  auto to = static_cast<loff_t>(flushed_position_);
  std::size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::copy_file_range(extent.descriptor, &from, fd_, &to, left, 0);
    if (n > 0) {
      left -= static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == EOPNOTSUPP || errno == ENOSYS)) {
      // Kernels before 5.19 copy only within one file system, and some file systems not at all:
      // the rest goes through the buffer.
      copy_through_buffer(extent, bytes.size() - left, bytes.size());
      return;
    }
    fail_source(n < 0 ? errno : 0, static_cast<std::uint64_t>(from), extent, bytes.size());
  }
}

// Bytes [done, size) of the `size` bytes at `extent`, to flushed_position_ + done on.
void AtomicOutputFile::copy_through_buffer(const detail::FileExtent& extent, std::uint64_t done,
                                           std::uint64_t size) {
  constexpr std::size_t kPieceBytes = std::size_t{256} << 10;
  constexpr std::size_t kPageBytes = 4096;
  // Page-aligned: the kernel copies page cache into a destination off a 64-byte boundary several
  // times slower on some CPUs (see CrcWorker::buffer_).
  if (copy_buffer_.empty()) copy_buffer_ = OwnedBytes(kPieceBytes, kPageBytes);
  while (done < size) {
    const std::uint64_t from = extent.offset + done;
    const auto piece = static_cast<std::size_t>(std::min<std::uint64_t>(size - done, kPieceBytes));
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
    throw Error(ErrorCode::kIo, destination_.string() + ": the source file ended at offset " +
                                    std::to_string(source_offset) + ", before the " +
                                    std::to_string(size) + " bytes to copy from offset " +
                                    std::to_string(extent.offset) + " (was it truncated?)");
  }
  throw Error(ErrorCode::kIo, destination_.string() + ": copying from offset " +
                                  std::to_string(source_offset) +
                                  " of the source file failed: " + errno_text(error));
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
    throw Error(ErrorCode::kInvalidArgument,
                destination_.string() + ": write_at offset " + std::to_string(offset) + " length " +
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
    throw Error(ErrorCode::kIo, destination_.string() + ": " + what + ": " + errno_text(error));
  };
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
  const int result = ::close(fd_);
  fd_ = -1;
  if (result != 0) fail("close failed", errno);
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
    throw Error(ErrorCode::kIo, destination_.string() + ": cannot rename " + temporary_.string() +
                                    " over it: " + errno_text(error));
  }
  committed_ = true;
  temporary_.clear();
  if (options_.durable) sync_folder(folder_);
}

void AtomicOutputFile::commit() {
  seal();
  publish();
}

void commit_together(std::span<AtomicOutputFile* const> others, AtomicOutputFile& primary) {
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
    // 4. The new primary: the new set is complete.
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
