// What finding every tensor of a model costs, next to parsing the model (the yardstick: every
// load parses, then walks), on a structure-heavy model built once per run: 200,000 nodes with two
// small attributes each, every 8th a Constant holding a 16-float tensor, every 1,000th an If
// whose two branches hold a node with a tensor attribute and an initializer; 10,000 initializers
// of 64 bytes. Nearly all the walk's work is in the nodes that hold no tensor.
//
//   * for_each_tensor over the parsed model (tensor.h), on the load path of every archive;
//   * walk_kept_tensors over the same model's bytes (model_parts.h), for an edit of the
//     model's properties.
//
// The summary prints each as a ratio to the parse (goal: a small fraction of it). Flags besides
// Google Benchmark's: --nodes=N (default 200000).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_support.h"
#include "model_parts.h"
#include "onnxzip/onnx_codec.h"
#include "onnxzip/tensor.h"

namespace onnxzip::bench {
namespace {

std::size_t g_nodes = 200000;

TensorProto small_tensor(const std::string& name, std::size_t floats) {
  TensorProto tensor;
  tensor.name = name;
  tensor.data_type = TensorProto::kFloat;
  tensor.dims = {static_cast<std::int64_t>(floats)};
  OwnedBytes payload(floats * 4);
  fill_random_ish(floats, 0, payload.mutable_span());
  tensor.raw_data = TensorBytes::owned(std::move(payload));
  return tensor;
}

AttributeProto int_attribute(const char* name, std::int64_t value) {
  AttributeProto attribute;
  attribute.name = name;
  attribute.type = AttributeProto::kInt;
  attribute.i = value;
  return attribute;
}

AttributeProto tensor_attribute(TensorProto tensor) {
  AttributeProto attribute;
  attribute.name = "value";
  attribute.type = AttributeProto::kTensor;
  attribute.t = std::move(tensor);
  return attribute;
}

GraphProto branch(const std::string& name) {
  GraphProto graph;
  graph.name = name;
  NodeProto& node = graph.node.emplace_back();
  node.op_type = "Constant";
  node.output = {name + "/out"};
  node.attribute.push_back(tensor_attribute(small_tensor(name + "/value", 16)));
  graph.initializer.push_back(small_tensor(name + "/w", 16));
  return graph;
}

ModelProto structure_heavy_model(std::size_t node_count) {
  ModelProto model;
  model.ir_version = 10;
  model.opset_import.emplace_back().version = 21;
  GraphProto& graph = model.graph.emplace();
  graph.node.reserve(node_count);
  for (std::size_t i = 0; i < node_count; ++i) {
    NodeProto& node = graph.node.emplace_back();
    const std::string name = "layer_" + std::to_string(i / 40) + "/node_" + std::to_string(i);
    node.name = name;
    node.output = {name + "/out"};
    if (i % 1000 == 999) {
      node.op_type = "If";
      AttributeProto then_branch;
      then_branch.name = "then_branch";
      then_branch.type = AttributeProto::kGraph;
      then_branch.g = branch(name + "/then");
      AttributeProto else_branch = then_branch;
      else_branch.name = "else_branch";
      else_branch.g = branch(name + "/else");
      node.attribute = {std::move(then_branch), std::move(else_branch)};
    } else if (i % 8 == 7) {
      node.op_type = "Constant";
      node.attribute.push_back(tensor_attribute(small_tensor(name + "/value", 16)));
    } else {
      node.op_type = "Gemm";
      node.input = {name + "/in", name + "/weight"};
      node.attribute = {int_attribute("transA", 0), int_attribute("transB", 1)};
    }
  }
  for (std::size_t i = 0; i < node_count / 20; ++i) {
    graph.initializer.push_back(small_tensor("weight_" + std::to_string(i), 16));
  }
  return model;
}

struct Fixture {
  std::vector<std::uint8_t> bytes;
  ModelProto model;
  detail::SplitModel split;
  std::size_t tensors = 0;

  static const Fixture& get() {
    static const Fixture fixture;
    return fixture;
  }

 private:
  Fixture()
      : bytes(serialize_model(structure_heavy_model(g_nodes))),
        model(parse_model(bytes, ParseOptions{.no_copy = true})),
        split(detail::split_model(bytes, ParseOptions{}, "bench")) {
    for_each_tensor(model, [&](const TensorProto&, const TensorSite&) { ++tensors; });
    std::printf("model: %zu nodes, %zu tensors, %.1f MB\n", g_nodes, tensors,
                static_cast<double>(bytes.size()) / 1e6);
  }
};

// The yardstick: parsing the bytes, payloads borrowed, the model dropped untimed.
void BM_ParseModel(benchmark::State& state) {
  const Fixture& f = Fixture::get();
  for (auto _ : state) {
    auto model = std::make_unique<ModelProto>(parse_model(f.bytes, ParseOptions{.no_copy = true}));
    benchmark::DoNotOptimize(model.get());
    state.PauseTiming();
    model.reset();
    state.ResumeTiming();
  }
}

void BM_ForEachTensor(benchmark::State& state) {
  const Fixture& f = Fixture::get();
  for (auto _ : state) {
    std::size_t count = 0;
    std::size_t path_bytes = 0;
    for_each_tensor(f.model, [&](const TensorProto&, const TensorSite& site) {
      ++count;
      path_bytes += site.path.size();
    });
    if (count != f.tensors) state.SkipWithError("for_each_tensor missed tensors");
    benchmark::DoNotOptimize(path_bytes);
  }
  state.counters["tensors"] = static_cast<double>(f.tensors);
}

void BM_WalkKeptTensors(benchmark::State& state) {
  const Fixture& f = Fixture::get();
  for (auto _ : state) {
    std::size_t count = 0;
    const bool complete = detail::walk_kept_tensors(
        f.split.kept, ParseOptions{}.max_depth, [&](ByteSpan tensor) { count += !tensor.empty(); });
    if (!complete || count != f.tensors) state.SkipWithError("walk_kept_tensors missed tensors");
  }
}

BENCHMARK(BM_ParseModel)->MinTime(1.0)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ForEachTensor)->MinTime(1.0)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_WalkKeptTensors)->MinTime(1.0)->Unit(benchmark::kMillisecond);

void summary(const FigureReporter& r) {
  std::printf("\nSummary (ratios of real time; goal in the last column)\n");
  r.ratio("for_each_tensor / parse_model", "BM_ForEachTensor", "BM_ParseModel", "a small fraction");
  r.ratio("walk_kept_tensors / parse_model", "BM_WalkKeptTensors", "BM_ParseModel",
          "a small fraction");
}

}  // namespace
}  // namespace onnxzip::bench

int main(int argc, char** argv) {
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--nodes=", 0) == 0) {
      onnxzip::bench::g_nodes = static_cast<std::size_t>(std::atoll(arg.c_str() + 8));
    } else {
      argv[kept++] = argv[i];
    }
  }
  return onnxzip::bench::run_main(kept, argv, "tensor_bench", onnxzip::bench::summary);
}
