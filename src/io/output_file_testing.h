// Private to the library and its tests: ways to make the renames of src/output_file.cpp fail on
// purpose, so that tests can check what a set of outputs looks like after each failed rename
// (commit_together), and its splices, so that they reach every way of copying. Not installed;
// nothing in the library sets it.
#ifndef ONNXZIP_SRC_OUTPUT_FILE_TESTING_H_
#define ONNXZIP_SRC_OUTPUT_FILE_TESTING_H_

#include <cstdint>
#include <filesystem>
#include <functional>

namespace onnxzip::detail {

// Called before every rename an output file makes; returning false makes that rename fail as if
// the system had refused it (EIO). Null (the default) lets every rename through.
using RenameHook =
    std::function<bool(const std::filesystem::path& from, const std::filesystem::path& to)>;
void set_rename_hook(RenameHook hook);

// Makes splice() fail as on a file system that takes no part in it (EINVAL), so that tests reach
// each way write() copies the bytes of a mapped file: kAll from the first splice on (the buffer
// copies everything), kIntoOutput only into the output file (the bytes already in the pipe are
// read out of it and written). kNone (the default) lets every splice through.
enum class SpliceRefusal : std::uint8_t { kNone, kAll, kIntoOutput };
void set_splice_refusal(SpliceRefusal refusal);

}  // namespace onnxzip::detail

#endif  // ONNXZIP_SRC_OUTPUT_FILE_TESTING_H_
