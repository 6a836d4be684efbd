// A read-only memory mapping of a whole file.
//
// MappedFile owns the mapping; bytes() borrows from it. Open it through MappedFile::open, which
// returns a shared_ptr so the mapping can serve as the OwnerToken of every tensor that borrows
// from it: the mapping lives until the last such tensor is gone. This is the only place the
// library maps files (through Boost.Iostreams). Any module may use it.
#ifndef ONNXZIP_MAPPED_FILE_H_
#define ONNXZIP_MAPPED_FILE_H_

#include <filesystem>
#include <memory>

#include "onnxzip/bytes.h"

namespace onnxzip {

class MappedFile final {
 public:
  // Maps `path` read-only. An empty file maps to an empty span. Throws Error(kNotFound) when the
  // file does not exist and Error(kIo) when it cannot be opened or mapped.
  static std::shared_ptr<const MappedFile> open(const std::filesystem::path& path);
  // Takes ownership of `fd`, an open, readable descriptor of a regular file (an unlinked
  // temporary file will do), and maps that file; `name` names it in errors. The descriptor is
  // closed when the MappedFile goes, or at once when this throws (kIo: not a regular file, cannot
  // be mapped; kInvalidArgument: fd < 0).
  static std::shared_ptr<const MappedFile> adopt(int fd, std::filesystem::path name);

  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  ByteSpan bytes() const noexcept { return bytes_; }
  const std::filesystem::path& path() const noexcept { return path_; }

  struct Impl;

 private:
  MappedFile(std::filesystem::path path, std::unique_ptr<Impl> impl, ByteSpan bytes);

  std::filesystem::path path_;
  std::unique_ptr<Impl> impl_;
  ByteSpan bytes_;
};

}  // namespace onnxzip

#endif  // ONNXZIP_MAPPED_FILE_H_
