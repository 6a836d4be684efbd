// Private to the library and its tests: a way to make the renames of src/output_file.cpp fail on
// purpose, so that tests can check what a set of outputs looks like after each failed rename
// (commit_together). Not installed; nothing in the library sets it.
#ifndef ONNXZIP_SRC_OUTPUT_FILE_TESTING_H_
#define ONNXZIP_SRC_OUTPUT_FILE_TESTING_H_

#include <filesystem>
#include <functional>

namespace onnxzip::detail {

// Called before every rename an output file makes; returning false makes that rename fail as if
// the system had refused it (EIO). Null (the default) lets every rename through.
using RenameHook =
    std::function<bool(const std::filesystem::path& from, const std::filesystem::path& to)>;
void set_rename_hook(RenameHook hook);

}  // namespace onnxzip::detail

#endif  // ONNXZIP_SRC_OUTPUT_FILE_TESTING_H_
