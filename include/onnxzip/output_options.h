// How the library's writers treat the file they write: OutputFileOptions, the one options struct
// that SaveOptions (archive.h), EditOptions (edit.h) and LegacyWriteOptions (legacy.h) embed as
// `output` and write_view_model takes. Anyone may use this header.
//
// Every writer makes its output appear complete or not at all (a temporary renamed into place,
// or for an edit the steps of spec §9.6); these two fields say what it costs and what it may
// replace.
#ifndef ONNXZIP_OUTPUT_OPTIONS_H_
#define ONNXZIP_OUTPUT_OPTIONS_H_

#include <chrono>

namespace onnxzip {

// How long an in-place edit or a signing waits by default for the archive's lock, which readers
// hold briefly and another edit for its whole length (EditOptions::wait, SignOptions::wait).
inline constexpr std::chrono::milliseconds kDefaultEditWait{5000};

// The defaults are those of a writer that makes a new file. EditOptions, which changes the
// user's only copy where it is, defaults both to true (edit.h says why): the one place with other
// defaults.
struct OutputFileOptions {
  // fsync the file (and its folder) before and after the rename, so a power loss cannot leave an
  // empty destination. Off by default: it costs a full flush of the page cache for the file, and
  // a new output whose input is still there can be written again.
  bool durable = false;
  // A symbolic link at the destination: refused (false), or followed (true), replacing the
  // regular file it leads to; a link to nothing or to something else than a regular file is
  // refused either way.
  bool follow_symlinks = false;
};

}  // namespace onnxzip

#endif  // ONNXZIP_OUTPUT_OPTIONS_H_
