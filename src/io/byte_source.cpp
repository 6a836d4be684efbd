#include "onnxzip/internal/byte_source.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "onnxzip/error.h"
#include "onnxzip/internal/mapped_file.h"
#include "posix_file.h"
#include "posix_file_testing.h"
#include "read_range.h"

namespace onnxzip {
namespace {

// Reads [offset, offset + out.size()) of `fd` with pread; the number of bytes read, fewer only
// at the end of the file; -1 (errno set) when a read fails.
ssize_t pread_all(int fd, std::uint64_t offset, MutableByteSpan out) {
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t n =
        ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  return static_cast<ssize_t>(done);
}

// The bytes of a source that holds them all (kInMemory, kMapped).
class WholeSource : public ByteSource {
 public:
  WholeSource(ByteSpan bytes, OwnerToken owner, std::string name)
      : bytes_(bytes), owner_(std::move(owner)), name_(std::move(name)) {}

  std::uint64_t size() const noexcept final { return bytes_.size(); }
  const std::string& name() const noexcept final { return name_; }
  ByteSpan bytes() const noexcept final { return bytes_; }
  const OwnerToken& owner() const noexcept final { return owner_; }
  TensorBytes read(std::uint64_t offset, std::uint64_t length) const final {
    detail::check_read_range(*this, offset, length);
    return TensorBytes::borrowed(span(offset, length), owner_);
  }

 protected:
  ByteSpan span(std::uint64_t offset, std::uint64_t length) const noexcept {
    return bytes_.subspan(static_cast<std::size_t>(offset), static_cast<std::size_t>(length));
  }

 private:
  ByteSpan bytes_;
  OwnerToken owner_;
  std::string name_;
};

class MemorySource final : public WholeSource {
 public:
  using WholeSource::WholeSource;
  Access access() const noexcept override { return Access::kInMemory; }
  void read_into(std::uint64_t offset, MutableByteSpan out) const override {
    detail::check_read_range(*this, offset, out.size());
    if (!out.empty()) std::memcpy(out.data(), span(offset, out.size()).data(), out.size());
  }
};

// A mapped file. Copies come from the file by pread(), not from the mapping: touching a page of a
// mapping costs a fault that also maps the pages around it, and a page table per 2 MiB of file,
// all torn down again when the mapping goes: for an archive's local headers, several times what
// pread costs, and growing with the file (bench/zip_bench.cpp, BM_ReaderOpen).
class MappedSource final : public WholeSource {
 public:
  explicit MappedSource(std::shared_ptr<const MappedFile> file)
      : WholeSource(file->bytes(), file, file->path().string()), fd_(file->descriptor()) {}
  Access access() const noexcept override { return Access::kMapped; }
  void read_into(std::uint64_t offset, MutableByteSpan out) const override {
    detail::check_read_range(*this, offset, out.size());
    if (out.empty()) return;
    detail::run_file_read_hook(offset, out.size());
    const ssize_t n = pread_all(fd_, offset, out);
    if (n < 0) {
      throw Error(ErrorCode::kIo, {.file = name()},
                  "cannot read " + std::to_string(out.size()) + " bytes at offset " +
                      std::to_string(offset) + ": " + std::strerror(errno));
    }
    // Never from the mapping instead: past the file's new end that would be SIGBUS.
    if (static_cast<std::size_t>(n) != out.size()) {
      throw Error(ErrorCode::kChanged, {.file = name()},
                  "the file changed while it was being read: it shrank (a read at offset " +
                      std::to_string(offset) + " found its end at offset " +
                      std::to_string(offset + static_cast<std::uint64_t>(n)) + ")");
    }
  }

 private:
  int fd_;  // Lives as long as the MappedFile, which the owner token keeps.
};

class RangeSource final : public ByteSource {
 public:
  RangeSource(detail::Fd fd, std::uint64_t size, std::string name)
      : own_fd_(std::move(fd)), fd_(own_fd_.get()), size_(size), name_(std::move(name)) {}
  // A file opened with FileAccess::kRanges, read through its descriptor, which it keeps open.
  RangeSource(std::shared_ptr<const MappedFile> file, std::uint64_t size)
      : fd_(file->descriptor()),
        size_(size),
        name_(file->path().string()),
        file_(std::move(file)) {}

