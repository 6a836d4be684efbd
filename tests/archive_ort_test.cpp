// The view model (write_view_model) run in ONNX Runtime: a legacy .onnx next to an archive whose
// initializers point into the archive file itself must give today's runtime the same model as
// the original, with no extraction.
//
// The model comes from tests/interop/ort_model.py (/usr/bin/python3, python3-onnx): convolutions
// and a Gemm with a few MB of random float weights, Constant nodes with tensor attributes, a 4 MiB
// embedding table read by Gather, and an If whose branches hold initializers of their own. It is
// read with read_legacy_model, saved as an archive at alignments 64 and 4096, and its view is run
// by tests/interop/run_ort.js in ONNX Runtime (npm package onnxruntime-node, pinned in
// tests/interop/package-lock.json and installed by scripts/install-deps.sh) next to the original,
// on the same inputs, taking both branches. The outputs must be equal bit for bit, and onnx.load
// must see the same tensors in both.
//
// How ONNX Runtime reads the archive's payloads: run_ort.js lists the runtime's mappings of the
// archive once the session exists. ONNX Runtime 1.30 maps external data with mmap from the page
// boundary at or below the offset (the mapping starts up to 4095 bytes early), so it maps the
// archive in place whatever its alignment: at A = 64 as at A = 4096. Weights it repacks for its
// kernels (Conv, Gemm) are copied into its own memory and their mapping released, as they would
// be from any file; the embedding table, used as it is, stays mapped. The test requires that
// mapping at both alignments.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "onnxzip/archive.h"
#include "onnxzip/legacy.h"
#include "onnxzip/onnx_codec.h"
#include "onnxzip/tensor.h"
#include "support/external_tool.h"
#include "support/scratch_dir.h"

