// Where a writer's bytes go: one interface, two implementations. AtomicOutputFile (output_file.h)
// writes a local file that appears complete at commit(); S3Upload (s3_upload.h) writes an object
// in a bucket as a multipart upload that completes at commit(). Either way, destroying an Output
// without commit() leaves nothing behind (the temporary dropped, the upload aborted). The ZIP
// writer writes through it, so save, convert, repack and ArchiveWriter reach both.
#ifndef ONNXZIP_IO_OUTPUT_H_
#define ONNXZIP_IO_OUTPUT_H_

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "onnxzip/bytes.h"
#include "onnxzip/output_options.h"
#include "onnxzip/s3_options.h"
#include "posix_file.h"

namespace onnxzip {

class Output {
 public:
  virtual ~Output() = default;

  // Appends at the current position.
  virtual void write(ByteSpan bytes) = 0;
  // Appends `count` zero bytes.
  virtual void write_zeros(std::uint64_t count) = 0;
  // Skips `count` bytes that write_at() fills later (a header whose fields are known only after
  // what follows it). An upload holds back the part holding them until they are filled.
  virtual void reserve(std::uint64_t count) = 0;
  // Overwrites bytes already written or reserved, at [offset, offset + size). Does not move the
  // position. An upload takes only bytes of parts it still holds: reserved ones, or any in the
  // part being filled.
  virtual void write_at(std::uint64_t offset, ByteSpan bytes) = 0;
  virtual std::uint64_t position() const noexcept = 0;
  // Makes the output appear at its destination, complete. Afterwards no write is allowed.
  virtual void commit() = 0;
  // How messages name the destination: its path, or s3://bucket/key.
  virtual const std::string& name() const noexcept = 0;

  // Whether reader() can read back what was written (a file: yes; an upload: no).
  virtual bool can_read_back() const noexcept = 0;
  // Hands buffered bytes on, so reader() sees every byte written so far.
  virtual void flush() = 0;
  // A descriptor that reads what was written; only when can_read_back().
  virtual detail::Fd reader() const = 0;
};

// The Output for `destination`: an S3Upload for "s3://bucket/key" (with `s3`), else an
// AtomicOutputFile with `file`, gathering writes of fewer than `buffer_size` bytes. Their
// constructors' errors.
std::unique_ptr<Output> open_output(const std::filesystem::path& destination,
                                    const OutputFileOptions& file, const S3Options& s3,
                                    std::size_t buffer_size);

}  // namespace onnxzip

#endif  // ONNXZIP_IO_OUTPUT_H_
