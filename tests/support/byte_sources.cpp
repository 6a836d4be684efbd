#include "support/byte_sources.h"

#include <cstring>
#include <utility>

#include "onnxzip/error.h"
#include "onnxzip/internal/byte_source.h"

namespace onnxzip::test_support {
namespace {

class MemoryRanges final : public ByteSource {
 public:
  MemoryRanges(ByteSpan bytes, std::string name) : bytes_(bytes), name_(std::move(name)) {}

  Access access() const noexcept override { return Access::kRanges; }
  std::uint64_t size() const noexcept override { return bytes_.size(); }
  const std::string& name() const noexcept override { return name_; }
  TensorBytes read(std::uint64_t offset, std::uint64_t length) const override {
    const std::size_t lead = static_cast<std::size_t>(offset % kDefaultBufferAlignment);
    const auto buffer = std::make_shared<OwnedBytes>(lead + static_cast<std::size_t>(length));
    const MutableByteSpan bytes = buffer->mutable_span().subspan(lead);
    read_into(offset, bytes);
    return TensorBytes::borrowed(bytes, buffer);
  }
  void read_into(std::uint64_t offset, MutableByteSpan out) const override {
    if (!fits(offset, out.size(), bytes_.size())) {
      throw Error(ErrorCode::kInvalidArgument, name_ + ": a read outside the source");
    }
    if (!out.empty()) std::memcpy(out.data(), bytes_.data() + offset, out.size());
  }

 private:
  ByteSpan bytes_;
  std::string name_;
};

}  // namespace

std::shared_ptr<const ByteSource> ranges_of(ByteSpan bytes, std::string name) {
  return std::make_shared<MemoryRanges>(bytes, std::move(name));
}

}  // namespace onnxzip::test_support
