// Private to the library: the new tail of an edited archive (its last entries and central
// directory), and its writing in place, crash-safe by the protocol of spec §9.6 -- the writing
// side of the interrupted edit record (interrupted_edit.h). The ZIP bytes of the new tail come
// from the zip layer (zip_tail.h); the archive edit (edit.cpp) decides what the new
// entries hold.
#ifndef ONNXZIP_SRC_TAIL_EDIT_H_
#define ONNXZIP_SRC_TAIL_EDIT_H_

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "onnxzip/bytes.h"
#include "onnxzip/internal/zip_reader.h"
#include "zip_tail.h"

namespace onnxzip::archive_detail {

// An entry of a new tail: a stored entry named `name` holding `data`, whose CRC-32 is `crc`.
struct NewEntry {
  std::string name;
  OwnedBytes data;
  std::uint32_t crc = 0;
};

// What an edit writes, computed from the archive's tail alone (its central directory and the
// local headers of the entries from the one before `first` on): the entries from index `first`
// (file order) to the last replaced by `entries`, laid out as ZipWriter lays out entries from
// `start` on -- the length of the prefix the edit keeps byte for byte -- their data aligned to
// `alignment`. The local edit writes it in place (replace_tail); an edit in a bucket uploads it
// after a copy of the prefix.
struct NewTail {
  std::size_t first = 0;
  std::uint64_t start = 0;
  std::uint32_t alignment = 0;
  std::vector<NewEntry> entries;

  // The tail laid out from `position` on (zip::lay_out_tail), borrowing this tail's bytes.
  zip::EntryTail lay_out(const ZipDirectory& zip, std::uint64_t position) const;
  // The tail's bytes at `start`, whole: what follows the prefix in the edited archive.
  OwnedBytes bytes(const ZipDirectory& zip) const;
};

// The new tail of the archive `zip` from entry `first` on, with the alignment the archive
// declares. `start` is zip::entries_start(zip, first, size), which the caller has checked before
// any work on the new entries (it reads the local header of the entry before them: from a
// bucket, a request).
NewTail make_new_tail(const ZipDirectory& zip, std::size_t first, std::uint64_t start,
                      std::vector<NewEntry> entries);

// Where the new last entry went.
struct TailReplacement {
  std::uint64_t local_header_offset = 0;
  std::uint64_t data_offset = 0;
  std::uint64_t file_size = 0;  // The file's size afterwards.
};

// Writes `tail` (make_new_tail's, for the archive `zip` has read) over the archive's last
// entries, crash-safe. `fd` is the archive file, open for reading and writing, whose first
// zip.size() bytes are the archive and whose size is `file_size` (larger after an interrupted
// edit, spec §9.6: those bytes go with this edit). Cost: the new entries and central directory,
// written twice. The result names the last new entry.
//
// At every instant the file reads as the old archive or the new one (spec §9.6): (1) an
// interrupted edit record is written past the end of the file, naming the old archive and the
// place and CRC-32 of the new tail; (2) the new tail -- entries, central directory, end records
// -- is written before that record: a reader takes it for the archive once its bytes have that
// CRC-32, and the old archive until then; (3) the tail is written again, laid out for its final
// place, over the old entries; (4) the file is truncated after it. With `durable`, an fdatasync
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
// Errors: Error(kInvalidArgument) when the file would outgrow the system's largest size;
// Error(kIo) "no room for the edit" when the reservation fails (the file unchanged); Error(kIo)
// naming the file, the step, and what the file holds afterwards (the old archive when the
// failure came before the end of step 2; the new one, with the bytes of the interrupted edit in
// a gap before the entry, after it).
TailReplacement replace_tail(const ZipDirectory& zip, const NewTail& tail, int fd,
                             std::uint64_t file_size, bool durable);

// --- Test seam (tests only; nothing in the library sets it) ---

// The steps of replace_tail, in order.
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
