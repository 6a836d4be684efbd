// Progress of long writes: how many of the bytes a writer has to write are written.
//
// The writers (save / ArchiveWriter::finish, write_legacy_model, convert, repack) take an optional
// ProgressCallback in their options and call it as tensor payload bytes reach the file: `total`
// is the number of payload bytes the write will copy (for a model written as one inline
// protobuf, the whole file), the same in every call. The writer calls it once with done = 0
// before the first byte, then whenever at least kProgressStepBytes more are written, and once
// with done == total when every byte is written (the model itself too), just before the output is
// renamed into place. `done` never decreases and reaches `total` only in that last call.
// verify() reports its reading the same way (VerifyOptions::progress in archive.h): `total` is
// the bytes its CRC-32 check reads, and the last call comes when the report is complete.
//
// A callback that throws cancels the write: the exception propagates and, as after any failure,
// nothing is left at the destination.
#ifndef ONNXZIP_PROGRESS_H_
#define ONNXZIP_PROGRESS_H_

#include <cstdint>
#include <functional>

namespace onnxzip {

using ProgressCallback = std::function<void(std::uint64_t done, std::uint64_t total)>;

// Writers report at least this many bytes apart (besides the first and the last call), so a
// callback costs nothing measurable against the write itself.
inline constexpr std::uint64_t kProgressStepBytes = std::uint64_t{16} << 20;

}  // namespace onnxzip

#endif  // ONNXZIP_PROGRESS_H_
