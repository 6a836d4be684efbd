// Byte sources for tests (byte_source.h): one that reads ranges out of memory, as a remote file
// would, without a file; and one that counts the reads made through another.
#ifndef ONNXZIP_TESTS_SUPPORT_BYTE_SOURCES_H_
#define ONNXZIP_TESTS_SUPPORT_BYTE_SOURCES_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "onnxzip/internal/byte_source.h"

namespace onnxzip::test_support {

// A source of `bytes` (which the caller keeps alive) that reads ranges (ByteSource::Access::
// kRanges): each read a copy into a buffer of its own, aligned as ByteSource::read promises.
std::shared_ptr<const ByteSource> ranges_of(ByteSpan bytes, std::string name = "<ranges>");

// Passes every call on to `inner`, counting the reads (read() and read_into()) and their bytes.
class CountingSource final : public ByteSource {
 public:
  explicit CountingSource(std::shared_ptr<const ByteSource> inner) : inner_(std::move(inner)) {}

  std::size_t reads() const noexcept { return reads_; }
  std::uint64_t bytes_read() const noexcept { return bytes_read_; }

  Access access() const noexcept override { return inner_->access(); }
  std::uint64_t size() const noexcept override { return inner_->size(); }
  const std::string& name() const noexcept override { return inner_->name(); }
  TensorBytes read(std::uint64_t offset, std::uint64_t length) const override {
    count(length);
    return inner_->read(offset, length);
  }
  void read_into(std::uint64_t offset, MutableByteSpan out) const override {
    count(out.size());
    inner_->read_into(offset, out);
  }
  ByteSpan bytes() const noexcept override { return inner_->bytes(); }
  const OwnerToken& owner() const noexcept override { return inner_->owner(); }

 private:
  void count(std::uint64_t length) const noexcept {
    ++reads_;
    bytes_read_ += length;
  }

  std::shared_ptr<const ByteSource> inner_;
  mutable std::atomic<std::size_t> reads_{0};
  mutable std::atomic<std::uint64_t> bytes_read_{0};
};

}  // namespace onnxzip::test_support

#endif  // ONNXZIP_TESTS_SUPPORT_BYTE_SOURCES_H_
