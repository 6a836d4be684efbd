#include "cli_remote.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>

#include "cli_progress.h"
#include "onnxzip/error.h"

namespace onnxzip::cli {
namespace {

// Download paths and the URLs they stand for, for in_remote_terms.
std::mutex aliases_mutex;
std::vector<std::pair<std::string, std::string>>& aliases() {
  static std::vector<std::pair<std::string, std::string>> list;
  return list;
}

std::string temporary_folder() {
  const char* dir = std::getenv("TMPDIR");
  return dir != nullptr && *dir != '\0' ? dir : "/tmp";
}

}  // namespace

HttpOptions http_options(const GlobalOptions& global) {
  HttpOptions options;
  options.headers = global.headers;
  return options;
}

bool is_remote(std::string_view text) noexcept { return is_url(text) || is_s3_url(text); }

std::shared_ptr<const HttpSource> open_remote(const std::string& url, const GlobalOptions& global) {
  return is_s3_url(url) ? open_s3_source(url, http_options(global))
                        : HttpSource::open(url, http_options(global));
}

Download download(const std::string& url, const GlobalOptions& global, const std::string& label) {
  return download(*open_remote(url, global), global, label);
}

Download download(const HttpSource& source, const GlobalOptions& global, const std::string& label) {
  Download result;
  result.shown = source.name();
  const std::string folder = temporary_folder();
  const int fd = ::open(folder.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) {
    throw Error(ErrorCode::kIo, {.file = result.shown},
                "cannot make a temporary file in " + folder +
                    " to download it into: " + std::strerror(errno));
  }
  try {
    if (source.size() > 0 && ::ftruncate(fd, static_cast<off_t>(source.size())) != 0) {
      throw Error(ErrorCode::kIo, {.file = result.shown},
                  "cannot make room for " + std::to_string(source.size()) + " bytes in " + folder +
                      ": " + std::strerror(errno));
    }
    ProgressBar bar(label, global.quiet);
    source.fetch(
        0, source.size(),
        [&](std::uint64_t at, ByteSpan piece) {
          std::size_t done = 0;
          while (done < piece.size()) {
            const ssize_t n = ::pwrite(fd, piece.data() + done, piece.size() - done,
                                       static_cast<off_t>(at + done));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
              throw Error(ErrorCode::kIo, {.file = result.shown},
                          "cannot write its download to " + folder + ": " + std::strerror(errno));
            }
            done += static_cast<std::size_t>(n);
          }
        },
        bar.callback());
  } catch (...) {
    ::close(fd);
    throw;
  }
  result.path = "/proc/self/fd/" + std::to_string(fd);
  result.file = MappedFile::adopt(fd, result.shown);
  const std::lock_guard lock(aliases_mutex);
  aliases().emplace_back(result.path, result.shown);
  return result;
}

std::string in_remote_terms(std::string message) {
  const std::lock_guard lock(aliases_mutex);
  for (const auto& [path, url] : aliases()) {
    for (std::size_t at = message.find(path); at != std::string::npos;
         at = message.find(path, at + url.size())) {
      message.replace(at, path.size(), url);
    }
  }
  return message;
}

std::string url_file_name(const std::string& url) {
  const std::string shown = display_url(url);
  const std::size_t slash = shown.rfind('/');
  return slash == std::string::npos ? shown : shown.substr(slash + 1);
}

}  // namespace onnxzip::cli
