// Writing ZIP archives whose stored entries start on an aligned file offset.
//
// ZipWriter owns one output file from construction to finish(). Each entry is written once, in
// call order, as a stored (uncompressed) entry whose first data byte sits on a multiple of the
// chosen alignment, with the layout the .onnxz format decisions fix: padding in one 0xD935
// extra record after any zip64 extra, zip64 records only where a value needs them, reproducible
// headers (time 0, date 1980-01-01, UNIX mode 0644). Entries are either copied from
// a span or streamed from a producer in pieces, so memory never holds more than one piece.
// Nothing appears at the destination until finish() renames the finished file over it (or, for
// "s3://bucket/key", completes the multipart upload: output.h).
//
// Knows nothing of ONNX: the archive layer decides the names and the order (`__MODEL_PROTO`
// last). Internal to the library, not installed: the archive and convert layers use it.
#ifndef ONNXZIP_ZIP_WRITER_H_
#define ONNXZIP_ZIP_WRITER_H_

#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "crc_worker.h"
#include "onnxzip/bytes.h"
#include "onnxzip/entry_sink.h"
#include "onnxzip/error.h"
#include "output.h"
#include "posix_file.h"

namespace onnxzip {

// Given every byte of an entry, in order and in pieces, as the writer wrote it (a SHA-256 for
// `__DIGESTS`): for large data read back from the output on the thread that computes the CRC-32,
// possibly after add() returned.
using PieceObserver = detail::PieceObserver;

struct WrittenEntry;
// Called once an entry's CRC-32 is known, with the entry (its crc32 set), on the caller's thread,
// in the order the entries were added: within add() for small data, else within a later add(),
// settle() or finish(). An exception it throws fails the writer (kBadState afterwards) and
// propagates as is (repack reports a damaged input entry this way).
using EntryDone = std::function<void(const WrittenEntry&)>;

struct ZipWriterOptions {
  // Where every entry's data starts: a power of two in [64, 65536].
  std::uint32_t alignment = 64;
  // Forwarded to the output (output.h): a file's options.
  OutputFileOptions output{};
  // For a destination "s3://bucket/key", the upload's (s3_upload.h).
  S3Options s3{};
  // Forwarded to a file output: the write buffer; pieces at least this big bypass it.
  std::size_t buffer_size = std::size_t{1} << 20;
};

// What the writer put in the file for one entry.
struct WrittenEntry {
  std::string name;
  std::uint64_t local_header_offset = 0;
  std::uint64_t data_offset = 0;  // A multiple of the writer's alignment.
  std::uint64_t size = 0;
  std::uint32_t crc32 = 0;
  bool zip64 = false;  // True when a header of the entry carries a zip64 extra field.
};

class ZipWriter final {
 public:
  // Creates the temporary output file next to `destination` (or starts the upload of an
  // s3://bucket/key, with options.s3). Throws Error(kInvalidArgument) for
  // an alignment that is not a power of two in [64, 65536] and Error(kIo) when the temporary
  // cannot be created.
  explicit ZipWriter(std::filesystem::path destination, ZipWriterOptions options = {});
  // Continues the archive whose first entries, `written` (with their CRC-32s, in file order), are
  // already in `file`, whose position is the end of the last one: the tail of an archive written
  // in parts (parts.h). Error(kInvalidArgument) for a name given twice.
  ZipWriter(std::unique_ptr<Output> file, std::vector<WrittenEntry> written,
            std::uint32_t alignment);
  // Without a successful finish() the temporary is removed and the destination is untouched.
  ~ZipWriter();
  ZipWriter(ZipWriter&& other) noexcept;
  ZipWriter& operator=(ZipWriter&& other) noexcept;
  ZipWriter(const ZipWriter&) = delete;
  ZipWriter& operator=(const ZipWriter&) = delete;

