// Test support: ONNX models shared by the codec tests, the conformance test and the libprotobuf
// oracle: a hand-built model that sets every field of every message, and the reference models
// of Debian's libonnx-testdata package (written by the onnx package itself).
#ifndef ONNXZIP_TESTS_SUPPORT_ONNX_SAMPLES_H_
#define ONNXZIP_TESTS_SUPPORT_ONNX_SAMPLES_H_

#include <filesystem>
#include <vector>

#include "onnxzip/onnx_model.h"

namespace onnxzip::test_support {

// Where scripts/install-deps.sh installs libonnx-testdata.
inline constexpr const char* kOnnxTestdataRoot = "/usr/share/libonnx-testdata";
// The package holds 1072 models; fewer than this means a broken or missing installation.
inline constexpr std::size_t kMinTestdataModels = 1000;

// Every file named model.onnx under kOnnxTestdataRoot, sorted; empty when the folder is absent.
std::vector<std::filesystem::path> onnx_testdata_models();

// A model that sets every field of every message at least once (IR 13). Each oneof has exactly
// one member set, and every enum value is one onnx 1.12 knows, so libprotobuf accepts it too.
ModelProto every_field_model();

}  // namespace onnxzip::test_support

#endif  // ONNXZIP_TESTS_SUPPORT_ONNX_SAMPLES_H_
