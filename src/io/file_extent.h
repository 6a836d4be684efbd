// Internal: where a span of memory that is a file mapping lies in its file, so that writers can
// have the kernel copy those bytes (splice, shared blocks) or read them (pread) instead of touching
// the mapping page by page.
#ifndef ONNXZIP_SRC_FILE_EXTENT_H_
#define ONNXZIP_SRC_FILE_EXTENT_H_

#include <cstdint>
#include <optional>

#include "onnxzip/bytes.h"

namespace onnxzip::detail {

// A byte range of an open file: `descriptor` is the MappedFile's own (valid while the mapping
// lives), `offset` where the span starts in the file.
struct FileExtent {
  int descriptor = -1;
  std::uint64_t offset = 0;
};

// When all of `bytes` (not empty) lies inside one live memory mapping of a MappedFile
// (FileAccess::kMap), its descriptor and the offset of bytes.data() in the file; else nullopt
// (memory the process owns, a read file, an empty span). The caller keeps the mapping alive while
// it uses the descriptor, as it must to use `bytes` at all. A mapping shows the file as it is now,
// so the file's bytes at that range are the span's bytes.
std::optional<FileExtent> file_extent_of(ByteSpan bytes);

}  // namespace onnxzip::detail

#endif  // ONNXZIP_SRC_FILE_EXTENT_H_