  // Adds an entry holding `data`; bytes of a file mapping (MappedFile, e.g. the payloads of a
  // loaded model) are copied by the kernel from the file (AtomicOutputFile::write). The CRC-32 of
  // large data is computed later from the written bytes, read back from the output by a second
  // thread (or by this one when that thread falls behind: crc_worker.h) while later entries are
  // copied, so `data` need not outlive the call; its local header is written once the CRC is
  // known. `observer`, when given, is handed the bytes as the CRC-32 is computed, and `done`
  // called with the finished entry (EntryDone); both are copied and kept until then. An Error of
  // the read-back or the observer fails the writer, naming the entry, from whichever call
  // collects it. The returned reference is valid until the next add(); its crc32 is 0 until
  // `done` was called for it.
  // Throws Error(kInvalidArgument) for a name breaking the ZIP naming rule (validate_name) or
  // already used (also when only ASCII case differs), leaving the writer usable;
  // Error(kBadState) after finish() or after a failed entry. The .onnxz rule for names is the
  // archive layer's (archive.h, entry_name_problem), checked before it calls add().
  const WrittenEntry& add(std::string_view name, ByteSpan data,
                          const PieceObserver& observer = nullptr, const EntryDone& done = nullptr);

  // Adds an entry of exactly `size` bytes that `producer` writes into the sink in pieces
  // (exporters that never hold a whole tensor). A producer that writes fewer or more bytes gets
  // Error(kInvalidArgument) naming the entry; an exception from the producer propagates as is.
  // Either way the writer is unusable afterwards (kBadState) and the destination untouched.
  // The producer must not call back into this writer. `observer` and `done` as for the other
  // add().
  const WrittenEntry& add(std::string_view name, std::uint64_t size, const EntryProducer& producer,
                          const PieceObserver& observer = nullptr, const EntryDone& done = nullptr);

  // Waits for every CRC-32 under way (taking a share of them on this thread), writes their local
  // headers and calls every `done` not yet called, so that every entry's crc32 is known. The
  // errors add() describes for them; Error(kBadState) after finish() or a failed entry.
  void settle();

  // settle(), then writes the central directory, the zip64 end record and locator when a count,
  // size or offset needs them, and the end record, then renames the file over the destination.
  // Afterwards only the accessors are allowed.
  void finish();

  const std::vector<WrittenEntry>& entries() const noexcept { return entries_; }
  std::uint32_t alignment() const noexcept { return alignment_; }

  // The ZIP naming rule (APPNOTE 4.4.17.1): a relative path of 1 to 65,535 bytes with '/'
  // separators. Refused as well, since an extractor would put them elsewhere than meant or
  // nowhere: a NUL byte, a backslash, a leading or trailing '/', and an empty, "." or ".."
  // component. Throws Error(kInvalidArgument) quoting the name and saying what it breaks.
  static void validate_name(std::string_view name);

 private:
  void ensure_usable(const char* operation) const;
  void check_unique(std::string_view name) const;
  ErrorContext entry_label(std::string_view name) const;
  void check_size(std::string_view name, std::uint64_t size) const;
  void remember(WrittenEntry entry);
  // Queues the CRC-32 of entries_.back(), whose data is written, then completes what is done.
  // `head` is its gap and local header (CRC 0) to write at `head_offset` once the CRC is known;
  // empty when the header is written already, with a CRC of 0.
  void defer_crc(std::uint64_t head_offset, std::vector<std::uint8_t> head,
                 const PieceObserver& observer, const EntryDone& done);
  // Gives entries_.back() its (known) CRC-32 after those still under way before it.
  void complete_now(const EntryDone& done);
  // Hands `results` to the pending entries waiting for them, in order, writes their headers, and
  // completes the entries at the front whose CRC is known.
  void complete(std::vector<detail::CrcJobResult> results);
  void settle_jobs();
  void write_central_directory();

  // An entry whose `done` has not been called yet: its CRC-32 is under way, or is known but an
  // entry before it is still under way.
  struct PendingEntry {
    std::size_t index = 0;  // In entries_.
    std::uint64_t head_offset = 0;
    std::vector<std::uint8_t> head;  // See defer_crc.
    bool crc_known = false;
    EntryDone done;
  };

  std::unique_ptr<Output> file_;  // A file, or an upload into a bucket (output.h).
  // For large entries, made on first use; reads the output through a descriptor of its own.
  std::unique_ptr<detail::CrcJobQueue> crc_jobs_;
  std::deque<PendingEntry> pending_;
  std::uint32_t alignment_ = 64;
  std::vector<WrittenEntry> entries_;
  // ASCII-lower-cased name -> index in entries_, so case-only duplicates are found in O(1).
  std::unordered_map<std::string, std::size_t> lowered_names_;
  bool finished_ = false;
  bool failed_ = false;       // An entry failed half-written: the file is inconsistent.
  bool in_producer_ = false;  // Guards against a producer calling back into the writer.
};

}  // namespace onnxzip

#endif  // ONNXZIP_ZIP_WRITER_H_
