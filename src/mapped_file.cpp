#include "onnxzip/mapped_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <boost/iostreams/device/mapped_file.hpp>
#include <exception>
#include <string>
#include <system_error>

#include "onnxzip/error.h"

namespace onnxzip {

struct MappedFile::Impl {
  ~Impl() {
    if (fd >= 0) ::close(fd);
  }
  boost::iostreams::mapped_file_source source;
  int fd = -1;  // Owned: the descriptor adopt() was given.
};

MappedFile::MappedFile(std::filesystem::path path, std::unique_ptr<Impl> impl, ByteSpan bytes)
    : path_(std::move(path)), impl_(std::move(impl)), bytes_(bytes) {}

MappedFile::~MappedFile() = default;

std::shared_ptr<const MappedFile> MappedFile::open(const std::filesystem::path& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) {
    throw Error(ErrorCode::kNotFound, path.string() + ": no such file");
  }
  if (!std::filesystem::is_regular_file(status)) {
    throw Error(ErrorCode::kIo, path.string() + ": not a regular file");
  }
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw Error(ErrorCode::kIo, path.string() + ": cannot read size: " + ec.message());

  auto impl = std::make_unique<Impl>();
  ByteSpan bytes;
  // Boost refuses to map an empty file; an empty span describes it exactly.
  if (size != 0) {
    try {
      impl->source.open(path.string());
    } catch (const std::exception& e) {
      throw Error(ErrorCode::kIo, path.string() + ": cannot map: " + e.what());
    }
    if (!impl->source.is_open()) throw Error(ErrorCode::kIo, path.string() + ": cannot map");
    bytes =
        ByteSpan(reinterpret_cast<const std::uint8_t*>(impl->source.data()), impl->source.size());
  }
  return std::shared_ptr<const MappedFile>(new MappedFile(path, std::move(impl), bytes));
}

std::shared_ptr<const MappedFile> MappedFile::adopt(int fd, std::filesystem::path name) {
  if (fd < 0) {
    throw Error(ErrorCode::kInvalidArgument,
                name.string() + ": no file to map (descriptor " + std::to_string(fd) + ")");
  }
  auto impl = std::make_unique<Impl>();
  impl->fd = fd;
  struct stat status {};
  if (::fstat(fd, &status) != 0 || !S_ISREG(status.st_mode)) {
    throw Error(ErrorCode::kIo, name.string() + ": not a regular file");
  }
  ByteSpan bytes;
  if (status.st_size != 0) {
    // Boost maps by path; /proc/self/fd/N is the descriptor's file even when it has no name.
    try {
      impl->source.open("/proc/self/fd/" + std::to_string(fd));
    } catch (const std::exception& e) {
      throw Error(ErrorCode::kIo, name.string() + ": cannot map: " + e.what());
    }
    if (!impl->source.is_open()) throw Error(ErrorCode::kIo, name.string() + ": cannot map");
    bytes =
        ByteSpan(reinterpret_cast<const std::uint8_t*>(impl->source.data()), impl->source.size());
  }
  return std::shared_ptr<const MappedFile>(new MappedFile(std::move(name), std::move(impl), bytes));
}

}  // namespace onnxzip
