// Replacing the last entry of a ZIP file in place: the zip-level half of editing an .onnxz
// archive's model (spec §2.4: the model entry is last, so that it can change without moving a
// payload byte), crash-safe by the protocol of spec §9.6. Private to the library; the archive
// layer (src/archive_edit.cpp) decides what the new entry holds. Knows nothing of ONNX.
#ifndef ONNXZIP_SRC_ZIP_TAIL_H_
#define ONNXZIP_SRC_ZIP_TAIL_H_

#include <cstdint>
#include <functional>

#include "onnxzip/bytes.h"
#include "onnxzip/zip_reader.h"

namespace onnxzip::zip {

// Where the new last entry went.
struct TailReplacement {
  std::uint64_t local_header_offset = 0;
  std::uint64_t data_offset = 0;
  std::uint64_t file_size = 0;  // The file's size afterwards.
};

// Replaces the last entry of the archive `zip` has read -- it must be last in file and in central
// directory order, else Error(kInvalidArgument) -- by a stored entry of the same name holding
// `data` (whose CRC-32 is `crc`), laid out as ZipWriter lays out entries (zip_layout.h) right
// after the entry before it, its data aligned to `alignment`. Every other entry keeps its local
// header, data and central directory record byte for byte, and the archive keeps its comment.
// `fd` is the archive file, open for reading and writing, whose first zip.bytes().size() bytes
// are the archive and whose size is `file_size` (larger after an interrupted edit, spec §9.6:
// those bytes go with this edit). Cost: the new entry and central directory, written twice.
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
// Errors: those of check_last_entry_replaceable; Error(kInvalidArgument) when the file would
// outgrow the system's largest size; Error(kIo) naming the file, the step, and what the file
// holds afterwards (the old archive when the failure came before the end of step 2; the new one,
// with the bytes of the interrupted edit in a gap before the entry, after it).
TailReplacement replace_last_entry(const ZipReader& zip, ByteSpan data, std::uint32_t crc,
                                   std::uint32_t alignment, int fd, std::uint64_t file_size,
                                   bool durable);

// Whether replace_last_entry can replace the archive's last entry in a file of `file_size`
// bytes: Error(kInvalidArgument) when the last entry in the file is not the last one in the
// central directory, Error(kBadState) when the file is shorter than the archive read. Writes
// nothing: for a caller with work to do before it knows the new entry, which should not be done
// for an archive that cannot take it.
void check_last_entry_replaceable(const ZipReader& zip, std::uint64_t file_size);

// The alignment A the archive declares (spec §3.6): the value of the first 0xD935 record of a
// local header, when it is a power of two in [64, 65536]; else 64.
std::uint32_t declared_alignment(const ZipReader& zip);

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

}  // namespace onnxzip::zip

#endif  // ONNXZIP_SRC_ZIP_TAIL_H_