namespace onnxzip {
namespace {

namespace fs = std::filesystem;
using test_support::find_tool;
using test_support::read_file_bytes;
using test_support::run_tool;
using test_support::ScratchDir;
using test_support::shell_quote;

constexpr char kPython[] = "/usr/bin/python3";
const fs::path kInteropDir = fs::path(ONNXZIP_TEST_DATA_DIR).parent_path() / "interop";

// The node executable, when node and the pinned onnxruntime-node package are both installed.
std::optional<fs::path> node_with_onnxruntime() {
  if (!fs::exists(kInteropDir / "node_modules" / "onnxruntime-node" / "package.json")) {
    return std::nullopt;
  }
  if (auto node = find_tool("node")) return node;
  return find_tool("nodejs");
}

struct OrtRun {
  std::string report;                  // run_ort.js's JSON line.
  std::vector<fs::path> output_files;  // Raw bytes of each run's output, in run order.
};

OrtRun run_ort(const fs::path& node, const fs::path& model, const fs::path& inputs,
               const fs::path& out_dir, std::size_t runs) {
  const auto result = run_tool(shell_quote(node.string()) + " " +
                               shell_quote((kInteropDir / "run_ort.js").string()) + " " +
                               shell_quote(model.string()) + " " + shell_quote(inputs.string()) +
                               " " + shell_quote(out_dir.string()) + " 2>&1");
  EXPECT_EQ(result.exit_code, 0) << model << "\n" << result.output;
  OrtRun run{result.output, {}};
  for (std::size_t r = 0; r < runs; ++r) {
    run.output_files.push_back(out_dir / ("run" + std::to_string(r) + "_0.bin"));
  }
  return run;
}

std::vector<float> floats_of(const fs::path& path) {
  const std::vector<std::uint8_t> bytes = read_file_bytes(path);
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

TEST(ArchiveOrt, ViewModelRunsInOnnxRuntimeAsTheOriginalDoes) {
  const auto node = node_with_onnxruntime();
  if (!node) {
    GTEST_SKIP() << "ONNX Runtime is not installed: needs node and "
                 << (kInteropDir / "node_modules" / "onnxruntime-node")
                 << " (scripts/install-deps.sh runs `npm ci --ignore-scripts` in tests/interop)";
  }
  if (run_tool(std::string(kPython) + " -c 'import onnx, numpy' 2>&1").exit_code != 0) {
    GTEST_SKIP() << "needs " << kPython << " with the onnx package";
  }
  ScratchDir dir("archive_ort");
  const fs::path script = kInteropDir / "ort_model.py";
  const auto made = run_tool(std::string(kPython) + " " + shell_quote(script.string()) + " make " +
                             shell_quote((dir / "source").string()) + " 2>&1");
  ASSERT_EQ(made.exit_code, 0) << made.output;
  const fs::path original = dir / "source" / "model.onnx";
  const fs::path inputs = dir / "source" / "inputs.json";
  constexpr std::size_t kRuns = 2;  // The If's then and else branches.

  const OrtRun expected = run_ort(*node, original, inputs, dir / "out_original", kRuns);
  const ModelProto model = read_legacy_model(original);

  // Threshold 0 puts every tensor in an entry, the 16-byte shape that ONNX Runtime's shape
  // inference reads among them: the view must still carry such small tensors inline, since the
  // runtime cannot read external data while it builds the graph.
  for (const auto& variant :
       {std::pair<std::uint32_t, std::uint64_t>{64, kDefaultExternalThreshold}, {4096, 0}}) {
    // Named copies, not structured bindings: clang 14 cannot capture a binding in a lambda.
    const std::uint32_t alignment = variant.first;
    const std::uint64_t threshold = variant.second;
    const std::string stem =
        "model_a" + std::to_string(alignment) + "_t" + std::to_string(threshold);
    SCOPED_TRACE(stem);
    const fs::path archive = dir / (stem + ".onnxz");
    const fs::path view = dir / (stem + ".onnx");
    save(model, archive, SaveOptions{.alignment = alignment, .threshold = threshold});
    EXPECT_TRUE(verify(archive).ok());
    write_view_model(archive, view);

    // The weights stay in the archive: the view is the graph, the small tensors and the few
    // attribute tensors it must carry inline (1 KiB Constants).
    EXPECT_GT(fs::file_size(archive), std::uintmax_t{8'500'000});
    EXPECT_LT(fs::file_size(view), std::uintmax_t{16 * 1024});
    // Every large initializer, in the main graph and in both branches, points into the archive
    // at its entry's (aligned) data offset.
    const ModelProto parsed = parse_model_file(view);
    const Archive opened = Archive::open(archive);
    std::size_t in_archive = 0;
    for_each_tensor(parsed, [&](const TensorProto& t, const TensorSite& site) {
      if (t.data_location != TensorProto::kExternal) return;
      SCOPED_TRACE(std::string(site.path));
      EXPECT_EQ(site.place, TensorPlace::kInitializer);
      ASSERT_EQ(t.external_data.size(), 3u);
      EXPECT_EQ(t.external_data[0].value, archive.filename().string());
      const std::uint64_t offset = std::stoull(*t.external_data[1].value);
      EXPECT_EQ(offset % alignment, 0u);
      const Archive::TensorInfo* info = opened.find_tensor(*t.name);
      ASSERT_NE(info, nullptr);
      EXPECT_EQ(offset, info->offset);
      EXPECT_EQ(std::stoull(*t.external_data[2].value), info->data.size());
      ++in_archive;
    });
    // conv1.weight, conv2.weight, fc.weight, fc.bias, embed.weight, then_scale, else_shift (the
    // conv biases and the shape are under 1 KiB, the Constants' values are attributes).
    EXPECT_EQ(in_archive, 7u);

    const OrtRun got = run_ort(*node, view, inputs, dir / ("out_" + stem), kRuns);
    for (std::size_t r = 0; r < kRuns; ++r) {
      SCOPED_TRACE("run " + std::to_string(r));
      const std::vector<float> want = floats_of(expected.output_files[r]);
      const std::vector<float> have = floats_of(got.output_files[r]);
      ASSERT_EQ(have.size(), 256u);
      ASSERT_EQ(have.size(), want.size());
      for (std::size_t i = 0; i < want.size(); ++i) {
        EXPECT_LE(std::fabs(have[i] - want[i]), 1e-6f * std::max(1.0f, std::fabs(want[i]))) << i;
      }
      // Same runtime, same weights, one thread: the same bits.
      EXPECT_EQ(read_file_bytes(got.output_files[r]), read_file_bytes(expected.output_files[r]));
    }
    // The outputs of the two branches differ, so both really ran.
    EXPECT_NE(read_file_bytes(got.output_files[0]), read_file_bytes(got.output_files[1]));
    // The 4 MiB embedding table is mapped from the archive itself, from the page at or below
    // its offset.
    const Archive::TensorInfo* embed = opened.find_tensor("embed.weight");
    ASSERT_NE(embed, nullptr);
    const std::regex mapping("\\{\"file\":\"" + archive.filename().string() +
                             "\",\"offset\":(\\d+),\"size\":(\\d+)");
    bool embed_mapped = false;
    for (auto it = std::sregex_iterator(got.report.begin(), got.report.end(), mapping);
         it != std::sregex_iterator(); ++it) {
      const std::uint64_t offset = std::stoull((*it)[1]);
      const std::uint64_t size = std::stoull((*it)[2]);
      std::printf("[ ORT A=%u ] maps %s at file offset %llu, %llu bytes\n", alignment,
                  archive.filename().c_str(), static_cast<unsigned long long>(offset),
                  static_cast<unsigned long long>(size));
      embed_mapped |= offset == *embed->offset / 4096 * 4096 &&
                      offset + size >= *embed->offset + embed->data.size();
    }
    EXPECT_TRUE(embed_mapped) << "embed.weight at " << *embed->offset << "\n" << got.report;

    // The reference package sees the same tensors through the view as in the original.
    const auto compared =
        run_tool(std::string(kPython) + " " + shell_quote(script.string()) + " compare " +
                 shell_quote(original.string()) + " " + shell_quote(view.string()) + " 2>&1");
    EXPECT_EQ(compared.exit_code, 0) << compared.output;
    EXPECT_NE(compared.output.find("tensors 12"), std::string::npos) << compared.output;
  }
}

}  // namespace
}  // namespace onnxzip
