// Where an input's bytes come from: a mapped file, bytes in memory, or a file read in ranges.
//
// ByteSource is what readers (ZipReader) parse through: a fixed size, a name for errors, and
// reads of ranges. Sources differ in what a read costs, and access() says which kind a source is
// so that a reader asks for what is cheap:
//   kInMemory  every byte is in memory (a caller's buffer, or a file read whole with
//              FileAccess::kRead): read() borrows, and reading bytes in place costs nothing;
//   kMapped    every byte is mapped (FileAccess::kMap): read() borrows (zero copy), but each page
//              touched costs a fault, so small scattered reads are cheaper as copies (read_into);
//   kRanges    only the ranges asked for are read (a file read with pread, a remote file): read()
//              fills a buffer of its own, so a reader asks for few, large ranges.
// A source is immutable, and its calls may run concurrently. Any module may use this header.
//
// Every read names a range within size(): Error(kInvalidArgument) otherwise (readers check the
// untrusted offsets they read first). Bytes that cannot be got are Error(kIo) naming the source;
// a file that shrank since it was opened is Error(kChanged), never SIGBUS from a mapped source.
#ifndef ONNXZIP_BYTE_SOURCE_H_
#define ONNXZIP_BYTE_SOURCE_H_

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "onnxzip/bytes.h"
#include "onnxzip/internal/mapped_file.h"

namespace onnxzip {

// Bytes [offset, offset + length) of a source.
struct ByteRange {
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};

class ByteSource {
 public:
  enum class Access : std::uint8_t { kInMemory, kMapped, kRanges };

  virtual ~ByteSource() = default;

  virtual Access access() const noexcept = 0;
  // The number of bytes, fixed when the source was made.
  virtual std::uint64_t size() const noexcept = 0;
  // What errors call it: a path, or the name given to bytes in memory ("<memory>").
  virtual const std::string& name() const noexcept = 0;
  // Bytes [offset, offset + length), always a borrowed TensorBytes whose owner token keeps them
  // alive (for kInMemory the caller's token, which may be kNoOwner). kRanges reads into a buffer
  // of its own in which each byte's address is congruent to its offset modulo 64, so data aligned
  // in the file is aligned in memory.
  virtual TensorBytes read(std::uint64_t offset, std::uint64_t length) const = 0;
  // Copies bytes [offset, offset + out.size()) into `out`.
  virtual void read_into(std::uint64_t offset, MutableByteSpan out) const = 0;
  // read() of each range, in their order; a source that reads ranges may read several at once
  // (an HTTP source: one request each, in parallel).
  virtual std::vector<TensorBytes> read_ranges(std::span<const ByteRange> ranges) const;
  // Every byte, borrowed, for kInMemory and kMapped (valid while owner() is); empty for kRanges.
  virtual ByteSpan bytes() const noexcept { return {}; }
  // For kRanges: how many bytes at the end of the source its open already brought (an HTTP
  // source's first request), which a reader's first read of the tail should take; 0 for none.
  virtual std::uint64_t tail_size_held() const noexcept { return 0; }
  // What keeps bytes() alive: the mapping, the file read whole, or the caller's token.
  virtual const OwnerToken& owner() const noexcept { return kNoOwner; }

  // A file, mapped (kMapped) or read whole into memory (FileAccess::kRead: kInMemory); errors
  // as MappedFile::open's.
  static std::shared_ptr<const ByteSource> open(const std::filesystem::path& path,
                                                FileAccess access = FileAccess::kMap);
  // A file already opened and checked: its bytes, whatever its path names by now (kMapped;
  // kInMemory when it was read whole; kRanges, read through its descriptor, when it was opened
  // with FileAccess::kRanges). Error(kInvalidArgument) when `file` is null.
  static std::shared_ptr<const ByteSource> of_file(std::shared_ptr<const MappedFile> file);
  // A caller's bytes (kInMemory), borrowed: they must outlive the source and, when `owner` is
  // kNoOwner, every read of it; `owner` is handed to those reads.
  static std::shared_ptr<const ByteSource> of_bytes(ByteSpan bytes, OwnerToken owner,
                                                    std::string name = "<memory>");
  // A file read in ranges with pread() as they are asked for (kRanges); opening it reads
  // nothing, and checks it as MappedFile::open does (a regular file, opened without blocking). A
  // read that finds the file shorter than it was is Error(kChanged) saying it shrank.
  static std::shared_ptr<const ByteSource> open_ranges(const std::filesystem::path& path);
};

}  // namespace onnxzip

#endif  // ONNXZIP_BYTE_SOURCE_H_
