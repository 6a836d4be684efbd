#include "cli_progress.h"

#include <unistd.h>

#include <cstdio>
#include <utility>

#include "cli_common.h"

namespace onnxzip::cli {
namespace {

constexpr auto kDelay = std::chrono::seconds(1);
constexpr auto kRedrawInterval = std::chrono::milliseconds(100);
constexpr int kBarWidth = 24;

}  // namespace

ProgressBar::ProgressBar(std::string label, bool quiet)
    : label_(std::move(label)),
      enabled_(!quiet && ::isatty(STDERR_FILENO) == 1),
      start_(Clock::now()) {}

ProgressBar::~ProgressBar() { clear(); }

ProgressCallback ProgressBar::callback() {
  if (!enabled_) return nullptr;
  return [this](std::uint64_t done, std::uint64_t total) { update(done, total); };
}

void ProgressBar::update(std::uint64_t done, std::uint64_t total) {
  if (!enabled_) return;
  const Clock::time_point now = Clock::now();
  if (now - start_ < kDelay) return;
  if (done >= total) {  // The end: nothing left to show.
    clear();
    return;
  }
  if (drawn_ && now - last_draw_ < kRedrawInterval) return;
  last_draw_ = now;
  const double fraction = total == 0 ? 1.0 : static_cast<double>(done) / static_cast<double>(total);
  const int filled = static_cast<int>(fraction * kBarWidth);
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.resize(kBarWidth, ' ');
  std::fprintf(stderr, "\r%s %3d%% [%s] %s of %s\033[K", label_.c_str(),
               static_cast<int>(fraction * 100), bar.c_str(), human_bytes(done).c_str(),
               human_bytes(total).c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressBar::clear() {
  if (!drawn_) return;
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
  drawn_ = false;
}

}  // namespace onnxzip::cli
