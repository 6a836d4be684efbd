#include "support/legacy_models.h"

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <utility>

#include "onnxzip/tensor.h"
#include "support/external_tool.h"
#include "support/scratch_dir.h"
#include "support/sha256.h"

namespace onnxzip::test_support {
namespace {

namespace fs = std::filesystem;

const fs::path kGenerator = fs::path(ONNXZIP_TEST_DATA_DIR) / "make_legacy_models.py";

}  // namespace

Digests digests_of(const ModelProto& model) {
  Digests out;
  for_each_tensor(model, [&](const TensorProto& t, const TensorSite& site) {
    out[std::string(site.path)] =
        t.raw_data ? sha256_hex(t.raw_data->view()) : sha256_hex(typed_data_to_raw(t).span());
  });
  return out;
}

bool python_onnx_available() {
  static const bool available =
      find_tool(kPython).has_value() &&
      run_tool(std::string(kPython) + " -c 'import onnx' 2>/dev/null").exit_code == 0;
  return available;
}

const LegacyModelSet* LegacyModelSet::get() {
  // Generated on first use; the scratch folder goes when the process ends.
  static const std::unique_ptr<ScratchDir> folder = [] {
    if (!python_onnx_available()) return std::unique_ptr<ScratchDir>();
    auto dir = std::make_unique<ScratchDir>("legacy_model_set");
    const ToolResult result =
        run_tool(std::string(kPython) + " " + shell_quote(kGenerator.string()) + " generate " +
                 shell_quote(dir->path().string()));
    if (result.exit_code != 0) {
      ADD_FAILURE() << "make_legacy_models.py failed: " << result.output;
      return std::unique_ptr<ScratchDir>();
    }
    return dir;
  }();
  static const LegacyModelSet set(folder ? folder->path() : fs::path());
  return folder ? &set : nullptr;
}

fs::path LegacyModelSet::model(const std::string& name) const {
  return root_ / name / "model.onnx";
}

Digests LegacyModelSet::expected(const std::string& name) const {
  Digests out;
  std::ifstream in(root_ / name / "expected.tsv");
  std::string line;
  while (std::getline(in, line)) {
    const auto tab = line.find('\t');
    if (tab != std::string::npos) out[line.substr(0, tab)] = line.substr(tab + 1);
  }
  return out;
}

std::map<std::string, PythonView> python_dump(const std::vector<fs::path>& models) {
  std::string command = std::string(kPython) + " " + shell_quote(kGenerator.string()) + " dump";
  for (const fs::path& m : models) command += " " + shell_quote(m.string());
  const ToolResult result = run_tool(command);
  EXPECT_EQ(result.exit_code, 0) << result.output;
  std::map<std::string, PythonView> out;
  PythonView* current = nullptr;
  std::istringstream lines(result.output);
  std::string line;
  while (std::getline(lines, line)) {
    const auto tab = line.find('\t');
    if (tab == std::string::npos) continue;  // Warnings on stderr.
    const std::string key = line.substr(0, tab);
    const std::string value = line.substr(tab + 1);
    if (key == "model") {
      current = &out[value];
    } else if (current != nullptr && key == "checker") {
      current->checker = value;
    } else if (current != nullptr) {
      current->digests[key] = value;
    }
  }
  return out;
}

}  // namespace onnxzip::test_support
