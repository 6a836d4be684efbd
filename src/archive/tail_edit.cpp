#include "tail_edit.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "check.h"
#include "crc32.h"
#include "interrupted_edit.h"
#include "onnxzip/error.h"
#include "onnxzip/internal/zip_reader.h"
#include "zip_tail.h"

namespace onnxzip::archive_detail {
namespace {

constexpr std::uint64_t kMaxAlignment = 65536;
constexpr std::uint64_t kRecordSize = InterruptedEditRecord::kSize;
// The record never crosses a multiple of this: storage writes a sector whole or not at all, so a
// power loss cannot leave half a record (spec §9.6).
constexpr std::uint64_t kSectorSize = 512;
// The largest file offset the OS accepts (off_t).
constexpr std::uint64_t kMaxFileSize = std::numeric_limits<std::int64_t>::max();

TailStepHook& step_hook() {
  static TailStepHook hook;
  return hook;
}

// More than the new tail, written twice, can take: the entry and the central directory, each
// with headers and padding, and the end records and comment.
std::uint64_t largest_tails(const ZipDirectory& zip, const NewTail& tail) {
  std::uint64_t data = 0;
  for (const NewEntry& entry : tail.entries) {
    if (entry.data.size() > kMaxFileSize / 4 - data) {
      return std::numeric_limits<std::uint64_t>::max();
    }
    data += entry.data.size() + kMaxAlignment;
  }
  return 2 * (data + zip.central_directory_size()) + (std::uint64_t{1} << 20);
}

// The first offset from `at` on where the record lies within one sector.
std::uint64_t record_place(std::uint64_t at) {
  return at % kSectorSize + kRecordSize <= kSectorSize ? at : at + kSectorSize - at % kSectorSize;
}

// Checked before anything is written, so that no offset of the edit can overflow: the file,
// `extra` bytes after it, and the record stay within the system's largest file size.
void check_room(const ZipDirectory& zip, std::uint64_t file_size, std::uint64_t extra,
                const std::string& what) {
  if (extra > kMaxFileSize / 2 || file_size > kMaxFileSize - extra - kSectorSize - kRecordSize) {
    throw Error(ErrorCode::kInvalidArgument, {.file = zip.source_name()},
                std::string(what) + " would take the file past the largest size the system allows");
  }
}

class TailWriter final {
 public:
  TailWriter(const ZipDirectory& zip, int fd, bool durable)
      : source_(zip.source_name()), fd_(fd), durable_(durable) {}

  // What the file holds should the next step fail, for the error message.
  void set_aftermath(std::string text) { aftermath_ = std::move(text); }

  void write(std::uint64_t offset, ByteSpan bytes, const char* what) {
    while (!bytes.empty()) {
      const ssize_t n = ::pwrite(fd_, bytes.data(), bytes.size(), static_cast<off_t>(offset));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail(what, n < 0 ? errno : ENOSPC);
      bytes = bytes.subspan(static_cast<std::size_t>(n));
      offset += static_cast<std::uint64_t>(n);
    }
  }
  void write(const zip::EntryTail& tail, std::uint64_t offset, const char* what) {
    for (const zip::EntryTail::Part& part : tail.entries) {
      write(offset, part.head, what);
      write(offset + part.head.size(), part.data, what);
      offset += part.head.size() + part.data.size();
    }
    write(offset, tail.rest, what);
  }
  // Allocates the blocks of [offset, end) the file lacks, keeping its size, so that no later
  // write of the edit runs out of space: the bytes between the archive and the new tail of step
  // 2 are a hole until step 3 writes there. A file system without fallocate is written as it
  // comes. Error(kIo) "no room for the edit" otherwise, with what the file holds (unchanged: the
  // blocks this allocated past the end are freed again).
  void reserve(std::uint64_t offset, std::uint64_t end, std::uint64_t file_size) {
    int result = 0;
    do {
      result = ::fallocate(fd_, FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
                           static_cast<off_t>(end - offset));
    } while (result != 0 && errno == EINTR);
    if (result == 0) return;
    const int error = errno;
    if (error == EOPNOTSUPP || error == ENOSYS) return;
    if (end > file_size) {
      static_cast<void>(::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                                    static_cast<off_t>(file_size),
                                    static_cast<off_t>(end - file_size)));
    }
    throw Error(ErrorCode::kIo, {.file = source_},
                std::string("editing in place: no room for the edit (") +
                    std::to_string(end - offset) + " bytes from offset " + std::to_string(offset) +
                    " reserved before the first write): " + std::strerror(error) + "; " +
                    aftermath_);
  }
  void truncate(std::uint64_t size, const char* what) {
    while (::ftruncate(fd_, static_cast<off_t>(size)) != 0) {
      if (errno != EINTR) fail(what, errno);
    }
  }
  // The end of a step: the test hook, and with durable the barrier before the next one.
  void step(TailStep done, bool barrier = true) {
    if (step_hook()) step_hook()(done, false);
    if (!durable_ || !barrier) return;
    if (::fdatasync(fd_) != 0) fail("cannot flush the file to disk", errno);
    if (step_hook()) step_hook()(done, true);
  }

 private:
  [[noreturn]] void fail(const char* what, int error) const {
    throw Error(
        ErrorCode::kIo, {.file = source_},
        std::string("editing in place: ") + what + ": " + std::strerror(error) + "; " + aftermath_);
  }