  Access access() const noexcept override { return Access::kRanges; }
  std::uint64_t size() const noexcept override { return size_; }
  const std::string& name() const noexcept override { return name_; }

  TensorBytes read(std::uint64_t offset, std::uint64_t length) const override {
    detail::check_read_range(*this, offset, length);
    // The first byte at the address its offset has modulo 64 (see the header).
    const std::size_t lead = static_cast<std::size_t>(offset % kDefaultBufferAlignment);
    const auto buffer = std::make_shared<OwnedBytes>(lead + static_cast<std::size_t>(length));
    const MutableByteSpan bytes = buffer->mutable_span().subspan(lead);
    read_into(offset, bytes);
    return TensorBytes::borrowed(bytes, buffer);
  }

  void read_into(std::uint64_t offset, MutableByteSpan out) const override {
    detail::check_read_range(*this, offset, out.size());
    const ssize_t n = pread_all(fd_, offset, out);
    if (n < 0) {
      throw Error(ErrorCode::kIo, {.file = name_},
                  "cannot read " + std::to_string(out.size()) + " bytes at offset " +
                      std::to_string(offset) + ": " + std::strerror(errno));
    }
    if (static_cast<std::size_t>(n) != out.size()) {
      throw Error(ErrorCode::kChanged, {.file = name_},
                  "the file changed while it was being read: it shrank (it had " +
                      std::to_string(size_) + " bytes; a read at offset " + std::to_string(offset) +
                      " found its end at offset " +
                      std::to_string(offset + static_cast<std::uint64_t>(n)) + ")");
    }
  }

 private:
  detail::Fd own_fd_;  // Empty for a MappedFile's.
  int fd_;
  std::uint64_t size_;
  std::string name_;
  std::shared_ptr<const MappedFile> file_;  // Keeps fd_ open, when it is a MappedFile's.
};

}  // namespace

namespace detail {

void check_read_range(const ByteSource& source, std::uint64_t offset, std::uint64_t length) {
  if (!fits(offset, length, source.size())) {
    throw Error(ErrorCode::kInvalidArgument, {.file = source.name()},
                "a read of " + std::to_string(length) + " bytes at offset " +
                    std::to_string(offset) + " lies outside its " + std::to_string(source.size()) +
                    " bytes");
  }
}

}  // namespace detail

std::vector<TensorBytes> ByteSource::read_ranges(std::span<const ByteRange> ranges) const {
  std::vector<TensorBytes> out;
  out.reserve(ranges.size());
  for (const ByteRange& range : ranges) out.push_back(read(range.offset, range.length));
  return out;
}

std::shared_ptr<const ByteSource> ByteSource::open(const std::filesystem::path& path,
                                                   FileAccess access) {
  return of_file(MappedFile::open(path, access));
}

std::shared_ptr<const ByteSource> ByteSource::of_file(std::shared_ptr<const MappedFile> file) {
  if (file == nullptr) throw Error(ErrorCode::kInvalidArgument, "ByteSource::of_file: no file");
  if (file->access() == FileAccess::kRanges) {
    struct stat status {};
    if (::fstat(file->descriptor(), &status) != 0) {
      throw Error(ErrorCode::kIo, {.file = file->path().string()},
                  std::string("cannot stat: ") + std::strerror(errno));
    }
    const auto size = static_cast<std::uint64_t>(status.st_size);
    return std::make_shared<RangeSource>(std::move(file), size);
  }
  // A private mapping too: the library reads what the file holds, before anyone wrote a page.
  if (file->access() != FileAccess::kRead) return std::make_shared<MappedSource>(std::move(file));
  const ByteSpan bytes = file->bytes();
  std::string name = file->path().string();
  return std::make_shared<MemorySource>(bytes, std::move(file), std::move(name));
}

std::shared_ptr<const ByteSource> ByteSource::of_bytes(ByteSpan bytes, OwnerToken owner,
                                                       std::string name) {
  return std::make_shared<MemorySource>(bytes, std::move(owner), std::move(name));
}

std::shared_ptr<const ByteSource> ByteSource::open_ranges(const std::filesystem::path& path) {
  detail::RegularFile file = detail::open_regular_file(path);
  const auto size = static_cast<std::uint64_t>(file.status.st_size);
  return std::make_shared<RangeSource>(std::move(file.fd), size, path.string());
}

}  // namespace onnxzip
