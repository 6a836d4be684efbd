#include "onnxzip/output_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>
#include <string>

#include "onnxzip/error.h"

namespace onnxzip {
namespace {

std::string errno_text(int error) { return std::strerror(error); }

// Maps in the pages of `bytes` before write() copies from them. The kernel copies a write's
// source with page faults disabled: at a page not mapped yet (a file mapping nothing has read:
// the payloads of a model loaded with no_copy) the copy stops, the kernel faults the pages in and
// starts over, which made writing from a mapped archive about a fifth slower than `cp`. Reading
// one byte per page faults them in from user space instead, 16 pages per fault (the kernel's
// fault-around): about 25 ms per GiB, and 6 ms when the pages are mapped already (a heap buffer,
// a payload whose CRC-32 was just computed). MADV_POPULATE_READ takes about 50 ms either way.
// A source that is a mapping of a file truncated meanwhile raises SIGBUS here as it does in any
// read of the mapping (a CRC-32, a parse).
void touch_pages(ByteSpan bytes) {
  constexpr std::size_t kPage = 4096;
  if (bytes.empty()) return;
  const volatile std::uint8_t* const p = bytes.data();
  for (std::size_t at = 0; at < bytes.size(); at += kPage) static_cast<void>(p[at]);
  static_cast<void>(p[bytes.size() - 1]);
}

void sync_folder(const std::filesystem::path& folder) {
  const int dir_fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

}  // namespace

AtomicOutputFile::AtomicOutputFile(std::filesystem::path destination, OutputFileOptions options)
    : destination_(std::move(destination)), options_(options) {
  if (destination_.filename().empty()) {
    throw Error(ErrorCode::kInvalidArgument, destination_.string() + ": not a file name");
  }
  std::filesystem::path folder = destination_.parent_path();
  if (folder.empty()) folder = ".";
  // O_EXCL with a random name rather than mkstemp: the file gets 0666 minus the umask, the
  // permissions any ordinary new file of the user would get.
  std::random_device entropy;
  std::mt19937_64 random(static_cast<std::uint64_t>(entropy()) << 32 ^ entropy());
  for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
    char suffix[24];
    std::snprintf(suffix, sizeof suffix, ".tmp.%016llx", static_cast<unsigned long long>(random()));
    // Built by appends: g++ 12 at -O3 misreports `"." + string` as an overlapping memcpy.
    std::string name(".");
    name += destination_.filename().string();
    name += suffix;
    temporary_ = folder / name;
    fd_ = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0 && errno != EEXIST) {
      throw Error(ErrorCode::kIo, destination_.string() + ": cannot create temporary file " +
                                      temporary_.string() + ": " + errno_text(errno));
    }
  }
  if (fd_ < 0) {
    throw Error(ErrorCode::kIo, destination_.string() + ": cannot find a free temporary name");
  }
  buffer_.reserve(options_.buffer_size);
}

AtomicOutputFile::~AtomicOutputFile() { discard(); }

void AtomicOutputFile::discard() noexcept {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
    ::unlink(temporary_.c_str());
  }
}

void AtomicOutputFile::ensure_open(const char* operation) const {
  if (fd_ < 0) {
    throw Error(ErrorCode::kBadState, destination_.string() + ": " + operation +
                                          " after the file was committed or abandoned");
  }
}

void AtomicOutputFile::write_fully(const std::uint8_t* data, std::size_t size,
                                   std::uint64_t offset) {
  while (size > 0) {
    const ssize_t n =
        ::pwrite(fd_, data, std::min<std::size_t>(size, 1u << 30), static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      discard();
      throw Error(ErrorCode::kIo, destination_.string() + ": write at offset " +
                                      std::to_string(offset) + " failed: " + errno_text(error));
    }
    data += n;
    size -= static_cast<std::size_t>(n);
    offset += static_cast<std::uint64_t>(n);
  }
}

void AtomicOutputFile::flush_buffer() {
  if (!buffer_.empty()) {
    write_fully(buffer_.data(), buffer_.size(), flushed_position_);
    flushed_position_ += buffer_.size();
    buffer_.clear();
  }
}

void AtomicOutputFile::write(ByteSpan bytes) {
  ensure_open("write");
  if (buffer_.size() + bytes.size() <= options_.buffer_size) {
    buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
  } else {
    flush_buffer();
    // Large pieces go straight to the kernel: copying them through the buffer costs a pass.
    if (bytes.size() >= options_.buffer_size) {
      touch_pages(bytes);
      write_fully(bytes.data(), bytes.size(), flushed_position_);
      flushed_position_ += bytes.size();
    } else {
      buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
    }
  }
  position_ += bytes.size();
}

void AtomicOutputFile::write_zeros(std::uint64_t count) {
  static constexpr std::uint8_t kZeros[4096] = {};
  while (count > 0) {
    const auto piece = static_cast<std::size_t>(std::min<std::uint64_t>(count, sizeof kZeros));
    write(ByteSpan(kZeros, piece));
    count -= piece;
  }
}

void AtomicOutputFile::write_at(std::uint64_t offset, ByteSpan bytes) {
  ensure_open("write_at");
  if (!fits(offset, bytes.size(), position_)) {
    throw Error(ErrorCode::kInvalidArgument,
                destination_.string() + ": write_at offset " + std::to_string(offset) + " length " +
                    std::to_string(bytes.size()) + " is past the written end " +
                    std::to_string(position_));
  }
  flush_buffer();
  write_fully(bytes.data(), bytes.size(), offset);
}

void AtomicOutputFile::commit() {
  ensure_open("commit");
  flush_buffer();
  if (options_.durable && ::fsync(fd_) != 0) {
    const int error = errno;
    discard();
    throw Error(ErrorCode::kIo, destination_.string() + ": fsync failed: " + errno_text(error));
  }
  if (::close(fd_) != 0) {
    const int error = errno;
    fd_ = -1;
    ::unlink(temporary_.c_str());
    throw Error(ErrorCode::kIo, destination_.string() + ": close failed: " + errno_text(error));
  }
  fd_ = -1;
  if (::rename(temporary_.c_str(), destination_.c_str()) != 0) {
    const int error = errno;
    ::unlink(temporary_.c_str());
    throw Error(ErrorCode::kIo, destination_.string() + ": cannot rename " + temporary_.string() +
                                    " over it: " + errno_text(error));
  }
  committed_ = true;
  if (options_.durable) {
    const auto folder = destination_.parent_path();
    sync_folder(folder.empty() ? std::filesystem::path(".") : folder);
  }
}

}  // namespace onnxzip
