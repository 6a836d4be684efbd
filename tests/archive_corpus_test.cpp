// Every model of the ONNX backend test data (Debian's libonnx-testdata): saved with every tensor
// external (threshold 0), loaded, written inline and read back, it must equal the original --
// graph, metadata and every tensor value (typed fields compared as the raw bytes they become).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "onnxzip/archive.h"
#include "onnxzip/internal/zip_reader.h"
#include "onnxzip/tensor.h"
#include "support/scratch_dir.h"

namespace onnxzip {
namespace {

constexpr char kTestDataDir[] = "/usr/share/libonnx-testdata";

std::vector<std::filesystem::path> corpus_models() {
  std::vector<std::filesystem::path> models;
  std::error_code error;
  for (auto it = std::filesystem::recursive_directory_iterator(kTestDataDir, error);
       !error && it != std::filesystem::recursive_directory_iterator(); it.increment(error)) {
    if (it->is_regular_file() && it->path().filename() == "model.onnx")
      models.push_back(it->path());
  }
  std::sort(models.begin(), models.end());
  return models;
}

void normalize(ModelProto& model) {
  for_each_tensor(model, [](TensorProto& tensor, const TensorSite&) {
    if (element_bits(tensor.data_type.value_or(0)) != 0) move_typed_data_to_raw(tensor);
  });
}

TEST(ArchiveCorpus, EveryBackendTestModelRoundTripsWithEveryTensorExternal) {
  const std::vector<std::filesystem::path> models = corpus_models();
  if (models.empty()) GTEST_SKIP() << "libonnx-testdata is not installed";
  ASSERT_GT(models.size(), 1000u);

  test_support::ScratchDir dir("archive_corpus");
  const auto archive_path = dir / "model.onnxz";
  std::size_t externalized = 0;
  std::size_t expected_entries = 0;
  std::size_t failures = 0;
  for (const std::filesystem::path& path : models) {
    SCOPED_TRACE(path.string());
    const ModelProto original = parse_model_file(path);
    // spec §7.4 with T = 0: every tensor but STRING / UNDEFINED and sparse ones.
    for_each_tensor(original, [&](const TensorProto& tensor, const TensorSite& site) {
      const bool sparse = site.place != TensorPlace::kInitializer &&
                          site.place != TensorPlace::kAttributeTensor &&
                          site.place != TensorPlace::kAttributeTensors;
      if (!sparse && element_bits(tensor.data_type.value_or(0)) != 0) ++expected_entries;
    });
    save(original, archive_path, SaveOptions{.threshold = 0});
    externalized += ZipReader::open(archive_path).entries().size() - 1;
    const std::vector<std::uint8_t> inline_bytes = serialize_model(load(archive_path));
    ModelProto round_tripped = parse_model(inline_bytes);

    ModelProto expected = original;
    normalize(expected);
    normalize(round_tripped);
    if (round_tripped != expected) {
      ADD_FAILURE() << "differs after the round trip";
      if (++failures == 5) break;
    }
  }
  std::filesystem::remove(archive_path);
  EXPECT_EQ(externalized, expected_entries);
  EXPECT_GT(externalized, 300u);  // Most backend models take their tensors as inputs.
}

}  // namespace
}  // namespace onnxzip
