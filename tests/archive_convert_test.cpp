// Conversion legacy <-> .onnxz through the library functions (read_legacy_model + save, load +
// write_legacy_model), judged by independent tools: the legacy models are made by the reference
// onnx package (tests/data/make_legacy_models.py: inline, external data in one file, one file
// per tensor), the archives must pass `zipalign -c -v 64` and `unzip -t` (spec §10) and verify(),
// and the models converted back (inline and with external data) must pass onnx.checker and load
// in the reference package with every tensor equal to the original's.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "onnxzip/archive.h"
#include "onnxzip/legacy.h"
#include "onnxzip/tensor.h"
#include "support/external_tool.h"
#include "support/legacy_models.h"
#include "support/scratch_dir.h"

namespace onnxzip {
namespace {

namespace fs = std::filesystem;
using test_support::find_tool;
using test_support::python_dump;
using test_support::PythonView;
using test_support::run_tool;
using test_support::ScratchDir;
using test_support::shell_quote;

// What an external ZIP tool says of an archive; nullopt when the tool is not installed.
std::optional<test_support::ToolResult> tool_check(const std::string& tool,
                                                   const std::string& arguments,
                                                   const fs::path& archive) {
  if (!find_tool(tool)) return std::nullopt;
  return run_tool(tool + " " + arguments + " " + shell_quote(archive.string()) + " 2>&1");
}

TEST(ArchiveConvert, LegacyModelsConvertBothWaysAndPassTheReferenceTools) {
  const test_support::LegacyModelSet* const legacy = test_support::LegacyModelSet::get();
  if (legacy == nullptr) GTEST_SKIP() << "needs " << test_support::kPython << " with onnx";
  ScratchDir dir("archive_convert");

  struct Variant {
    std::string name;
    SaveOptions options;
  };
  const std::vector<Variant> variants = {
      {"default", {}},  // A = 64, T = 1024: the large initializers become entries.
      {"all_4096",
       SaveOptions{.alignment = 4096, .threshold = 0}},  // Every tensor, even Constants'.
      {"all_128_dedupe", SaveOptions{.alignment = 128, .threshold = 0, .dedupe = true}},
  };
  std::vector<fs::path> converted_back;
  std::map<std::string, std::string> case_of;  // Converted-back model -> its legacy case.
  std::size_t tool_runs = 0;
  for (const std::string legacy_case : {"inline_raw", "external_one_file", "external_per_tensor"}) {
    const ModelProto model = read_legacy_model(legacy->model(legacy_case));
    for (const Variant& variant : variants) {
      const std::string stem = legacy_case + "_" + variant.name;
      SCOPED_TRACE(stem);
      const fs::path archive = dir / (stem + ".onnxz");
      save(model, archive, variant.options);

      const VerifyReport report = verify(archive);
      for (const VerifyFinding& f : report.findings) {
        ADD_FAILURE() << to_string(f.severity) << " " << f.entry << ": " << f.message;
      }
      EXPECT_TRUE(report.ok());
      for (const auto& [tool, arguments] :
           {std::pair<std::string, std::string>{"zipalign", "-c -v 64"}, {"unzip", "-t"}}) {
        if (const auto result = tool_check(tool, arguments, archive)) {
          EXPECT_EQ(result->exit_code, 0) << tool << " " << arguments << "\n" << result->output;
          ++tool_runs;
        }
      }
      if (variant.options.alignment == 4096) {
        if (const auto result = tool_check("zipalign", "-c -v 4096", archive)) {
          EXPECT_EQ(result->exit_code, 0) << result->output;
        }
      }

      // Back to legacy: the same model (every payload now raw_data), inline and external.
      const ModelProto loaded = load(archive);
      EXPECT_EQ(loaded, model);
      const fs::path inline_dir = dir / (stem + "_inline");
      const fs::path external_dir = dir / (stem + "_external");
      fs::create_directories(inline_dir);
      fs::create_directories(external_dir);
      LegacyWriteOptions inline_options;
      inline_options.mode = LegacyWriteOptions::Mode::kInline;
      write_legacy_model(loaded, inline_dir / "model.onnx", inline_options);
      LegacyWriteOptions external_options;
      external_options.mode = LegacyWriteOptions::Mode::kExternal;
      external_options.threshold = 0;
      write_legacy_model(loaded, external_dir / "model.onnx", external_options);
      EXPECT_TRUE(fs::exists(external_dir / "model.onnx.data"));
      for (const fs::path& folder : {inline_dir, external_dir}) {
        converted_back.push_back(folder / "model.onnx");
        case_of[converted_back.back().string()] = legacy_case;
      }
    }
  }
  if (tool_runs == 0) std::printf("[ note ] neither zipalign nor unzip is installed\n");

  const auto views = python_dump(converted_back);
  ASSERT_EQ(views.size(), converted_back.size());
  for (const fs::path& path : converted_back) {
    SCOPED_TRACE(path.string());
    const PythonView& view = views.at(path.string());
    EXPECT_EQ(view.checker, "ok");
    EXPECT_EQ(view.digests, legacy->expected(case_of.at(path.string())));
  }
}

}  // namespace
}  // namespace onnxzip
