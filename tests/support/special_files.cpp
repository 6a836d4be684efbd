#include "support/special_files.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace onnxzip::test_support {

void make_socket(const std::filesystem::path& path) {
  const int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(s, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  ASSERT_LT(path.string().size(), sizeof(address.sun_path));
  std::strcpy(address.sun_path, path.c_str());
  const int bound = ::bind(s, reinterpret_cast<const sockaddr*>(&address), sizeof(address));
  const int error = errno;
  ::close(s);
  ASSERT_EQ(bound, 0) << path << ": " << std::strerror(error);
}

bool make_null_device(const std::filesystem::path& path) {
  return ::mknod(path.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0;
}

}  // namespace onnxzip::test_support
