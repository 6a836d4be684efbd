// Private to the library: the interrupted edit record of spec §9.6 -- what an in-place edit of
// an archive's model writes past the end of the file, so that the file reads as the old archive
// or the new one at every instant -- its bytes, and how every reader of an .onnxz file honours
// it: the archive is the file's first bytes up to where the record points, the rest a finding.
// The writing side is tail_edit.h.
#ifndef ONNXZIP_SRC_INTERRUPTED_EDIT_H_
#define ONNXZIP_SRC_INTERRUPTED_EDIT_H_

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "onnxzip/bytes.h"
#include "onnxzip/internal/byte_source.h"
#include "onnxzip/internal/mapped_file.h"
#include "onnxzip/internal/zip_reader.h"

namespace onnxzip::archive_detail {

// The archive is the file's first `new_end` bytes when the bytes from `new_start` to `new_end`
// have the CRC-32 `new_crc32` (the new tail was written whole), else its first `old_end` bytes.
// Not a ZIP record (APPNOTE knows nothing of it); its signature is ASCII.
struct InterruptedEditRecord {
  static constexpr std::uint64_t kSignature = 0x5444455A584E4E4Full;  // "ONNXZEDT"
  static constexpr std::size_t kSize = 48;
  std::uint64_t old_end = 0;
  std::uint64_t record_offset = 0;  // Where the record itself starts.
  std::uint64_t new_start = 0;
  std::uint64_t new_end = 0;
  std::uint32_t new_crc32 = 0;

  // Writes exactly kSize bytes (Error(kInvalidArgument) when `out` is shorter).
  void encode(MutableByteSpan out) const;
  // The record in the kSize bytes `bytes` begins with, whose signature the caller checked.
  static InterruptedEditRecord decode(ByteSpan bytes);
};

// The ZipTrailerResolver of spec §9.6: when `source` ends with an interrupted edit record, the
// archive it points to, with the finding a verify reports; nullopt when it ends with none.
// Error(kCorrupt) naming the source and the record's offset for a record that is not where it
// says or names its parts out of order.
std::optional<ZipTrailer> interrupted_edit_trailer(const ByteSource& source);

// The ZIP of an .onnxz file, read through an interrupted edit record when the file ends with one.
// A path's tail is read under the readers' lock (posix_file.h SharedFileLock), and a file that
// changed while it was read is Error(kChanged).
ZipReader open_zip(std::shared_ptr<const ByteSource> source, const ZipReaderOptions& options);
ZipReader open_zip(const std::filesystem::path& path, const ZipReaderOptions& options,
                   FileAccess access);
// The same as a ZipDirectory, for what needs the tail only (a remote archive, an in-place edit).
ZipDirectory open_zip_directory(std::shared_ptr<const ByteSource> source,
                                const ZipReaderOptions& options);

}  // namespace onnxzip::archive_detail

#endif  // ONNXZIP_SRC_INTERRUPTED_EDIT_H_
