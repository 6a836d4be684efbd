#include "cli_signals.h"

#include <signal.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <string_view>
#include <thread>

#include "onnxzip/internal/mapped_file.h"
#include "onnxzip/internal/s3.h"

namespace onnxzip::cli {
namespace {

// A line composed in fixed storage. Async-signal-safe.
class Line final {
 public:
  void append(std::string_view text) noexcept {
    for (const char c : text) {
      if (used_ + 1 < bytes_.size()) bytes_[used_++] = c;  // Room for the newline stays.
    }
  }
  // A file name: control bytes become '?' (the line may go to a terminal).
  void append_name(std::string_view name) noexcept {
    for (const char c : name) {
      const auto byte = static_cast<unsigned char>(c);
      append(byte < 0x20 || byte == 0x7f ? "?" : std::string_view(&c, 1));
    }
  }
  void write_to_stderr() noexcept {
    bytes_[used_++] = '\n';
    const char* p = bytes_.data();
    std::size_t left = used_;
    while (left > 0) {
      const ssize_t n = ::write(STDERR_FILENO, p, left);
      if (n <= 0) return;
      p += n;
      left -= static_cast<std::size_t>(n);
    }
  }

 private:
  std::array<char, 4096> bytes_{};
  std::size_t used_ = 0;
};

// Only async-signal-safe calls from here on: no allocation, no stdio, no locks.
void on_bus_error(int signal_number, siginfo_t* info, void*) {
  std::array<char, 2048> name{};
  if (info == nullptr || !MappedFile::describe_address(info->si_addr, name.data(), name.size())) {
    // Not an input that changed: let the default action report the crash (core dump).
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    ::sigemptyset(&default_action.sa_mask);
    ::sigaction(signal_number, &default_action, nullptr);
    return;  // The faulting access runs again and gets the default action.
  }
  // Threads reading the mapping together (verify's) may all fault: one line, by the first, and
  // the others wait for its _exit.
  static std::atomic<bool> reported{false};
  static_assert(std::atomic<bool>::is_always_lock_free);  // Lock-free: async-signal-safe.
  if (reported.exchange(true)) {
    for (;;) ::pause();
  }
  Line line;
  // A progress bar may be drawn on a terminal: start the message on a clean line.
  if (::isatty(STDERR_FILENO) == 1) line.append("\r\x1b[K");
  line.append("onnxzip: error: ");
  line.append_name(name.data());
  line.append(
      ": the file changed (it shrank) while it was being read; rerun, or use --no-mmap for files "
      "that others may change");
  line.write_to_stderr();
  ::_exit(1);
}

// Ctrl-C and SIGTERM: the handler only hands the signal to a thread of its own through a pipe
// (async-signal-safe); that thread aborts the uploads into buckets under way, which takes
// requests, and then lets the signal end the process as it would have. A local output needs
// nothing: its temporary has no name to leave behind.
int interrupt_pipe[2] = {-1, -1};

void on_interrupt(int signal_number) {
  const unsigned char number = static_cast<unsigned char>(signal_number);
  [[maybe_unused]] const ssize_t written = ::write(interrupt_pipe[1], &number, 1);
}

void end_on_interrupt() noexcept {
  unsigned char number = 0;
  while (::read(interrupt_pipe[0], &number, 1) != 1) {
  }
  abort_s3_uploads_in_progress();
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  ::sigemptyset(&default_action.sa_mask);
  ::sigaction(number, &default_action, nullptr);
  ::raise(number);
}

void install_interrupt_handlers() noexcept {
  if (::pipe(interrupt_pipe) != 0) return;
  try {
    std::thread(end_on_interrupt).detach();
  } catch (...) {
    return;  // No thread: the signals keep their default action.
  }
  for (const int signal_number : {SIGINT, SIGTERM}) {
    struct sigaction current {};
    // Ignored (nohup, a background job of a shell without job control) stays ignored.
    if (::sigaction(signal_number, nullptr, &current) != 0 || current.sa_handler == SIG_IGN) {
      continue;
    }
    struct sigaction interrupt {};
    interrupt.sa_handler = on_interrupt;
    ::sigemptyset(&interrupt.sa_mask);
    ::sigaction(signal_number, &interrupt, nullptr);
  }
}

}  // namespace

void install_signal_handlers() noexcept {
  install_interrupt_handlers();
  struct sigaction bus {};
  bus.sa_sigaction = on_bus_error;
  bus.sa_flags = SA_SIGINFO;
  ::sigemptyset(&bus.sa_mask);
  ::sigaction(SIGBUS, &bus, nullptr);

  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  ::sigemptyset(&ignore.sa_mask);
  ::sigaction(SIGXFSZ, &ignore, nullptr);
}

}  // namespace onnxzip::cli
