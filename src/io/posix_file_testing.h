// Private to the library and its tests: a way to make path_of_descriptor (posix_file.h) behave as
// on a system without procfs, so that tests can check what MappedFile does there. Not installed;
// nothing in the library calls it.
#ifndef ONNXZIP_SRC_POSIX_FILE_TESTING_H_
#define ONNXZIP_SRC_POSIX_FILE_TESTING_H_

namespace onnxzip::detail {

// false: path_of_descriptor returns "" as if /proc were not mounted; true (the default): it
// looks.
void set_descriptor_paths_for_testing(bool available) noexcept;

}  // namespace onnxzip::detail

#endif  // ONNXZIP_SRC_POSIX_FILE_TESTING_H_
