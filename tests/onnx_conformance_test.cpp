// Conformance of the ONNX codec over every model of Debian's libonnx-testdata (written by the
// reference onnx package): each parses through every entry point and serializes through every
// writer to the input's exact bytes, and to the bytes python3-onnx's SerializeToString gives.
// The package is a declared dependency (scripts/install-deps.sh): its absence fails, it does not
// skip. Field-by-field comparison with libprotobuf is in tests/oracle/ (a separate binary).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "onnxzip/internal/protobuf_wire.h"
#include "onnxzip/onnx_codec.h"
#include "onnxzip/onnx_model.h"
#include "onnxzip/tensor.h"
#include "support/external_tool.h"
#include "support/onnx_samples.h"
#include "support/scratch_dir.h"
#include "support/sha256.h"

namespace onnxzip {
namespace {

using Bytes = std::vector<std::uint8_t>;
using test_support::kMinTestdataModels;
using test_support::kOnnxTestdataRoot;

const std::vector<std::filesystem::path>& testdata_models() {
  static const std::vector<std::filesystem::path> models = test_support::onnx_testdata_models();
  return models;
}

// "" when equal, otherwise where the bytes first differ (printing whole models helps no one).
std::string difference(ByteSpan actual, ByteSpan expected) {
  const auto mismatch =
      std::mismatch(actual.begin(), actual.end(), expected.begin(), expected.end());
  if (mismatch.first == actual.end() && mismatch.second == expected.end()) return {};
  std::ostringstream out;
  out << actual.size() << " bytes instead of " << expected.size() << ", first difference at offset "
      << (mismatch.first - actual.begin());
  return out.str();
}

#define EXPECT_SAME_BYTES(actual, expected) \
  EXPECT_EQ(difference(ByteSpan(actual), ByteSpan(expected)), "")

TEST(OnnxConformance, TheTestdataPackageIsInstalledAndComplete) {
  ASSERT_TRUE(std::filesystem::is_directory(kOnnxTestdataRoot))
      << kOnnxTestdataRoot << " is missing: install libonnx-testdata (scripts/install-deps.sh)";
  EXPECT_GT(testdata_models().size(), kMinTestdataModels);
}

TEST(OnnxConformance, EveryModelRoundTripsByteForByteThroughEveryEntryPoint) {
  const auto& models = testdata_models();
  ASSERT_GT(models.size(), kMinTestdataModels) << "libonnx-testdata missing or incomplete";
  const test_support::ScratchDir scratch("conformance");
  const std::filesystem::path written = scratch / "model.onnx";
  ParseOptions no_copy;
  no_copy.no_copy = true;
  no_copy.raw_data_threshold = 0;  // Borrow every payload, however small.

  std::size_t identical = 0;
  std::size_t borrowed_payloads = 0;
  for (const auto& path : models) {
    SCOPED_TRACE(path.string());
    const Bytes original = test_support::read_file_bytes(path);
    const ModelProto copied = parse_model(ByteSpan(original), {}, path.string());
    const ModelProto borrowed = parse_model(ByteSpan(original), no_copy, path.string());
    const ModelProto mapped = parse_model_file(path);
    const ModelProto mapped_borrowed = parse_model_file(path, no_copy);
    EXPECT_EQ(borrowed, copied);
    EXPECT_EQ(mapped, copied);
    EXPECT_EQ(mapped_borrowed, copied);
    for_each_tensor(borrowed, [&](const TensorProto& tensor, const TensorSite&) {
      if (tensor.raw_data && tensor.raw_data->is_borrowed()) ++borrowed_payloads;
    });

    const Bytes to_vector = serialize_model(copied);
    EXPECT_SAME_BYTES(to_vector, original);
    EXPECT_SAME_BYTES(serialize_model_to_owned_bytes(borrowed).span(), original);
    EXPECT_EQ(serialized_size(mapped), original.size());

    Bytes streamed;
    wire::VectorSink sink(streamed);
    serialize_model(mapped_borrowed, sink);
    EXPECT_SAME_BYTES(streamed, original);

    const MessageSerializer<ModelProto> sized(mapped);
    Bytes exact(static_cast<std::size_t>(sized.size()));
    sized.write(MutableByteSpan(exact));
    EXPECT_SAME_BYTES(exact, original);

    serialize_model_to_file(mapped_borrowed, written);
    EXPECT_SAME_BYTES(test_support::read_file_bytes(written), original);

    identical += to_vector == original && streamed == original;
  }
  EXPECT_EQ(identical, models.size());
  // Some reference models carry raw_data: no_copy must have borrowed them.
  EXPECT_GT(borrowed_payloads, 100u);
  std::printf("conformance: %zu of %zu models re-serialized byte for byte\n", identical,
              models.size());
}

struct PythonSerialization {
  std::string sha256;
  std::uint64_t size = 0;
};

// Runs tests/oracle/python_serialize.py once over the whole package: relative path -> digest.
std::map<std::string, PythonSerialization> python_serializations() {
  const std::filesystem::path script =
      std::filesystem::path(ONNXZIP_TEST_DATA_DIR).parent_path() / "oracle" / "python_serialize.py";
  const test_support::ToolResult result =
      test_support::run_tool("/usr/bin/python3 " + test_support::shell_quote(script.string()) +
                             " " + test_support::shell_quote(kOnnxTestdataRoot));
  EXPECT_EQ(result.exit_code, 0) << result.output.substr(0, 2000);
  std::map<std::string, PythonSerialization> found;
  std::istringstream lines(result.output);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    PythonSerialization entry;
    std::string relative;
    if (!(fields >> entry.sha256 >> entry.size) || entry.sha256.size() != 64) continue;
    fields.get();  // The space before the path (which may itself hold spaces).
    std::getline(fields, relative);
    found[relative] = entry;
  }
  return found;
}

TEST(OnnxConformance, EveryModelSerializesLikePythonOnnx) {
  const auto& models = testdata_models();
  ASSERT_GT(models.size(), kMinTestdataModels) << "libonnx-testdata missing or incomplete";
  ASSERT_TRUE(std::filesystem::exists("/usr/bin/python3")) << "python3-onnx is a test dependency";
  const auto python = python_serializations();
  ASSERT_EQ(python.size(), models.size());

  std::size_t agreeing = 0;
  for (const auto& path : models) {
    const std::string relative = path.lexically_relative(kOnnxTestdataRoot).generic_string();
    SCOPED_TRACE(relative);
    const auto expected = python.find(relative);
    ASSERT_NE(expected, python.end());
    const Bytes ours = serialize_model(parse_model_file(path));
    const std::string digest = test_support::sha256_hex(ours);
    EXPECT_EQ(ours.size(), expected->second.size);
    EXPECT_EQ(digest, expected->second.sha256);
    agreeing += ours.size() == expected->second.size && digest == expected->second.sha256;
  }
  EXPECT_EQ(agreeing, models.size());
  std::printf("conformance: %zu of %zu models serialize as python3-onnx does\n", agreeing,
              models.size());
}

}  // namespace
}  // namespace onnxzip
