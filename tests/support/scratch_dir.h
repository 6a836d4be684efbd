// Test support: a fresh folder under the temporary directory (TMPDIR, which CTest points into
// the build tree), removed with everything in it when the object goes away.
#ifndef ONNXZIP_TESTS_SUPPORT_SCRATCH_DIR_H_
#define ONNXZIP_TESTS_SUPPORT_SCRATCH_DIR_H_

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace onnxzip::test_support {

class ScratchDir final {
 public:
  // `tag` makes the folder recognisable; a counter and the process id make it unique.
  explicit ScratchDir(const std::string& tag);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const noexcept { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }
  // Names of the files in the folder, sorted (to prove no temporary was left behind).
  std::vector<std::string> file_names() const;

 private:
  std::filesystem::path path_;
};

std::vector<std::uint8_t> read_file_bytes(const std::filesystem::path& path);
void write_file_bytes(const std::filesystem::path& path, const std::string& contents);

}  // namespace onnxzip::test_support

#endif  // ONNXZIP_TESTS_SUPPORT_SCRATCH_DIR_H_
