#include "splice_pipe.h"

#include <fcntl.h>
#include <unistd.h>

#include <utility>

namespace onnxzip::detail {
namespace {

std::unique_ptr<SplicePipe> make_pipe() {
  int ends[2];
  if (::pipe2(ends, O_CLOEXEC) != 0) return nullptr;
  Fd read_end(ends[0]);
  Fd write_end(ends[1]);
  for (const std::size_t capacity : kSplicePipeCapacities) {
    const int granted = ::fcntl(write_end.get(), F_SETPIPE_SZ, static_cast<int>(capacity));
    if (granted >= static_cast<int>(capacity)) {
      return std::make_unique<SplicePipe>(SplicePipe{.read_end = std::move(read_end),
                                                     .write_end = std::move(write_end),
                                                     .capacity = static_cast<std::size_t>(granted),
                                                     .maker = ::getpid()});
    }
  }
  return nullptr;
}

}  // namespace

SplicePipeShelf& SplicePipeShelf::instance() noexcept {
  static SplicePipeShelf shelf;  // Trivially destructible: usable by objects destroyed at exit.
  return shelf;
}

void SplicePipeShelf::add_user() noexcept { users_.fetch_add(1); }

void SplicePipeShelf::remove_user() noexcept {
  if (users_.fetch_sub(1) == 1) std::unique_ptr<SplicePipe>(idle_.exchange(nullptr)).reset();
}

std::unique_ptr<SplicePipe> SplicePipeShelf::take() {
  std::unique_ptr<SplicePipe> pipe(idle_.exchange(nullptr));
  // A pipe made before a fork(): the parent may be using it, so the child closes its copy.
  if (pipe && pipe->maker != ::getpid()) pipe.reset();
  return pipe ? std::move(pipe) : make_pipe();
}

void SplicePipeShelf::give(std::unique_ptr<SplicePipe> pipe) noexcept {
  SplicePipe* empty = nullptr;
  if (pipe && idle_.compare_exchange_strong(empty, pipe.get())) static_cast<void>(pipe.release());
}

}  // namespace onnxzip::detail
