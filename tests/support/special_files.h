// Test support: files that are not regular files, for tests of what readers and writers do with
// them (a FIFO must not hang a reader; a device must not be replaced by a writer).
#ifndef ONNXZIP_TESTS_SUPPORT_SPECIAL_FILES_H_
#define ONNXZIP_TESTS_SUPPORT_SPECIAL_FILES_H_

#include <filesystem>

namespace onnxzip::test_support {

// A bound UNIX socket at `path` (the descriptor is closed; the socket file stays). Fails the
// current test when the system refuses.
void make_socket(const std::filesystem::path& path);

// A character device like /dev/null at `path`; false when not allowed (only root may).
bool make_null_device(const std::filesystem::path& path);

}  // namespace onnxzip::test_support

#endif  // ONNXZIP_TESTS_SUPPORT_SPECIAL_FILES_H_
