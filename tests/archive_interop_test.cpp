// Archives judged by the reference onnx package (/usr/bin/python3, python3-onnx) and the ZIP
// tools of spec §10:
//   * extraction (spec §8): unzip the archive into a folder; onnx.load("<folder>/__MODEL_PROTO")
//     resolves every tensor, onnx.checker.check_model accepts the model, and every tensor value
//     equals the original's;
//   * the view model: onnx.load(view) reads the initializers straight out of the archive file.
// A test is skipped only when its tool is not installed.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "onnxzip/archive.h"
#include "onnxzip/tensor.h"
#include "support/external_tool.h"
#include "support/model_builder.h"
#include "support/scratch_dir.h"
#include "support/sha256.h"

namespace onnxzip {
namespace {

using test_support::find_tool;
using test_support::run_tool;
using test_support::ScratchDir;
using test_support::shell_quote;

constexpr char kPython[] = "/usr/bin/python3";

// Prints "EXTERNAL <n>" (tensors still external before loading), then "TENSOR <name> <sha256>"
// for every non-STRING tensor of the graph and its subgraphs after onnx.load and check_model.
constexpr char kCheckScript[] = R"(import hashlib, sys, onnx
from onnx import numpy_helper

def tensors(graph):
    yield from graph.initializer
    for node in graph.node:
        for a in node.attribute:
            if a.HasField("t"):
                yield a.t
            yield from a.tensors
            if a.HasField("g"):
                yield from tensors(a.g)
            for g in a.graphs:
                yield from tensors(g)

path = sys.argv[1]
unresolved = onnx.load(path, load_external_data=False)
print("EXTERNAL", sum(1 for t in tensors(unresolved.graph)
                      if t.data_location == onnx.TensorProto.EXTERNAL))
model = onnx.load(path)
onnx.checker.check_model(model)
for t in tensors(model.graph):
    if t.data_type == onnx.TensorProto.STRING:
        continue
    assert t.data_location != onnx.TensorProto.EXTERNAL, t.name
    print("TENSOR", t.name, hashlib.sha256(numpy_helper.to_array(t).tobytes()).hexdigest())
)";

struct PythonView {
  std::size_t external = 0;
  std::map<std::string, std::string> hashes;  // Tensor name -> SHA-256 of its bytes.
};

PythonView run_check_script(const ScratchDir& dir, const std::filesystem::path& model) {
  const auto script = dir / "check.py";
  if (!std::filesystem::exists(script)) test_support::write_file_bytes(script, kCheckScript);
  const auto result = run_tool(std::string(kPython) + " " + shell_quote(script.string()) + " " +
                               shell_quote(model.string()) + " 2>&1");
  EXPECT_EQ(result.exit_code, 0) << result.output;
  PythonView view;
  std::istringstream lines(result.output);
  std::string kind;
  while (lines >> kind) {
    if (kind == "EXTERNAL") {
      lines >> view.external;
    } else if (kind == "TENSOR") {
      std::string name, hash;
      lines >> name >> hash;
      view.hashes[name] = hash;
    } else {
      std::string rest;
      std::getline(lines, rest);
    }
  }
  return view;
}

void collect_hashes(const GraphProto& graph, std::map<std::string, std::string>& out) {
  const auto add = [&](const TensorProto& t) {
    if (t.data_type == TensorProto::kString) return;
    out[*t.name] = t.raw_data ? test_support::sha256_hex(t.raw_data->view())
                              : test_support::sha256_hex(typed_data_to_raw(t).span());
  };
  for (const TensorProto& t : graph.initializer) add(t);
  for (const NodeProto& node : graph.node) {
    for (const AttributeProto& a : node.attribute) {
      if (a.t) add(*a.t);
      for (const TensorProto& t : a.tensors) add(t);
      if (a.g) collect_hashes(*a.g, out);
      for (const GraphProto& g : a.graphs) collect_hashes(g, out);
    }
  }
}

struct InteropCase {
  std::string name;
  ModelProto model;
  SaveOptions options;
};

std::vector<InteropCase> interop_cases() {
  return {
      {"mlp", test_support::checker_model_mlp_with_if(), {}},
      {"typed", test_support::checker_model_typed_fields(), {}},
      {"mlp_4096_all", test_support::checker_model_mlp_with_if(),
       SaveOptions{.alignment = 4096, .threshold = 0}},
      {"typed_dedupe", test_support::checker_model_typed_fields(), SaveOptions{.dedupe = true}},
  };
}

bool python_has_onnx() {
  if (!find_tool(kPython)) return false;
  return run_tool(std::string(kPython) + " -c 'import onnx, numpy' 2>&1").exit_code == 0;
}

TEST(ArchiveInterop, ExtractedArchiveLoadsAndChecksInTheOnnxPackage) {
  if (!python_has_onnx()) GTEST_SKIP() << "no /usr/bin/python3 with onnx";
  if (!find_tool("unzip")) GTEST_SKIP() << "no unzip";
  ScratchDir dir("archive_interop_extract");
  for (const InteropCase& c : interop_cases()) {
    SCOPED_TRACE(c.name);
    const auto archive_path = dir / (c.name + ".onnxz");
    save(c.model, archive_path, c.options);
    const auto folder = dir / (c.name + "_extracted");
    const auto unzip = run_tool("unzip -q " + shell_quote(archive_path.string()) + " -d " +
                                shell_quote(folder.string()) + " 2>&1");
    ASSERT_EQ(unzip.exit_code, 0) << unzip.output;

    const Archive archive = Archive::open(archive_path);
    ASSERT_FALSE(archive.tensors().empty());
    const PythonView python = run_check_script(dir, folder / "__MODEL_PROTO");
    // tensors() lists the inline ones too (spec/names.md); Python counts references.
    EXPECT_EQ(python.external, static_cast<std::size_t>(std::count_if(
                                   archive.tensors().begin(), archive.tensors().end(),
                                   [](const Archive::TensorInfo& t) { return !t.is_inline; })));
    std::map<std::string, std::string> expected;
    collect_hashes(*c.model.graph, expected);
    EXPECT_EQ(python.hashes, expected);
  }
}

TEST(ArchiveInterop, ViewModelLoadsTheArchiveInPlaceInTheOnnxPackage) {
  if (!python_has_onnx()) GTEST_SKIP() << "no /usr/bin/python3 with onnx";
  ScratchDir dir("archive_interop_view");
  for (const InteropCase& c : interop_cases()) {
    SCOPED_TRACE(c.name);
    const auto archive_path = dir / (c.name + ".onnxz");
    save(c.model, archive_path, c.options);
    const auto view_path = dir / (c.name + ".onnx");
    write_view_model(archive_path, view_path);
    // Small: the weights stay in the archive.
    EXPECT_LT(std::filesystem::file_size(view_path), std::filesystem::file_size(archive_path));

    const Archive archive = Archive::open(archive_path);
    // Initializers of at least 1 KiB stay in the archive; smaller ones go inline
    // (write_view_model).
    std::size_t initializers = 0;
    for (const Archive::TensorInfo& info : archive.tensors()) {
      initializers += info.site.find("initializer") != std::string::npos &&
                      info.data.size() >= kDefaultExternalThreshold;
    }
    ASSERT_GT(initializers, 0u);
    const PythonView python = run_check_script(dir, view_path);
    EXPECT_EQ(python.external, initializers);
    std::map<std::string, std::string> expected;
    collect_hashes(*c.model.graph, expected);
    EXPECT_EQ(python.hashes, expected);
  }
}

// spec §10: the reference checks of the ZIP tools, on archives the archive layer wrote.
TEST(ArchiveInterop, ZipToolsAcceptTheArchives) {
  ScratchDir dir("archive_interop_tools");
  const auto path = dir / "model.onnxz";
  save(test_support::model_with_tensors_everywhere(), path, SaveOptions{.threshold = 0});
  const std::string quoted = shell_quote(path.string());
  struct Tool {
    std::string executable;
    std::string command;
  };
  const std::vector<Tool> tools = {
      {"unzip", "unzip -t " + quoted},
      {kPython, std::string(kPython) + " -m zipfile -t " + quoted},
      {"7z", "7z t " + quoted},
      {"zipalign", "zipalign -c -v 64 " + quoted},
  };
  std::size_t ran = 0;
  for (const Tool& tool : tools) {
    if (!find_tool(tool.executable)) continue;
    const auto result = run_tool(tool.command + " 2>&1");
    EXPECT_EQ(result.exit_code, 0) << tool.command << "\n" << result.output;
    ++ran;
  }
  if (ran == 0) GTEST_SKIP() << "no ZIP tool installed";
}

}  // namespace
}  // namespace onnxzip
