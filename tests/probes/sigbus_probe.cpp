// A program with the onnxzip tool's signal handlers (src/cli/cli_signals.h) that makes the
// SIGBUS of a mapped input shrinking under it happen for sure: it maps FILE, truncates it, then
// reads the mapping's last byte. The race the tool meets (another process truncating while it
// reads) made deterministic, for cli_test.
//
//   sigbus_probe mapped FILE    through MappedFile (the registry names FILE)
//   sigbus_probe unknown FILE   through a bare mmap the registry does not know
//
// Exit status 3 means that the read did not fault, which the test reports.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "cli_signals.h"
#include "onnxzip/internal/mapped_file.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: sigbus_probe mapped|unknown FILE\n");
    return 2;
  }
  onnxzip::cli::install_signal_handlers();
  const std::string mode = argv[1];
  const char* const path = argv[2];
  const unsigned char* bytes = nullptr;
  std::size_t size = 0;
  std::shared_ptr<const onnxzip::MappedFile> file;
  if (mode == "mapped") {
    file = onnxzip::MappedFile::open(path);
    bytes = file->bytes().data();
    size = file->bytes().size();
  } else {
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    size = static_cast<std::size_t>(::lseek(fd, 0, SEEK_END));
    bytes = static_cast<const unsigned char*>(::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0));
  }
  if (size == 0 || ::truncate(path, 0) != 0) return 4;
  const volatile unsigned char* last = bytes + size - 1;
  std::printf("%d\n", *last);
  return 3;
}
