// Private to the library and its tests: a way to make path_of_descriptor (posix_file.h) behave as
// on a system without procfs, and a hook run before each read of a file's bytes, so that tests can
// change a file between a reader's reads. Not installed; nothing in the library sets them.
#ifndef ONNXZIP_SRC_POSIX_FILE_TESTING_H_
#define ONNXZIP_SRC_POSIX_FILE_TESTING_H_

#include <cstdint>
#include <functional>

namespace onnxzip::detail {

// false: path_of_descriptor returns "" as if /proc were not mounted; true (the default): it
// looks.
void set_descriptor_paths_for_testing(bool available) noexcept;

// Called before each pread of a mapped file's source (ByteSource::read_into) and of a whole-file
// read (FileAccess::kRead), with the offset and length about to be read. Empty: none.
using FileReadHook = std::function<void(std::uint64_t offset, std::uint64_t length)>;
void set_file_read_hook_for_testing(FileReadHook hook);
// Runs the hook, if one is set (the readers above call it).
void run_file_read_hook(std::uint64_t offset, std::uint64_t length);

}  // namespace onnxzip::detail

#endif  // ONNXZIP_SRC_POSIX_FILE_TESTING_H_
