// Streaming one entry's bytes into an archive: EntrySink and EntryProducer, the interface
// through which ArchiveWriter::add_tensor (archive.h) takes a payload written in pieces (the ZIP
// writer, internal to the library, implements the sink). Anyone may use this header.
#ifndef ONNXZIP_ENTRY_SINK_H_
#define ONNXZIP_ENTRY_SINK_H_

#include <cstdint>
#include <functional>

#include "onnxzip/bytes.h"

namespace onnxzip {

// Receives an entry's bytes from a producer, in order. Valid only during the producer call that
// received it. write() throws Error(kInvalidArgument) naming the entry when a piece would take
// the entry past its declared size; nothing of that piece is written.
class EntrySink {
 public:
  virtual void write(ByteSpan piece) = 0;
  // Bytes the entry still expects before it is complete.
  virtual std::uint64_t remaining() const noexcept = 0;

 protected:
  EntrySink() = default;
  EntrySink(const EntrySink&) = delete;
  EntrySink& operator=(const EntrySink&) = delete;
  virtual ~EntrySink() = default;
};

using EntryProducer = std::function<void(EntrySink&)>;

}  // namespace onnxzip

#endif  // ONNXZIP_ENTRY_SINK_H_
