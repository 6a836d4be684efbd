// The bytes of a whole input file: memory-mapped read-only, or read into owned memory -- or,
// with FileAccess::kRanges, neither: the file is opened and checked, bytes() is empty, and its
// readers read ranges through descriptor() (ByteSource::of_file).
//
// MappedFile owns the bytes; bytes() borrows from them. Open it through MappedFile::open (or
// adopt a descriptor), which returns a shared_ptr so the file can serve as the OwnerToken of
// every tensor that borrows from it: the bytes live until the last such tensor is gone. This is
// the only place the library maps files (mmap). Any module may use it.
//
// Inputs that are not regular files: open() opens without blocking (O_NONBLOCK) and checks the
// type of the file it opened before reading anything, so a FIFO, a socket or a device is an
// Error at once, never a hang. The descriptor that was checked is the one that is mapped: the
// file is never opened again by its name, which by then may name another file. That descriptor,
// the only one, stays open for readers that want pread() (descriptor()).
//
// The mapping contract (FileAccess::kMap). A mapping shows the file as it is now, not as it was
// when it was opened. Should another process shrink (truncate) the file while the mapping lives,
// touching a byte past the new end raises SIGBUS, which kills the process unless it handles the
// signal: no library can turn that into an Error, because the access is an ordinary memory read
// that may happen anywhere (in a runtime, in memcpy). Bytes another process rewrites in place
// change under the reader too. So, for files that others may change while you read them (shared
// folders, network file systems, files being downloaded or rewritten):
//   * use FileAccess::kRead: the file is read once into owned memory under a shared lock (the
//     one an in-place edit's exclusive lock excludes, spec §9.6), a file that changes while it
//     is read is Error(kChanged), and nothing changes afterwards; or
//   * handle SIGBUS (sigaction with SA_SIGINFO) and name the file with describe_address(si_addr),
//     as the onnxzip tool does, then exit: returning from the handler would fault again.
// Writers that replace a file atomically (write a new file, rename it over the old one), as every
// writer of this library does, never disturb a live mapping of the old one.
#ifndef ONNXZIP_MAPPED_FILE_H_
#define ONNXZIP_MAPPED_FILE_H_

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>

#include "onnxzip/bytes.h"
#include "onnxzip/file_access.h"

namespace onnxzip {

class MappedFile final {
 public:
  // Opens `path` (without blocking; symbolic links are followed) and
  // checks that it is a regular file, then maps it or reads it (`access`). An empty file gives an
  // empty span. Errors: kNotFound when it does not exist; kIo when it is not a regular file
  // ("<path>: not a regular file (a FIFO)"), cannot be opened, mapped or read, or shrinks while
  // it is read (kRead); kChanged when it changes while it is read whole (kRead).
  static std::shared_ptr<const MappedFile> open(const std::filesystem::path& path,
                                                FileAccess access = FileAccess::kMap);
  // Takes ownership of `fd`, an open, readable descriptor of a regular file (an unlinked
  // temporary file will do), and maps or reads that file; `name` names it in errors and in
  // describe_address(). The descriptor is closed when the MappedFile goes, or at once when this
  // throws (kIo: not a regular file, cannot be mapped or read; kInvalidArgument: fd < 0).
  static std::shared_ptr<const MappedFile> adopt(int fd, std::filesystem::path name,
                                                 FileAccess access = FileAccess::kMap);

  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  ByteSpan bytes() const noexcept { return bytes_; }
  const std::filesystem::path& path() const noexcept { return path_; }
  // The open descriptor of the file whose bytes these are (for pread); valid as long as this
  // object. The same file as bytes(), whatever has happened to its path since.
  int descriptor() const noexcept;
  // Whether the file was written since its bytes were taken (its size or times differ, by
  // fstat), or can no longer be examined: what a reader checks after reading parts of it.
  bool changed() const noexcept;
  // How the bytes were got, as asked.
  FileAccess access() const noexcept { return access_; }

  // When `address` lies inside a live mapping (kMap) of any MappedFile, copies that file's name
  // (cut to capacity - 1 bytes, NUL-terminated) into `name` and returns true; else false.
  // Async-signal-safe (no allocation, no lock): meant for a SIGBUS handler's si_addr. Names of at
  // most 1023 bytes are kept whole.
  static bool describe_address(const void* address, char* name, std::size_t capacity) noexcept;

 private:
  struct Impl;
  MappedFile(std::filesystem::path path, FileAccess access, std::unique_ptr<Impl> impl);

  std::filesystem::path path_;
  FileAccess access_;
  std::unique_ptr<Impl> impl_;
  ByteSpan bytes_;
};

}  // namespace onnxzip

#endif  // ONNXZIP_MAPPED_FILE_H_
