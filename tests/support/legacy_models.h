// Test support: the legacy models of tests/data/make_legacy_models.py (built and judged by the
// reference onnx package, python3-onnx), shared by the conversion and CLI tests.
#ifndef ONNXZIP_TESTS_SUPPORT_LEGACY_MODELS_H_
#define ONNXZIP_TESTS_SUPPORT_LEGACY_MODELS_H_

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "onnxzip/onnx_model.h"

namespace onnxzip::test_support {

inline constexpr char kPython[] = "/usr/bin/python3";

// Every form make_legacy_models.py writes the same model in.
inline constexpr const char* kLegacyCases[] = {"inline_raw",        "inline_typed",
                                               "external_one_file", "external_per_tensor",
                                               "external_bare",     "external_partial"};

// Tensor place (tensor.h spelling) -> sha256 of its payload as raw little-endian bytes.
using Digests = std::map<std::string, std::string>;

// The digests of every tensor of `model` (raw_data, or its typed field converted).
Digests digests_of(const ModelProto& model);

// True when kPython can import onnx.
bool python_onnx_available();

// The models, generated once per test process into a scratch folder; nullptr when
// python_onnx_available() is false (the tests skip).
class LegacyModelSet final {
 public:
  static const LegacyModelSet* get();

  // <case>/model.onnx, with its data files next to it.
  std::filesystem::path model(const std::string& name) const;
  // What onnx.load sees in that model.
  Digests expected(const std::string& name) const;

 private:
  explicit LegacyModelSet(std::filesystem::path root) : root_(std::move(root)) {}
  std::filesystem::path root_;
};

// What the reference package makes of a model file: onnx.checker.check_model (on the path, then
// full_check on the loaded model) and the tensors' digests.
struct PythonView {
  std::string checker;  // "ok" or the checker's complaint.
  Digests digests;
};

// One python run for several models, keyed by path.string().
std::map<std::string, PythonView> python_dump(const std::vector<std::filesystem::path>& models);

}  // namespace onnxzip::test_support

#endif  // ONNXZIP_TESTS_SUPPORT_LEGACY_MODELS_H_
