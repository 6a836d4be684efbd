#include "crc_worker.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <system_error>
#include <utility>

#include "check.h"
#include "crc32.h"
#include "crc_worker_testing.h"
#include "file_extent.h"
#include "onnxzip/error.h"

namespace onnxzip::detail {
namespace {

// Small enough to stay in the core's L2 cache between the read and the CRC (and the observer).
constexpr std::size_t kReadPieceBytes = std::size_t{256} << 10;
// pread buffers are page-aligned: on some x86 CPUs (AMD EPYC here) the kernel copies page cache
// into a destination 16 bytes off a 64-byte boundary, where malloc puts a large block, six times
// slower (0.62 s against 0.11 s per GiB), which made the CRC, not the copy, the pace of every
// conversion.
constexpr std::size_t kPageBytes = 4096;

void make_buffer(OwnedBytes& buffer) {
  if (buffer.empty()) buffer = OwnedBytes(kReadPieceBytes, kPageBytes);
}

// crc32 of bytes [offset, offset + size) of `descriptor`, read into `buffer` piece by piece, each
// piece also handed to `observer`. Returns early (any value) once `stop` is set. `what` names the
// file in errors.
std::uint32_t crc32_of_range(int descriptor, std::uint64_t offset, std::uint64_t size,
                             std::uint32_t previous, OwnedBytes& buffer,
                             const PieceObserver* observer, const char* what,
                             const std::atomic<bool>* stop = nullptr) {
  make_buffer(buffer);
  std::uint32_t crc = previous;
  while (size > 0) {
    if (stop != nullptr && stop->load(std::memory_order_relaxed)) return crc;
    const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(size, buffer.size()));
    const ssize_t n = ::pread(descriptor, buffer.data(), want, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      throw Error(ErrorCode::kIo, "cannot read " + std::string(what) + " at offset " +
                                      std::to_string(offset) +
                                      " for the CRC-32: " + std::strerror(errno));
    }
    if (n == 0) {
      throw Error(ErrorCode::kIo, std::string(what) + " ended at offset " + std::to_string(offset) +
                                      " while its CRC-32 was computed (was it truncated?)");
    }
    const ByteSpan piece(buffer.data(), static_cast<std::size_t>(n));
    crc = crc32(piece, crc);
    if (observer != nullptr) (*observer)(piece);
    offset += static_cast<std::uint64_t>(n);
    size -= static_cast<std::uint64_t>(n);
  }
  return crc;
}

}  // namespace

std::uint32_t crc32_of(ByteSpan bytes, std::uint32_t previous, OwnedBytes& buffer,
                       const PieceObserver* observer) {
  const std::optional<FileExtent> extent = file_extent_of(bytes);
  if (!extent && observer == nullptr) return crc32(bytes, previous);
  if (!extent) {
    // In pieces, so that the observer reads each one from the cache after the CRC.
    std::uint32_t crc = previous;
    for (ByteSpan rest = bytes; !rest.empty();) {
      const ByteSpan piece = rest.first(std::min(rest.size(), kReadPieceBytes));
      crc = crc32(piece, crc);
      (*observer)(piece);
      rest = rest.subspan(piece.size());
    }
    return crc;
  }
  return crc32_of_range(extent->descriptor, extent->offset, bytes.size(), previous, buffer,
                        observer, "the source file");
}

namespace {
std::atomic<std::size_t> configured_crc_job_threads{1};
}  // namespace

std::size_t crc_job_threads() noexcept { return configured_crc_job_threads.load(); }

void set_crc_job_threads(std::size_t threads) { configured_crc_job_threads.store(threads); }

CrcJobQueue::CrcJobQueue(Fd file, std::size_t max_waiting, std::size_t threads)
    : file_(std::move(file)), max_waiting_(max_waiting), use_thread_(threads > 0) {}

CrcJobQueue::~CrcJobQueue() {
  if (!thread_.joinable()) return;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
  }
  wake_worker_.notify_all();
  thread_.join();
}

