// Private to the zip layer: the local headers of a ZIP archive's entries, checked against their
// central records, and the data descriptors after their data (APPNOTE 4.3.7 to 4.3.9) -- at open
// for the entries the reader locates then (read ahead on a second thread), and for the others of
// a ZipDirectory when their data is read.
#ifndef ONNXZIP_SRC_ZIP_LOCAL_HEADERS_H_
#define ONNXZIP_SRC_ZIP_LOCAL_HEADERS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "onnxzip/internal/zip_reader.h"
#include "zip_held_bytes.h"
#include "zip_parse.h"

namespace onnxzip::zip {

// Reads one entry's local header and checks it against its central record: sets its
// local layout (ZipEntry::local) and zip64.
class LocalHeaderReader final {
 public:
  // Bytes [offset, offset + size) of the archive, asked for within the entry's limit: from its
  // local header offset up to the next entry's, or to the central directory.
  using Bytes = std::function<ByteSpan(std::uint64_t offset, std::uint64_t size)>;

  // Findings go to `findings` and unknown extra field ids to `unknown_extras` (by central
  // index); either may be null, to drop them.
  LocalHeaderReader(const ZipPlaces& places, std::uint64_t directory_offset, Bytes bytes,
                    std::vector<ZipFinding>* findings, UnknownExtras* unknown_extras)
      : places_(places),
        directory_offset_(directory_offset),
        bytes_(std::move(bytes)),
        findings_(findings),
        unknown_extras_(unknown_extras) {}

  // Reads entry e's local header, `next` being the entry after it in the file (nullptr for the
  // last). `first`, when not empty, holds the header's first first_read_size() bytes, read ahead.
  void read(ZipEntry& e, const ZipEntry* next, ByteSpan first = {}) const;

  // An entry's bytes end at the next entry's local header, or at the central directory.
  std::uint64_t limit_of(const ZipEntry* next) const noexcept {
    return next != nullptr ? next->local_header_offset : directory_offset_;
  }
  // What read() asks for first: the fixed part, the name and (usually) the whole extra field.
  std::uint64_t first_read_size(const ZipEntry& e, const ZipEntry* next) const noexcept;
  // Where the bytes read() may ask for end: the longest header, the data and the longest data
  // descriptor, within limit_of(next). Requires e's local header offset before that limit.
  std::uint64_t reach(const ZipEntry& e, const ZipEntry* next) const noexcept;

 private:
  // A local header's fixed part, and its bytes up to the end of its extra field.
  struct LocalRecord {
    LocalFileHeader header;
    ByteSpan bytes;
  };
  struct LocalSizes {
    std::uint64_t compressed = 0;
    std::uint64_t uncompressed = 0;
  };

  std::string limit_text(const ZipEntry* next) const;
  void add_finding(ZipFindingKind kind, const std::string& entry, std::uint64_t offset,
                   std::string message) const {
    if (findings_ != nullptr) findings_->push_back({kind, entry, offset, std::move(message)});
  }
  LocalRecord local_record_of(const ZipEntry& e, const ZipEntry* next, ByteSpan first) const;
  void check_local_agrees(const ZipEntry& e, const LocalFileHeader& h,
                          std::string_view local_name) const;
  // The local header's sizes, with the zip64 record's where they hold the sentinel.
  template <typename Place>
  LocalSizes local_sizes(const LocalFileHeader& h, const std::optional<ExtraRecord>& zip64,
                         const Place& place) const;
  void compare_local_sizes(const ZipEntry& e, const LocalFileHeader& h,
                           const LocalSizes& sizes) const;
  void locate_entry_data(const ZipEntry& e, ZipLocalLayout& layout, const ZipEntry* next) const;
  std::uint64_t read_data_descriptor(const ZipEntry& e, std::uint64_t at, std::uint64_t limit,
                                     const ZipEntry* next) const;

  const ZipPlaces& places_;
  const std::uint64_t directory_offset_;
  const Bytes bytes_;
  std::vector<ZipFinding>* const findings_;
  UnknownExtras* const unknown_extras_;
};

// The copies of local headers a reader keeps, for ZipLocalLayout::local_extra: buffers that are
// filled up to their reserved capacity and no further, so that each keeps its address.
using LocalHeaderCopies = std::vector<std::vector<std::uint8_t>>;

// Reads at open the local headers of `entries` (in file order; the central directory at
// `directory_offset`) when `every_entry` (else none), checking in any case that
// no two entries share one and that the last lies before the central directory; findings about them
// (gaps, unknown extra fields...) go to `findings`. Headers come from `held` when it holds them and
// reading them in place is cheap, else as copies kept in `copies`.
void read_local_headers(std::vector<ZipEntry>& entries, std::uint64_t directory_offset,
                        bool every_entry, const HeldBytes& held, const ZipPlaces& places,
                        UnknownExtras& unknown_extras, std::vector<ZipFinding>& findings,
                        LocalHeaderCopies& copies);

// Test seam: false makes the open read local headers on one thread, in order, without reading
// them ahead (the plain twin of the read ahead, which tests compare it with); true (the
// default): ahead, on a second thread, for archives of many entries.
void set_local_header_prefetch_for_testing(bool enabled) noexcept;

}  // namespace onnxzip::zip

#endif  // ONNXZIP_SRC_ZIP_LOCAL_HEADERS_H_
