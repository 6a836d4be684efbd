#include "crc_worker.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <utility>

#include "crc32.h"
#include "onnxzip/error.h"

namespace onnxzip::detail {
namespace {

// Small enough to stay in the second core's L2 cache between the read and the CRC.
constexpr std::size_t kReadPieceBytes = std::size_t{256} << 10;
constexpr std::size_t kPageBytes = 4096;

void make_buffer(OwnedBytes& buffer) {
  if (buffer.empty()) buffer = OwnedBytes(kReadPieceBytes, kPageBytes);
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
  make_buffer(buffer);
  std::uint32_t crc = previous;
  std::uint64_t offset = extent->offset;
  std::size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::pread(extent->descriptor, buffer.data(), std::min(left, buffer.size()),
                              static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      throw Error(ErrorCode::kIo, "cannot read the source file at offset " +
                                      std::to_string(offset) +
                                      " for the CRC-32: " + std::strerror(errno));
    }
    if (n == 0) {
      throw Error(ErrorCode::kIo, "the source file ended at offset " + std::to_string(offset) +
                                      " while its CRC-32 was computed (was it truncated?)");
    }
    const ByteSpan piece(buffer.data(), static_cast<std::size_t>(n));
    crc = crc32(piece, crc);
    if (observer != nullptr) (*observer)(piece);
    offset += static_cast<std::uint64_t>(n);
    left -= static_cast<std::size_t>(n);
  }
  return crc;
}

CrcWorker::~CrcWorker() {
  if (!thread_.joinable()) return;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

std::uint32_t CrcWorker::compute(const Job& job, std::string& error) {
  try {
    return crc32_of(job.bytes, job.previous, buffer_, job.observer);
  } catch (const Error& e) {
    error = e.message();
    return 0;
  } catch (const std::exception& e) {
    // From the observer (memory exhaustion): it must not end the thread, hence the process.
    error = e.what();
    return 0;
  }
}

void CrcWorker::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    wake_.wait(lock, [&] { return stop_ || job_.has_value(); });
    if (stop_) return;
    const Job job = *std::exchange(job_, std::nullopt);
    lock.unlock();
    std::string error;
    const std::uint32_t crc = compute(job, error);
    lock.lock();
    result_ = crc;
    error_ = std::move(error);
    done_ = true;
    wake_.notify_all();
  }
}

void CrcWorker::start(ByteSpan bytes, std::uint32_t previous, const PieceObserver* observer) {
  Job job{bytes, previous, observer};
  // Allocated here, where a failure reaches the caller, not on the thread, where it could not.
  if (file_extent_of(bytes)) make_buffer(buffer_);
  busy_ = true;
  if (!thread_.joinable()) {
    try {
      thread_ = std::thread([this] { run(); });
    } catch (const std::system_error&) {
      // No thread to be had: the CRC is computed here, before the copy instead of beside it.
      std::string error;
      result_ = compute(job, error);
      error_ = std::move(error);
      done_ = true;
      return;
    }
  }
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    done_ = false;
    job_ = std::move(job);
  }
  wake_.notify_all();
}

std::uint32_t CrcWorker::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!busy_) throw Error(ErrorCode::kBadState, "CRC-32 worker: wait() without start()");
  wake_.wait(lock, [&] { return done_; });
  busy_ = false;
  if (!error_.empty()) throw Error(ErrorCode::kIo, std::exchange(error_, std::string()));
  return result_;
}

}  // namespace onnxzip::detail
