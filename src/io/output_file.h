// Output files that appear at their destination complete or not at all, alone or as a set.
//
// AtomicOutputFile writes to an unnamed temporary file in the destination's folder (O_TMPFILE; a
// hidden ".NAME.tmp.<hex>" file where the file system has no unnamed files) and gives it the
// destination's name only in commit(). Destroying it without commit() (an exception unwinding, a
// caller giving up) drops the temporary and leaves the destination untouched; a process killed
// mid-write leaves nothing behind either, since an unnamed file has no name to leave. Writes are
// buffered; write_at() patches bytes already written (for headers whose fields are known only
// after the data). Used by every writer in the library.
//
// What may be replaced: nothing but a regular file (or nothing at all). A destination that is a
// folder, a device, a FIFO or a socket is refused (Error(kInvalidArgument)) before anything is
// written and again just before the rename, so that `onnxzip convert m.onnx /dev/null` run as root
// cannot replace a device node. A symbolic link is refused too, unless follow_symlinks asks to
// replace the regular file it leads to (the link itself stays).
//
// commit_together() publishes several files as one set -- a model and the data files it refers
// to -- so that a crash at any instant leaves the old set, the new set, or no model, never a model
// next to another set's data. Internal to the library, not installed: every layer's writers use
// it; users set OutputFileOptions (output_options.h).
#ifndef ONNXZIP_OUTPUT_FILE_H_
#define ONNXZIP_OUTPUT_FILE_H_

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "onnxzip/bytes.h"
#include "onnxzip/output_options.h"
#include "output.h"
#include "posix_file.h"

namespace onnxzip {

namespace detail {
struct FileExtent;
struct SplicePipe;
}  // namespace detail

class AtomicOutputFile final : public Output {
 public:
  static constexpr std::size_t kDefaultBufferSize = std::size_t{1} << 20;

  // Checks the destination (see the header comment) and creates the temporary. Error
  // (kInvalidArgument) naming the destination for one that may not be replaced, Error(kIo) when
  // the temporary cannot be created.
  // Writes of fewer than `buffer_size` bytes are gathered into a buffer of that size.
  explicit AtomicOutputFile(std::filesystem::path destination, OutputFileOptions options = {},
                            std::size_t buffer_size = kDefaultBufferSize);
  ~AtomicOutputFile() override;
  AtomicOutputFile(const AtomicOutputFile&) = delete;

  // For many writers of one file (parts.h): makes a hidden temporary next to `destination`
  // (checked as the constructor checks it), preallocated to `size` bytes, and returns its name.
  // The file outlives the call: part writers open it by name, adopt() finishes it, and its
  // owner removes it (abort). Errors as the constructor's.
  static std::filesystem::path make_shared_temporary(const std::filesystem::path& destination,
                                                     const OutputFileOptions& options,
                                                     std::uint64_t size);
  // Takes over `temporary` (from make_shared_temporary for `destination`) with its first
  // `position` bytes written: writes append from there, commit() cuts the file at the end of
  // what was written and renames it. Destroyed without commit(), it leaves the temporary in place
  // for its owner. Error(kNotFound) when the temporary is gone, else as the constructor.
  static std::unique_ptr<AtomicOutputFile> adopt(std::filesystem::path destination,
                                                 std::filesystem::path temporary,
                                                 OutputFileOptions options, std::uint64_t position);
  AtomicOutputFile& operator=(const AtomicOutputFile&) = delete;

  // Appends at the current position. Bytes that lie in a live mapping of a MappedFile
  // (mapped_file.h) are copied by the kernel from that file (shared blocks or splice), never read
  // through the mapping; others are buffered or, when large, written directly. Error(kIo) naming
  // the destination when the write fails or the mapped source file ends before the bytes do
  // (it was truncated); the file is then abandoned.
  void write(ByteSpan bytes) override;
  // Appends `count` zero bytes.
  void write_zeros(std::uint64_t count) override;
  // Skips `count` bytes, for a header whose fields are known only after what follows it: they
  // read as zeros until write_at() fills them.
  void reserve(std::uint64_t count) override;
  // Overwrites bytes already written or reserved, at [offset, offset + size). Does not move the
  // position.
  void write_at(std::uint64_t offset, ByteSpan bytes) override;
  std::uint64_t position() const noexcept override { return position_; }
  // Hands the buffered bytes to the OS, so that reader() sees every byte written so far.
  void flush() override;
  // A descriptor of its own that reads the file being written (with pread; opened for reading
  // and writing for this), for checksums of what was written. It stays valid after commit() or
  // after the file was abandoned (the abandoned file's space is freed once it is closed).
  // Error(kIo) when the system has no descriptor to spare.
  detail::Fd reader() const override;
  bool can_read_back() const noexcept override { return true; }