CrcJobResult CrcJobQueue::compute(const CrcJob& job, OwnedBytes& buffer) const noexcept {
  CrcJobResult result;
  try {
    result.crc = crc32_of_range(file_.get(), job.offset, job.size, 0, buffer,
                                job.observer ? &job.observer : nullptr, "the file", &stop_);
  } catch (...) {
    // An Error of the read, or whatever the observer threw (memory exhaustion among them): it
    // must not end the thread, hence the process, but reach the caller.
    result.error = std::current_exception();
  }
  return result;
}

void CrcJobQueue::run_worker() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    wake_worker_.wait(lock, [&] { return stop_.load() || !waiting_.empty(); });
    if (stop_.load()) return;
    const std::uint64_t ticket = waiting_.front();
    waiting_.pop_front();
    slot(ticket).state = State::kRunning;
    // slots_ is a deque that only grows at the back and shrinks at the front past done slots:
    // the job stays where it is while it runs.
    const CrcJob& job = slot(ticket).job;
    lock.unlock();
    CrcJobResult result = compute(job, worker_buffer_);
    lock.lock();
    store(ticket, std::move(result));
    job_done_.notify_all();
  }
}

void CrcJobQueue::run_on_caller(std::unique_lock<std::mutex>& lock, std::uint64_t ticket) {
  slot(ticket).state = State::kRunning;
  const CrcJob& job = slot(ticket).job;
  ++run_by_caller_;
  lock.unlock();
  CrcJobResult result = compute(job, caller_buffer_);
  lock.lock();
  store(ticket, std::move(result));
}

void CrcJobQueue::store(std::uint64_t ticket, CrcJobResult result) {
  Slot& done = slot(ticket);
  done.result = std::move(result);
  done.state = State::kDone;
}

void CrcJobQueue::submit(CrcJob job) {
  // Allocated here, where a failure reaches the caller, not on the thread, where it could not.
  make_buffer(caller_buffer_);
  if (use_thread_ && !thread_.joinable()) {
    make_buffer(worker_buffer_);
    try {
      thread_ = std::thread([this] { run_worker(); });
    } catch (const std::system_error&) {
      use_thread_ = false;  // No thread to be had: every job runs here, in submit().
    }
  }
  std::unique_lock<std::mutex> lock(mutex_);
  const std::uint64_t ticket = first_ticket_ + slots_.size();
  slots_.push_back(Slot{.job = std::move(job), .state = State::kWaiting, .result = {}});
  if (!use_thread_) {
    run_on_caller(lock, ticket);
    return;
  }
  waiting_.push_back(ticket);
  if (waiting_.size() > max_waiting_) {
    const std::uint64_t newest = waiting_.back();
    waiting_.pop_back();
    run_on_caller(lock, newest);
  } else {
    wake_worker_.notify_one();
  }
  most_waiting_ = std::max(most_waiting_, waiting_.size());
  ONNXZIP_DCHECK(waiting_.size() <= max_waiting_);
}

std::vector<CrcJobResult> CrcJobQueue::take_done_locked() {
  std::vector<CrcJobResult> results;
  while (!slots_.empty() && slots_.front().state == State::kDone) {
    results.push_back(std::move(slots_.front().result));
    slots_.pop_front();
    ++first_ticket_;
  }
  return results;
}

std::vector<CrcJobResult> CrcJobQueue::take_done() {
  const std::lock_guard<std::mutex> lock(mutex_);
  return take_done_locked();
}

std::vector<CrcJobResult> CrcJobQueue::take_all() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!waiting_.empty()) {
    const std::uint64_t newest = waiting_.back();
    waiting_.pop_back();
    run_on_caller(lock, newest);
  }
  job_done_.wait(lock, [&] {
    return std::all_of(slots_.begin(), slots_.end(),
                       [](const Slot& s) { return s.state == State::kDone; });
  });
  return take_done_locked();
}

}  // namespace onnxzip::detail
