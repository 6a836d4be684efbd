#include "zip_held_bytes.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace onnxzip::zip {

HeldBytes::HeldBytes(std::shared_ptr<const ByteSource> source)
    : source_(std::move(source)),
      start_(source_->size()),
      served_from_(source_->access() == ByteSource::Access::kMapped ? source_->size() : 0) {
  if (holds_all()) {
    start_ = 0;
    held_ = source_->bytes();
    owners_.push_back(source_->owner());
  }
}

void HeldBytes::hold_from(std::uint64_t from) {
  from = std::min(from, source_->size());
  if (from >= start_) return;
  // One buffer for all that is held, in which each byte's address is congruent to its offset
  // modulo 64, as the source's own reads are: what is read now, then what was held.
  const std::size_t lead = static_cast<std::size_t>(from % kDefaultBufferAlignment);
  const std::uint64_t added = start_ - from;
  const auto buffer =
      std::make_shared<OwnedBytes>(lead + static_cast<std::size_t>(added + held_.size()));
  const MutableByteSpan bytes = buffer->mutable_span().subspan(lead);
  source_->read_into(from, bytes.first(static_cast<std::size_t>(added)));
  if (!held_.empty()) {
    std::memcpy(bytes.data() + added, held_.data(), held_.size());
  }
  start_ = from;
  held_ = bytes;
  owners_.push_back(buffer);
}

TensorBytes HeldBytes::read(std::uint64_t offset, std::uint64_t length) const {
  if (offset >= served_from_ && holds(offset, length)) {
    return TensorBytes::borrowed(at(offset, length), owners_.back());
  }
  return source_->read(offset, length);
}

}  // namespace onnxzip::zip
