// Private to the zip layer: the bytes of an archive that its reader holds in memory.
//
// All of them when the source has them in memory (ByteSource::Access::kInMemory). For a mapped
// file or a source that reads ranges, the open reads the archive's tail -- end records, central
// directory, last entry -- from the end of the source down into memory of its own, in one read
// when they fit and one more read when they do not: hold_from() extends what is held downwards.
// A mapped file's tail is read, not mapped, because an in-place edit rewrites it (spec §9.6): a
// copy read under the readers' lock stays one archive, old or new, and a file that an edit
// shrinks below the mapping cannot raise SIGBUS in a read of the tail.
// Spans the parser took of earlier holdings (entry names, extra fields, comments) stay valid:
// every buffer read lives as long as the HeldBytes.
#ifndef ONNXZIP_SRC_ZIP_HELD_BYTES_H_
#define ONNXZIP_SRC_ZIP_HELD_BYTES_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "onnxzip/byte_source.h"
#include "onnxzip/bytes.h"
#include "zip_records.h"

namespace onnxzip::zip {

// For a source that reads ranges, the open holds the bytes of the archive's last entry (in an
// .onnxz, the model) with the central directory when they are at most this many; a larger last
// entry is read when it is asked for.
constexpr std::uint64_t kMaxHeldLastEntry = std::uint64_t{64} << 20;

class HeldBytes final {
 public:
  explicit HeldBytes(std::shared_ptr<const ByteSource> source);

  const ByteSource& source() const noexcept { return *source_; }
  // Whether every byte of the source is held (ByteSource::Access::kInMemory).
  bool holds_all() const noexcept { return source_->access() == ByteSource::Access::kInMemory; }

  // Holds the source's bytes from `from` (at most its size) to its end too: nothing to do when
  // they are held already, else one read of those that are not.
  void hold_from(std::uint64_t from);
  // The first byte held: bytes [start(), source().size()) are.
  std::uint64_t start() const noexcept { return start_; }
  bool holds(std::uint64_t offset, std::uint64_t length) const noexcept {
    return offset >= start_ && fits(offset - start_, length, held_.size());
  }
  // Held bytes [offset, offset + length); requires holds(offset, length).
  ByteSpan at(std::uint64_t offset, std::uint64_t length) const noexcept {
    return held_.subspan(static_cast<std::size_t>(offset - start_),
                         static_cast<std::size_t>(length));
  }
  // The held bytes up to `end` (at most the source's size), for the record decoders.
  FileBytes up_to(std::uint64_t end) const noexcept { return {at(start_, end - start_), start_}; }
  // Bytes [offset, offset + length) of the source (within it), borrowed: from what is held when
  // it holds them (no read) and, for a mapped file, they start at or past lent_below(); else read
  // from the source (a mapped file's: lent by the mapping, zero copy).
  TensorBytes read(std::uint64_t offset, std::uint64_t length) const;
  // For a mapped file: read() serves bytes from `offset` on from what is held, not from the
  // mapping -- the archive's last entry, which an in-place edit rewrites (spec §9.6), so that
  // what is read of it after the open is what the open read. Entries before it stay lent by
  // the mapping. Until called, a mapped file's reads all come from the mapping. Other sources
  // serve whatever is held.
  void serve_held_from(std::uint64_t offset) noexcept {
    if (source_->access() == ByteSource::Access::kMapped) served_from_ = offset;
  }

 private:
  std::shared_ptr<const ByteSource> source_;
  std::uint64_t start_;
  std::uint64_t served_from_;  // See serve_held_from().
  ByteSpan held_;
  // What keeps held_ and every earlier holding alive.
  std::vector<OwnerToken> owners_;
};

}  // namespace onnxzip::zip

#endif  // ONNXZIP_SRC_ZIP_HELD_BYTES_H_
