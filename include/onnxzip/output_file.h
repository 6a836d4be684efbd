// An output file that appears at its destination complete or not at all.
//
// AtomicOutputFile writes to a temporary file in the destination's folder and renames it over
// the destination only in commit(). Destroying it without commit() (an exception unwinding, a
// caller giving up) removes the temporary and leaves the destination untouched. Writes are
// buffered; write_at() patches bytes already written (for headers whose fields are known only
// after the data). Used by every writer in the library.
#ifndef ONNXZIP_OUTPUT_FILE_H_
#define ONNXZIP_OUTPUT_FILE_H_

#include <cstdint>
#include <filesystem>
#include <vector>

#include "onnxzip/bytes.h"

namespace onnxzip {

struct OutputFileOptions {
  // fsync the file (and its folder) before and after the rename, so a power loss cannot leave an
  // empty destination. Off by default: it costs a full flush of the page cache for the file.
  bool durable = false;
  std::size_t buffer_size = 1 << 20;
};

class AtomicOutputFile final {
 public:
  explicit AtomicOutputFile(std::filesystem::path destination, OutputFileOptions options = {});
  ~AtomicOutputFile();
  AtomicOutputFile(const AtomicOutputFile&) = delete;
  AtomicOutputFile& operator=(const AtomicOutputFile&) = delete;

  // Appends at the current position.
  void write(ByteSpan bytes);
  // Appends `count` zero bytes.
  void write_zeros(std::uint64_t count);
  // Overwrites bytes already written, at [offset, offset + size). Does not move the position.
  void write_at(std::uint64_t offset, ByteSpan bytes);
  std::uint64_t position() const noexcept { return position_; }

  // Flushes, renames the temporary over the destination. Afterwards no write is allowed.
  void commit();
  bool committed() const noexcept { return fd_ < 0 && committed_; }

  const std::filesystem::path& destination() const noexcept { return destination_; }
  const std::filesystem::path& temporary_path() const noexcept { return temporary_; }

 private:
  void flush_buffer();
  void write_fully(const std::uint8_t* data, std::size_t size, std::uint64_t offset);
  void ensure_open(const char* operation) const;
  void discard() noexcept;

  std::filesystem::path destination_;
  std::filesystem::path temporary_;
  OutputFileOptions options_;
  int fd_ = -1;
  bool committed_ = false;
  std::uint64_t position_ = 0;          // Logical end of the file, buffer included.
  std::uint64_t flushed_position_ = 0;  // Bytes already handed to the OS.
  std::vector<std::uint8_t> buffer_;
};

}  // namespace onnxzip

#endif  // ONNXZIP_OUTPUT_FILE_H_
