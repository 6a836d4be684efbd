// Internal: CRC-32s computed beside a write. crc32_of reads the bytes of a file mapping with
// pread instead of through the mapping; CrcJobQueue computes the CRC-32s of byte ranges of a file
// (a writer's output, read back) on a thread of its own and on the caller's when that thread
// falls behind, so that a writer copies entries on one core while the other checksums them.
#ifndef ONNXZIP_SRC_CRC_WORKER_H_
#define ONNXZIP_SRC_CRC_WORKER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "onnxzip/bytes.h"
#include "posix_file.h"

namespace onnxzip::detail {

// Also given every piece of the bytes a CRC-32 is computed over, in order, on the thread that
// computes it, while the piece is in that core's cache (a writer's SHA-256 for `__DIGESTS`).
using PieceObserver = std::function<void(ByteSpan)>;

// crc32(bytes, previous), each piece also handed to `observer` when given, where bytes of a file
// mapping are read from the file with pread into `buffer` (page-aligned, made on first use; see
// kReadBufferAlignment), not through the mapping: its page faults cost several times the CRC
// itself, and a file truncated under it would raise SIGBUS. Error(kIo) when the file cannot be
// read to the end (a read error, or the file shrank), its message naming the file offset.
std::uint32_t crc32_of(ByteSpan bytes, std::uint32_t previous, OwnedBytes& buffer,
                       const PieceObserver* observer = nullptr);

// The worker threads a writer's CrcJobQueue gets: 1, unless a test asked otherwise
// (crc_worker_testing.h).
std::size_t crc_job_threads() noexcept;

// One CRC-32 to compute: of bytes [offset, offset + size) of the queue's file, read with pread,
// each piece also handed to `observer` when it is set.
struct CrcJob {
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  PieceObserver observer;
};

struct CrcJobResult {
  std::uint32_t crc = 0;
  // Set when the job failed: Error(kIo) naming the offset for a file that could not be read to
  // the end, or what the observer threw.
  std::exception_ptr error;
};

// CRC jobs over byte ranges of one file (a writer's output, read back), run in the background of
// the writer, their results handed back in submission order.
// At most `max_waiting` jobs wait for a thread: a submit() beyond that runs the newest waiting
// job on the caller's thread (its bytes were just written, so they are likeliest in that core's
// cache), which keeps both cores busy when checksums cost more than the copy (with SHA-256) and
// bounds how far the checksums trail the write. The caller's thread takes jobs in take_all() too.
// Each thread reads through a buffer of kReadPieceBytes: memory stays bounded whatever the job
// sizes. Not thread-safe: one caller thread. Jobs run in no fixed order; only the results are in
// order.
class CrcJobQueue final {
 public:
  static constexpr std::size_t kDefaultMaxWaiting = 4;

  // Reads `file` (its own descriptor, closed with the queue). `threads`: 1 for a worker thread
  // (started by the first submit()), 0 for none (every job runs in submit(), as when no thread
  // can be started).
  explicit CrcJobQueue(Fd file, std::size_t max_waiting = kDefaultMaxWaiting,
                       std::size_t threads = 1);
  // Stops the worker after the piece it is on, then closes the file; results not taken are
  // dropped.
  ~CrcJobQueue();
  CrcJobQueue(const CrcJobQueue&) = delete;
  CrcJobQueue& operator=(const CrcJobQueue&) = delete;

  void submit(CrcJob job);
  // The results not yet taken whose jobs are done, in submission order, up to the first job not
  // done. Never waits.
  std::vector<CrcJobResult> take_done();
  // Every result not yet taken, in submission order, after running waiting jobs on this thread
  // too and waiting for the worker's.
  std::vector<CrcJobResult> take_all();

  // For tests: the most jobs that waited for a thread at once, and how many ran on the caller's.
  std::size_t most_waiting() const noexcept { return most_waiting_; }
  std::size_t run_by_caller() const noexcept { return run_by_caller_; }

 private:
  enum class State : std::uint8_t { kWaiting, kRunning, kDone };
  struct Slot {
    CrcJob job;
    State state = State::kWaiting;
    CrcJobResult result;
  };

  void run_worker();
  // Runs the job of slot `ticket` (taken from waiting_ under the lock) on this thread.
  void run_on_caller(std::unique_lock<std::mutex>& lock, std::uint64_t ticket);
  CrcJobResult compute(const CrcJob& job, OwnedBytes& buffer) const noexcept;
  // Hands the result of slot `ticket`'s job in, under the lock.
  void store(std::uint64_t ticket, CrcJobResult result);
  Slot& slot(std::uint64_t ticket) { return slots_[ticket - first_ticket_]; }
  std::vector<CrcJobResult> take_done_locked();

  const Fd file_;  // Closed only after the thread is joined (the destructor's body).
  const std::size_t max_waiting_;
  bool use_thread_;
  std::mutex mutex_;
  std::condition_variable wake_worker_;
  std::condition_variable job_done_;
  std::deque<Slot> slots_;             // From the first result not taken, in submission order.
  std::uint64_t first_ticket_ = 0;     // The ticket of slots_.front().
  std::deque<std::uint64_t> waiting_;  // Tickets of the jobs no thread has taken, oldest first.
  std::atomic<bool> stop_{false};
  std::size_t most_waiting_ = 0;
  std::size_t run_by_caller_ = 0;
  // Each thread's pread buffer, page-aligned (kReadBufferAlignment); made by submit(), where an
  // allocation failure reaches the caller.
  OwnedBytes worker_buffer_;
  OwnedBytes caller_buffer_;
  std::thread thread_;  // Last: joined before the members it uses go.
};

}  // namespace onnxzip::detail

#endif  // ONNXZIP_SRC_CRC_WORKER_H_
