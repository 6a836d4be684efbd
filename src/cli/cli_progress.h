// A progress bar on standard error for the onnxzip tool's long writes. Private to src/cli/.
#ifndef ONNXZIP_CLI_PROGRESS_H_
#define ONNXZIP_CLI_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <string>

#include "onnxzip/progress.h"

namespace onnxzip::cli {

// Draws "<label>  42% [########            ] 1.2 GiB of 2.9 GiB" on standard error, redrawn in
// place with '\r'. It appears only when standard error is a terminal, the tool is not --quiet,
// and the work has run for more than a second (short work never flickers); it is redrawn at most
// ten times a second and erased when the work ends or the object goes away (an error message
// then starts on a clean line).
class ProgressBar final {
 public:
  ProgressBar(std::string label, bool quiet);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // For the library's options; valid while this object lives.
  ProgressCallback callback();
  void update(std::uint64_t done, std::uint64_t total);
  // Erases the bar if it is drawn.
  void clear();

 private:
  using Clock = std::chrono::steady_clock;

  std::string label_;
  bool enabled_;
  Clock::time_point start_;
  Clock::time_point last_draw_{};
  bool drawn_ = false;
};

}  // namespace onnxzip::cli

#endif  // ONNXZIP_CLI_PROGRESS_H_