  const std::string& source_;
  const int fd_;
  const bool durable_;
  std::string aftermath_ = "the archive is unchanged";
};

// The interrupted edit record of step 1 for the new tail `temporary`, laid out at `offset`
// after the archive `zip` read from a file of `file_size` bytes.
InterruptedEditRecord record_for(const ZipDirectory& zip, const zip::EntryTail& temporary,
                                 std::uint64_t offset, std::uint64_t file_size) {
  InterruptedEditRecord record;
  record.old_end = zip.size();
  record.new_start = offset;
  record.new_end = offset + temporary.size();
  std::uint32_t tail_crc = 0;
  for (const zip::EntryTail::Part& part : temporary.entries) {
    tail_crc = crc32(part.data, crc32(part.head, tail_crc));
  }
  record.new_crc32 = crc32(temporary.rest, tail_crc);
  // Past the new tail, and past anything the file holds after the archive (an earlier
  // interrupted edit's record among it), so that the file ends with this record.
  record.record_offset = record_place(std::max(record.new_end, file_size));
  return record;
}

std::vector<zip::TailEntry> borrowed_entries(const NewTail& tail) {
  std::vector<zip::TailEntry> entries;
  entries.reserve(tail.entries.size());
  for (const NewEntry& entry : tail.entries) {
    entries.push_back({entry.name, entry.data.span(), entry.crc});
  }
  return entries;
}

}  // namespace

zip::EntryTail NewTail::lay_out(const ZipDirectory& zip, std::uint64_t position) const {
  const std::vector<zip::TailEntry> borrowed = borrowed_entries(*this);
  return zip::lay_out_tail(zip, first, position, borrowed, alignment);
}

OwnedBytes NewTail::bytes(const ZipDirectory& zip) const {
  const zip::EntryTail tail = lay_out(zip, start);
  OwnedBytes out(static_cast<std::size_t>(tail.size()));
  std::uint8_t* at = out.data();
  const auto put = [&](ByteSpan part) {
    if (!part.empty()) std::memcpy(at, part.data(), part.size());
    at += part.size();
  };
  for (const zip::EntryTail::Part& part : tail.entries) {
    put(part.head);
    put(part.data);
  }
  put(tail.rest);
  return out;
}

NewTail make_new_tail(const ZipDirectory& zip, std::size_t first, std::uint64_t start,
                      std::vector<NewEntry> entries) {
  NewTail tail;
  tail.first = first;
  tail.start = start;
  tail.alignment = zip::declared_alignment(zip);
  tail.entries = std::move(entries);
  return tail;
}

TailReplacement replace_tail(const ZipDirectory& zip, const NewTail& tail, int fd,
                             std::uint64_t file_size, bool durable) {
  const std::uint64_t start = zip::entries_start(zip, tail.first, file_size);
  ONNXZIP_DCHECK(start == tail.start);
  std::uint64_t data_size = 0;
  for (const NewEntry& entry : tail.entries) data_size += entry.data.size();  // Bytes in memory.
  check_room(zip, file_size, largest_tails(zip, tail),
             (tail.entries.size() == 1 ? "an entry of " : "entries of ") +
                 std::to_string(data_size) + " bytes");
  TailWriter writer(zip, fd, durable);
  const zip::EntryTail final_tail = tail.lay_out(zip, start);
  // The new tail goes after the archive and after the final tail's place, so that neither the
  // old archive nor step 3 overwrites it while it is the live one.
  const std::uint64_t temporary_offset = std::max(zip.size(), start + final_tail.size());
  const zip::EntryTail temporary_tail = tail.lay_out(zip, temporary_offset);
  const InterruptedEditRecord record = record_for(zip, temporary_tail, temporary_offset, file_size);
  std::array<std::uint8_t, kRecordSize> record_bytes{};
  record.encode(record_bytes);
  // Every block steps 1 to 3 write, before the first of them: a full disk fails the edit here,
  // with the file as it was, never at step 3 with the new tail live past a gap.
  writer.reserve(start, record.record_offset + kRecordSize, file_size);
  try {
    // Step 1: the record, first, so that the file ends with it while the new tail is written
    // before it; the old archive stays the live one until the tail is whole.
    writer.write(record.record_offset, record_bytes, "cannot write the interrupted edit record");
    writer.step(TailStep::kMark, false);
    // Step 2: the new tail. Once whole it has the record's CRC-32: it is the archive.
    writer.write(temporary_tail, record.new_start, "cannot write the new entry after the archive");
    writer.step(TailStep::kAppend);
  } catch (...) {
    // Before the switch the archive read is the live one: what the edit appended goes, and with
    // it whatever an earlier interrupted edit left after that archive.
    static_cast<void>(::ftruncate(fd, static_cast<off_t>(zip.size())));
    throw;
  }
  writer.set_aftermath(
      "the archive holds the new entry, after a gap of the bytes the edit left before it; "
      "editing it again or repacking it removes them");
  // Step 3: the tail again, in its final place over the old entry.
  writer.write(final_tail, start, "cannot write the new entry in its place");
  writer.step(TailStep::kMove);
  // Step 4: the temporary tail and the record go.
  writer.truncate(start + final_tail.size(), "cannot truncate the file after the new entry");
  // No barrier: the new entry is on disk already, and a truncation lost to a power loss leaves
  // the state of step 2, which reads the new entry too.
  writer.step(TailStep::kTruncate, false);
  return {final_tail.local_header_offset, final_tail.data_offset, start + final_tail.size()};
}

void set_tail_step_hook(TailStepHook hook) { step_hook() = std::move(hook); }

}  // namespace onnxzip::archive_detail
