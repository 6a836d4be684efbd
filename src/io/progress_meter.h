// Private to the writers (src/archive/archive_writer.cpp, src/archive/edit.cpp,
// src/convert/legacy.cpp, src/convert/convert.cpp) and verify (src/archive/archive_verify.cpp):
// turns bytes written (or checked) into the ProgressCallback calls progress.h promises, so that
// the rule is kept in one place. Not installed.
#ifndef ONNXZIP_PROGRESS_METER_H_
#define ONNXZIP_PROGRESS_METER_H_

#include <algorithm>
#include <cstdint>
#include <functional>

#include "onnxzip/bytes.h"
#include "onnxzip/progress.h"

namespace onnxzip::detail {

// Counts written bytes against a fixed total and calls the callback (if any) at the start, every
// kProgressStepBytes, and once at finish(). Does nothing without a callback.
class ProgressMeter final {
 public:
  ProgressMeter(const ProgressCallback& callback, std::uint64_t total)
      : callback_(callback ? &callback : nullptr), total_(total) {
    if (callback_ != nullptr) (*callback_)(0, total_);
  }

  bool active() const noexcept { return callback_ != nullptr; }

  void advance(std::uint64_t bytes) {
    if (callback_ == nullptr) return;
    // Capped below total: only finish() reports completion, after the output is in place.
    done_ = std::min(total_ - std::min<std::uint64_t>(total_, 1), done_ + bytes);
    if (total_ != 0 && done_ - reported_ >= kProgressStepBytes) {
      reported_ = done_;
      (*callback_)(done_, total_);
    }
  }

  void finish() {
    if (callback_ == nullptr || finished_) return;
    finished_ = true;
    (*callback_)(total_, total_);
  }

  // For a write that ends by handing the rest of its work to a writer with a progress option of
  // its own (repack's ArchiveWriter::finish): a callback whose calls advance this meter by what
  // the writer reports done since its previous call, and whose last call (done == total, after
  // the first) finishes this meter. The writer's total must be the rest of this meter's. Null
  // when this meter is inactive; valid while this meter lives.
  ProgressCallback last_part() {
    if (callback_ == nullptr) return nullptr;
    return [this, started = false, reported = std::uint64_t{0}](std::uint64_t done,
                                                                std::uint64_t total) mutable {
      if (started && done == total) {
        finish();
        return;
      }
      started = true;
      advance(done - std::min(done, reported));
      reported = std::max(reported, done);
    };
  }

 private:
  const ProgressCallback* callback_;
  std::uint64_t total_;
  std::uint64_t done_ = 0;
  std::uint64_t reported_ = 0;
  bool finished_ = false;
};

// Hands `bytes` to `write` in pieces of kProgressStepBytes (whole when the meter is inactive),
// advancing the meter after each piece.
template <class Write>
void write_with_progress(ByteSpan bytes, ProgressMeter& meter, Write&& write) {
  if (!meter.active()) {
    write(bytes);
    return;
  }
  while (!bytes.empty()) {
    const std::size_t piece =
        static_cast<std::size_t>(std::min<std::uint64_t>(bytes.size(), kProgressStepBytes));
    write(bytes.first(piece));
    meter.advance(piece);
    bytes = bytes.subspan(piece);
  }
}

}  // namespace onnxzip::detail

#endif  // ONNXZIP_PROGRESS_METER_H_
