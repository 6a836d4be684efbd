// Internal: CRC-32s computed on a thread of their own, so that a writer copies an entry's bytes
// on one core while the other reads them for the CRC: the ZIP writer then takes about as long as
// the copy alone.
#ifndef ONNXZIP_SRC_CRC_WORKER_H_
#define ONNXZIP_SRC_CRC_WORKER_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "file_extent.h"
#include "onnxzip/bytes.h"

namespace onnxzip::detail {

// Also given every piece of the bytes a CRC-32 is computed over, in order, on the thread that
// computes it, while the piece is in that core's cache (a writer's SHA-256 for `__DIGESTS`).
using PieceObserver = std::function<void(ByteSpan)>;

// crc32(bytes, previous), each piece also handed to `observer` when given, where bytes of a file
// mapping are read from the file with pread into `buffer` (page-aligned, made on first use; see
// CrcWorker::buffer_), not through the mapping: its page faults cost several times the CRC itself,
// and a file truncated under it would raise SIGBUS. Error(kIo) when the file cannot be read to the
// end (a read error, or the file shrank), its message naming the file offset.
std::uint32_t crc32_of(ByteSpan bytes, std::uint32_t previous, OwnedBytes& buffer,
                       const PieceObserver* observer = nullptr);

// One CRC at a time: start(), then the caller's copy of the same bytes, then wait(). Not
// thread-safe; the thread starts with the first start() and ends with the object.
class CrcWorker final {
 public:
  CrcWorker() = default;
  ~CrcWorker();
  CrcWorker(const CrcWorker&) = delete;
  CrcWorker& operator=(const CrcWorker&) = delete;

  // Starts computing crc32_of(bytes, previous, observer). `bytes` and `observer` must stay
  // valid, and `bytes` unchanged, until wait() returns; the observer runs on the worker's thread.
  // Without a thread (none could be started), the CRC is computed here and now.
  void start(ByteSpan bytes, std::uint32_t previous, const PieceObserver* observer = nullptr);
  // The CRC the last start() asked for. Error(kIo) when the file behind a mapping could not be
  // read to the end (a read error, or the file shrank), its message naming the file offset, or
  // the observer threw an Error (its message).
  std::uint32_t wait();

 private:
  struct Job {
    ByteSpan bytes;
    std::uint32_t previous = 0;
    const PieceObserver* observer = nullptr;
  };
  void run();
  // The CRC of a job; a read failure is described in `error`.
  std::uint32_t compute(const Job& job, std::string& error);

  std::mutex mutex_;
  std::condition_variable wake_;
  std::thread thread_;
  std::optional<Job> job_;  // Given to the thread, not yet taken.
  bool busy_ = false;       // A job started and not yet collected by wait().
  bool done_ = false;       // The thread finished the job.
  bool stop_ = false;
  std::uint32_t result_ = 0;
  std::string error_;
  // The thread's pread buffer, page-aligned: on some x86 CPUs (AMD EPYC here) the kernel copies
  // page cache into a destination 16 bytes off a 64-byte boundary, where malloc puts a large
  // block, six times slower (0.62 s against 0.11 s per GiB), which made the CRC, not the copy,
  // the pace of every conversion. Made by start(), where a failure reaches the caller.
  OwnedBytes buffer_;
};

}  // namespace onnxzip::detail

#endif  // ONNXZIP_SRC_CRC_WORKER_H_
