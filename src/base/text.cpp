#include "onnxzip/text.h"

#include <ostream>

namespace onnxzip {

void Text::assign_owned(const char* data, std::size_t size) {
  if (size <= kLocalCapacity) {
    // `data` may be this Text's own heap or borrowed bytes: copy before releasing them.
    char copy[kLocalCapacity + 1];
    if (size != 0) std::memcpy(copy, data, size);
    copy[size] = '\0';
    release();
    std::memcpy(local_, copy, size + 1);
    data_ = local_;
    size_ = size;
    return;
  }
  char* const heap = new char[size + 1];
  std::memcpy(heap, data, size);
  heap[size] = '\0';
  release();
  data_ = heap;
  size_ = size;
  capacity_ = size;
}

Text& Text::append(std::string_view more) {
  if (more.empty()) return *this;
  std::string joined;
  joined.reserve(size_ + more.size());
  joined.append(data_, size_);
  joined.append(more);
  *this = Text(std::string_view(joined));
  return *this;
}

std::ostream& operator<<(std::ostream& out, const Text& text) { return out << text.view(); }

}  // namespace onnxzip
