// Private to the library: replacing an archive's model entry in place, crash-safe by the
// protocol of spec §9.6 -- the writing side of the interrupted edit record (interrupted_edit.h).
// The ZIP bytes of the new tail come from the zip layer (zip_tail.h); the archive edit
// (archive_edit.cpp) decides what the new entry holds.
#ifndef ONNXZIP_SRC_TAIL_EDIT_H_
#define ONNXZIP_SRC_TAIL_EDIT_H_

#include <cstdint>
#include <functional>
#include <span>

#include "onnxzip/bytes.h"
#include "onnxzip/internal/zip_reader.h"
#include "zip_tail.h"

namespace onnxzip::archive_detail {

// Where the new last entry went.
struct TailReplacement {
  std::uint64_t local_header_offset = 0;
  std::uint64_t data_offset = 0;
  std::uint64_t file_size = 0;  // The file's size afterwards.
};

// Replaces the last entry of the archive `zip` has read -- it must be last in file and in central
// directory order, else Error(kInvalidArgument) -- by a stored entry of the same name holding
// `data` (whose CRC-32 is `crc`), laid out as ZipWriter lays out entries right after the entry
// before it, its data aligned to `alignment` (zip::lay_out_tail). `fd` is the archive file, open
// for reading and writing, whose first zip.size() bytes are the archive and whose size is
// `file_size` (larger after an interrupted edit, spec §9.6: those bytes go with this edit). Cost:
// the new entry and central directory, written twice.
//
// At every instant the file reads as the old archive or the new one (spec §9.6): (1) an
// interrupted edit record is written past the end of the file, naming the old archive and the
// place and CRC-32 of the new tail; (2) the new tail -- entry, central directory, end records --
// is written before that record: a reader takes it for the archive once its bytes have that
// CRC-32, and the old archive until then; (3) the tail is written again, laid out for its final
// place, over the old entry; (4) the file is truncated after it. With `durable`, an fdatasync
// follows steps 2 and 3 (the first makes the record and the new tail durable together, the
// second the final tail before the truncation can remove the record), so a power loss too leaves
// the old or the new archive, and the new one once this returns; without, a killed process does,
// and the page cache reaches the disk in any order. A failure before the end of step 2 takes
// back what was written: the file is then the archive read, without the bytes an earlier
// interrupted edit left after it.
//
// Before step 1 the blocks steps 1 to 3 write are reserved (fallocate, the file's size kept), so
// that a full disk fails the edit with the file unchanged rather than at step 3.
//
// Errors: those of zip::last_entry_start; Error(kInvalidArgument) when the file would outgrow
// the system's largest size; Error(kIo) "no room for the edit" when the reservation fails (the
// file unchanged); Error(kIo) naming the file, the step, and what the file holds
// afterwards (the old archive when the failure came before the end of step 2; the new one, with
// the bytes of the interrupted edit in a gap before the entry, after it).
TailReplacement replace_last_entry(const ZipDirectory& zip, ByteSpan data, std::uint32_t crc,
                                   std::uint32_t alignment, int fd, std::uint64_t file_size,
                                   bool durable);
// The same for the entries from index `first` (file order) to the last, replaced by `entries`
// (zip::entries_start says which archives allow it): the integrity entries and the model of
// spec §12 are rewritten together this way. The result names the last new entry.
TailReplacement replace_last_entries(const ZipDirectory& zip, std::size_t first,
                                     std::span<const zip::TailEntry> entries,
                                     std::uint32_t alignment, int fd, std::uint64_t file_size,
                                     bool durable);

// --- Test seam (tests only; nothing in the library sets it) ---

// The steps of replace_last_entry, in order.
enum class TailStep {
  kMark,      // Wrote the interrupted edit record (never flushed alone).
  kAppend,    // Wrote the new tail before it: once flushed, the new tail is the archive.
  kMove,      // Wrote the tail in its final place.
  kTruncate,  // Truncated the file after it: the record goes.
};
// Called after each step (synced = false) and, when durable, after its fdatasync (synced =
// true; kMark and kTruncate have none). A hook that throws fails the edit there, as a failing
// system call would; one that ends the process leaves the file as a crash at that instant would.
using TailStepHook = std::function<void(TailStep step, bool synced)>;
void set_tail_step_hook(TailStepHook hook);

}  // namespace onnxzip::archive_detail

#endif  // ONNXZIP_SRC_TAIL_EDIT_H_
