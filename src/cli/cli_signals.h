// The onnxzip tool's signal policy: the signals that would kill it without a word for an
// ordinary, explainable failure. Private to src/cli/ (and the test program that checks it).
#ifndef ONNXZIP_CLI_SIGNALS_H_
#define ONNXZIP_CLI_SIGNALS_H_

namespace onnxzip::cli {

// Installs, for the whole process:
//   * SIGBUS: an input file that shrinks under its mapping (mapped_file.h). A fault inside a
//     mapping known to MappedFile::describe_address prints one line, "onnxzip: error: <file>: the
//     file changed (it shrank) while it was being read; rerun, or use --no-mmap for files that
//     others may change", and exits with status 1. Any other SIGBUS is a real crash: the default
//     action is restored and the fault recurs, so it still dumps core.
//   * SIGINT and SIGTERM (unless ignored): every upload into a bucket under way is aborted
//     (abort_s3_uploads_in_progress, internal/s3.h), so none is left behind, and the signal then
//     ends the process as it would have.
//   * SIGXFSZ ignored: a write past RLIMIT_FSIZE then fails with EFBIG, which the library reports
//     as an error naming the output ("file too large"); outputs are atomic, so nothing is left.
void install_signal_handlers() noexcept;

}  // namespace onnxzip::cli

#endif  // ONNXZIP_CLI_SIGNALS_H_