  // Flushes and renames the temporary over the destination (checked again first). Afterwards no
  // write is allowed.
  void commit() override;
  bool committed() const noexcept { return committed_; }

  // Where the file will appear: the path given, or with follow_symlinks the file its link leads
  // to.
  const std::filesystem::path& destination() const noexcept { return destination_; }
  const std::string& name() const noexcept override { return name_; }
  // The temporary's name, or empty while it has none (an unnamed temporary before commit).
  const std::filesystem::path& temporary_path() const noexcept { return temporary_; }

 private:
  friend void commit_together(std::span<AtomicOutputFile* const> others, AtomicOutputFile& primary,
                              std::span<const std::filesystem::path> retired);

  struct Adopted {};
  AtomicOutputFile(Adopted, std::filesystem::path destination, std::filesystem::path temporary,
                   OutputFileOptions options, std::uint64_t position);
  void flush_buffer();
  void allocate_ahead(std::uint64_t count) noexcept;
  void copy_from_file(const detail::FileExtent& extent, ByteSpan bytes);
  std::uint64_t share_blocks(const detail::FileExtent& extent, std::uint64_t size);
  std::uint64_t copy_by_splice(const detail::FileExtent& extent, std::uint64_t done,
                               std::uint64_t size);
  std::size_t splice_out(detail::SplicePipe& pipe, std::size_t count, std::uint64_t offset);
  void empty_pipe(detail::SplicePipe& pipe, std::size_t count, std::uint64_t offset);
  void copy_through_buffer(const detail::FileExtent& extent, std::uint64_t done,
                           std::uint64_t size);
  void ensure_copy_buffer();
  [[noreturn]] void fail_source(int error, std::uint64_t source_offset,
                                const detail::FileExtent& extent, std::uint64_t size);
  void write_fully(const std::uint8_t* data, std::size_t size, std::uint64_t offset);
  [[noreturn]] void fail_write(int error, std::uint64_t offset);
  // Closes the file's descriptor; 0 or the errno of close().
  int close_file() noexcept;
  void ensure_open(const char* operation) const;
  void discard() noexcept;
  // commit() in two steps: seal() completes the file under a temporary name (fsync'd when
  // durable) and closes it; publish() checks the destination again and renames over it.
  void seal();
  void publish();

  std::filesystem::path destination_;
  std::string name_;  // destination_ as messages show it.
  std::filesystem::path folder_;
  std::filesystem::path temporary_;
  OutputFileOptions options_;
  std::size_t buffer_size_;
  int fd_ = -1;
  bool committed_ = false;
  bool adopted_ = false;                // The temporary is another's (adopt): kept when abandoned.
  std::uint64_t position_ = 0;          // Logical end of the file, buffer included.
  std::uint64_t flushed_position_ = 0;  // Bytes already handed to the OS.
  std::vector<std::uint8_t> buffer_;
  OwnedBytes copy_buffer_;        // Page-aligned, for copy_through_buffer; allocated on first use.
  bool may_share_blocks_ = true;  // Until a piece could not be shared (share_blocks).
  bool no_splice_ = false;        // The file systems refused splice: copies go through the buffer.
  bool no_allocate_ahead_ = false;  // The file system has no fallocate: blocks come as written.
};

// Publishes `primary` (a model) and `others` (the files it refers to) as one set; all must be in
// one folder and still uncommitted. Every file is completed under a temporary name first; then an
// existing primary is moved aside, each of `others` is renamed into place (an existing file moved
// aside first), the primary is renamed into place, and what was moved aside is removed. A crash
// at any instant therefore leaves the old set, the new set, or no primary at its name (with
// hidden leftovers only if the crash falls within the renames); a failure restores the old set
// and throws, leaving nothing new. Afterwards none of the files accepts writes. `retired` names
// files of the old set that the new one no longer has (a data file an earlier write needed):
// moved aside with the old set and removed with it, restored when the commit fails.
void commit_together(std::span<AtomicOutputFile* const> others, AtomicOutputFile& primary,
                     std::span<const std::filesystem::path> retired = {});

}  // namespace onnxzip

#endif  // ONNXZIP_OUTPUT_FILE_H_
