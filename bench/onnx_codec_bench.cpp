// Throughput of the ONNX codec against libprotobuf's generated onnx::ModelProto (onnx 1.12, the
// only benchmark linked with libprotobuf) and python3-onnx's onnx.load, on two models generated
// once per run into a scratch folder (removed at exit):
//   (a) structure-heavy: 200,000 nodes of varied operators, 2-3 long-named inputs and outputs,
//       a few attributes each, a value_info per node output;
//   (b) weight-heavy: ~1 GB of inline raw_data in 100 initializers of 10 MB.
// Each benchmark reports bytes of serialized model per second. At the end a table prints the
// ratios the codec is held to: no_copy parsing >= 2x libprotobuf on (a) and near a plain read()
// of the file on (b); serialization >= 1.5x libprotobuf.
//
// Flags besides Google Benchmark's: --nodes=N (default 200000), --weights_mb=N (default 1000),
// --python_runs=N (default 3; 0 skips python). Parse timings include destroying the parsed model
// (load and drop), for onnxzip and libprotobuf alike, except the *_only ones.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <onnx/onnx_pb.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "onnxzip/internal/protobuf_wire.h"
#include "onnxzip/onnx_codec.h"
#include "onnxzip/onnx_model.h"
#include "output_file.h"

namespace onnxzip {
namespace {

namespace fs = std::filesystem;

struct BenchModel {
  std::string label;  // "a" or "b"
  std::string description;
  fs::path path;
  std::vector<std::uint8_t> bytes;
  // The serializers' inputs, made when the first serializer benchmark of this model starts and
  // released when another model's benchmarks start (see prepare()).
  std::unique_ptr<ModelProto> parsed;
  std::unique_ptr<onnx::ModelProto> reference;
  double python_seconds = 0;  // Best onnx.load time, 0 when not measured.
};

std::vector<std::unique_ptr<BenchModel>> g_models;
fs::path g_scratch;

// Deterministic pseudo-random numbers (the benchmark must not vary between runs).
class Lcg final {
 public:
  std::uint32_t next() {
    state_ = state_ * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<std::uint32_t>(state_ >> 33);
  }
  std::uint32_t below(std::uint32_t n) { return next() % n; }

 private:
  std::uint64_t state_ = 42;
};

ValueInfoProto tensor_value_info(const std::string& name, std::int32_t elem_type,
                                 std::initializer_list<std::int64_t> dims, const char* batch) {
  ValueInfoProto info;
  info.name = name;
  TypeProto::Tensor& tensor = info.type.emplace().tensor_type.emplace();
  tensor.elem_type = elem_type;
  TensorShapeProto& shape = tensor.shape.emplace();
  if (batch != nullptr) shape.dim.emplace_back().dim_param = batch;
  for (const std::int64_t d : dims) shape.dim.emplace_back().dim_value = d;
  return info;
}

AttributeProto int_attribute(const char* name, std::int64_t value) {
  AttributeProto a;
  a.name = name;
  a.type = AttributeProto::kInt;
  a.i = value;
  return a;
}

AttributeProto ints_attribute(const char* name, std::initializer_list<std::int64_t> values) {
  AttributeProto a;
  a.name = name;
  a.type = AttributeProto::kInts;
  a.ints = values;
  return a;
}

AttributeProto float_attribute(const char* name, float value) {
  AttributeProto a;
  a.name = name;
  a.type = AttributeProto::kFloat;
  a.f = value;
  return a;
}

AttributeProto string_attribute(const char* name, const char* value) {
  AttributeProto a;
  a.name = name;
  a.type = AttributeProto::kString;
  a.s = value;
  return a;
}

// (a): what an exporter writes for a large transformer-like graph, without the weights.
ModelProto structure_heavy_model(std::size_t node_count) {
  ModelProto model;
  model.ir_version = 8;
  model.producer_name = "onnxzip-bench";
  model.producer_version = "1.0";
  OperatorSetIdProto& opset = model.opset_import.emplace_back();
  opset.domain = "";
  opset.version = 17;
  GraphProto& graph = model.graph.emplace();
  graph.name = "structure_heavy";
  graph.input.push_back(
      tensor_value_info("model/input_ids:0", TensorProto::kFloat, {512, 768}, "batch"));
  graph.node.reserve(node_count);
  graph.value_info.reserve(node_count);
  Lcg random;
  std::vector<std::string> produced = {"model/input_ids:0"};
  const char* const ops[] = {"MatMul",  "Add",     "LayerNormalization",
                             "Gelu",    "Softmax", "Transpose",
                             "Reshape", "Conv",    "Mul",
                             "Gather",  "Concat",  "Slice"};
  for (std::size_t i = 0; i < node_count; ++i) {
    const char* const op = ops[random.below(std::size(ops))];
    NodeProto& node = graph.node.emplace_back();
    const std::string layer = "model/encoder/layer_" + std::to_string(i / 40) + "/";
    node.name = layer + op + "_" + std::to_string(i);
    node.op_type = op;
    const std::size_t inputs = 2 + random.below(2);
    for (std::size_t k = 0; k < inputs; ++k) {
      node.input.push_back(produced[produced.size() - 1 -
                                    random.below(static_cast<std::uint32_t>(
                                        std::min<std::size_t>(produced.size(), 64)))]);
    }
    const std::size_t outputs = 1 + (random.below(4) == 0);
    for (std::size_t k = 0; k < outputs; ++k) {
      node.output.push_back(layer + op + "_" + std::to_string(i) + "/output_" + std::to_string(k) +
                            ":0");
      produced.push_back(node.output.back().str());
      graph.value_info.push_back(tensor_value_info(produced.back(), TensorProto::kFloat,
                                                   {512, 64 * (1 + random.below(12))}, "batch"));
    }
    switch (random.below(5)) {
      case 0:
        node.attribute.push_back(int_attribute("axis", -1));
        node.attribute.push_back(float_attribute("epsilon", 1e-5f));
        break;
      case 1:
        node.attribute.push_back(ints_attribute("perm", {0, 2, 1, 3}));
        break;
      case 2:
        node.attribute.push_back(ints_attribute("kernel_shape", {3, 3}));
        node.attribute.push_back(ints_attribute("pads", {1, 1, 1, 1}));
        node.attribute.push_back(ints_attribute("strides", {1, 1}));
        node.attribute.push_back(int_attribute("group", 1));
        break;
      case 3:
        node.attribute.push_back(string_attribute("approximate", "tanh"));
        break;
      default:
        break;
    }
  }
  graph.output.push_back(
      tensor_value_info(produced.back(), TensorProto::kFloat, {512, 768}, "batch"));
  return model;
}

// (b): inline weights, as torch.onnx.export writes a model under 2 GB.
ModelProto weight_heavy_model(std::size_t total_mb) {
  constexpr std::size_t kTensorBytes = 10 << 20;
  const std::size_t count = std::max<std::size_t>(1, (total_mb << 20) / kTensorBytes);
  ModelProto model;
  model.ir_version = 8;
  model.producer_name = "onnxzip-bench";
  model.opset_import.emplace_back().version = 17;
  GraphProto& graph = model.graph.emplace();
  graph.name = "weight_heavy";
  graph.input.push_back(tensor_value_info("x", TensorProto::kFloat, {1280, 2048}, nullptr));
  Lcg random;
  std::string previous = "x";
  for (std::size_t i = 0; i < count; ++i) {
    TensorProto& weight = graph.initializer.emplace_back();
    weight.name = "encoder.layer." + std::to_string(i) + ".weight";
    weight.data_type = TensorProto::kFloat;
    weight.dims = {2048, static_cast<std::int64_t>(kTensorBytes / 4 / 2048)};
    OwnedBytes payload(kTensorBytes);
    auto* words = reinterpret_cast<std::uint32_t*>(payload.mutable_span().data());
    for (std::size_t k = 0; k < kTensorBytes / 4; ++k) words[k] = random.next();
    weight.raw_data = TensorBytes::owned(std::move(payload));
    NodeProto& node = graph.node.emplace_back();
    node.op_type = "MatMul";
    node.input = {previous, *weight.name};
    node.output = {"h" + std::to_string(i)};
    previous = node.output[0];
  }
  graph.output.push_back(tensor_value_info(previous, TensorProto::kFloat, {}, nullptr));
  return model;
}

std::vector<std::uint8_t> read_whole_file(const fs::path& path) {
  std::vector<std::uint8_t> bytes(fs::file_size(path));
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw std::runtime_error("cannot open " + path.string());
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (done != bytes.size()) throw std::runtime_error("short read of " + path.string());
  return bytes;
}

// Best of `runs` onnx.load(path) in a fresh python3 (import time excluded), in seconds.
double python_load_seconds(const fs::path& path, int runs) {
  if (runs <= 0) return 0;
  const std::string command =
      "/usr/bin/python3 -c 'import sys, time, onnx\n"
      "best = 1e9\n"
      "for _ in range(int(sys.argv[2])):\n"
      "    t = time.perf_counter(); m = onnx.load(sys.argv[1]); best = min(best, "
      "time.perf_counter() - t); del m\n"
      "print(best)' '" +
      path.string() + "' " + std::to_string(runs);
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return 0;
  char line[128] = {};
  const bool got = std::fgets(line, sizeof line, pipe) != nullptr;
  ::pclose(pipe);
  return got ? std::atof(line) : 0;
}

void set_bytes(benchmark::State& state, const BenchModel& m) {
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(m.bytes.size()));
}

// Makes `m` the model whose serializer inputs exist (parsed by both codecs outside the timing),
// releasing any other model's, so that no benchmark runs with another model's objects in the heap.
BenchModel& prepare(const BenchModel* model, bool serializer_inputs) {
  BenchModel* m = nullptr;
  for (const auto& other : g_models) {
    if (other.get() == model) {
      m = other.get();
    } else {
      other->parsed.reset();
      other->reference.reset();
    }
  }
  if (serializer_inputs && !m->parsed) {
    m->parsed = std::make_unique<ModelProto>(parse_model(m->bytes));
    m->reference = std::make_unique<onnx::ModelProto>();
    m->reference->ParseFromArray(m->bytes.data(), static_cast<int>(m->bytes.size()));
  }
  return *m;
}

// --- onnxzip ---

void parse_bytes(benchmark::State& state, const BenchModel* m, bool no_copy) {
  prepare(m, false);
  ParseOptions options;
  options.no_copy = no_copy;
  for (auto _ : state) {
    ModelProto model = parse_model(m->bytes, options);
    benchmark::DoNotOptimize(model);
  }
  set_bytes(state, *m);
}

// Parsing alone: destroying the model is left out of the timing.
void parse_bytes_untimed_destruction(benchmark::State& state, const BenchModel* m) {
  prepare(m, false);
  ParseOptions options;
  options.no_copy = true;
  for (auto _ : state) {
    auto model = std::make_unique<ModelProto>(parse_model(m->bytes, options));
    benchmark::DoNotOptimize(model.get());
    state.PauseTiming();
    model.reset();
    state.ResumeTiming();
  }
  set_bytes(state, *m);
}

void parse_path(benchmark::State& state, const BenchModel* m, bool no_copy) {
  prepare(m, false);
  ParseOptions options;
  options.no_copy = no_copy;
  for (auto _ : state) {
    ModelProto model = parse_model_file(m->path, options);
    benchmark::DoNotOptimize(model);
  }
  set_bytes(state, *m);
}

void serialize_to_vector(benchmark::State& state, const BenchModel* m) {
  prepare(m, true);
  for (auto _ : state) {
    std::vector<std::uint8_t> out = serialize_model(*m->parsed);
    benchmark::DoNotOptimize(out.data());
  }
  set_bytes(state, *m);
}

void serialize_to_owned(benchmark::State& state, const BenchModel* m) {
  prepare(m, true);
  for (auto _ : state) {
    OwnedBytes out = serialize_model_to_owned_bytes(*m->parsed);
    benchmark::DoNotOptimize(out.data());
  }
  set_bytes(state, *m);
}

// Sizing pass, then writing into the caller's buffer: what SerializeToArray does.
void serialize_to_span(benchmark::State& state, const BenchModel* m) {
  prepare(m, true);
  std::vector<std::uint8_t> out(m->bytes.size());
  for (auto _ : state) {
    serialize_model(*m->parsed, MutableByteSpan(out));
    benchmark::DoNotOptimize(out.data());
  }
  set_bytes(state, *m);
}

class DiscardSink final : public wire::ByteSink {
 public:
  void write(ByteSpan bytes) override { benchmark::DoNotOptimize(bytes.data()); }
};

// The streaming writer without I/O: sizing pass, then front-to-back through its buffer.
void serialize_streamed(benchmark::State& state, const BenchModel* m) {
  prepare(m, true);
  DiscardSink sink;
  for (auto _ : state) serialize_model(*m->parsed, sink);
  set_bytes(state, *m);
}

void serialize_file(benchmark::State& state, const BenchModel* m) {
  prepare(m, true);
  const fs::path out = g_scratch / ("out_" + m->label + ".onnx");
  for (auto _ : state) serialize_model_to_file(*m->parsed, out);
  set_bytes(state, *m);
}

// --- libprotobuf ---

void pb_parse(benchmark::State& state, const BenchModel* m) {
  prepare(m, false);
  for (auto _ : state) {
    onnx::ModelProto model;
    if (!model.ParseFromArray(m->bytes.data(), static_cast<int>(m->bytes.size()))) {
      state.SkipWithError("libprotobuf failed to parse");
      break;
    }
    benchmark::DoNotOptimize(model);
  }
  set_bytes(state, *m);
}

void pb_parse_untimed_destruction(benchmark::State& state, const BenchModel* m) {
  prepare(m, false);
  for (auto _ : state) {
    auto model = std::make_unique<onnx::ModelProto>();
    if (!model->ParseFromArray(m->bytes.data(), static_cast<int>(m->bytes.size()))) {
      state.SkipWithError("libprotobuf failed to parse");
      break;
    }
    benchmark::DoNotOptimize(model.get());
    state.PauseTiming();
    model.reset();
    state.ResumeTiming();
  }
  set_bytes(state, *m);
}

void pb_serialize_to_array(benchmark::State& state, const BenchModel* m) {
  prepare(m, true);
  std::vector<std::uint8_t> out(m->bytes.size());
  for (auto _ : state) {
    m->reference->SerializeToArray(out.data(), static_cast<int>(out.size()));
    benchmark::DoNotOptimize(out.data());
  }
  set_bytes(state, *m);
}

void pb_serialize_to_string(benchmark::State& state, const BenchModel* m) {
  prepare(m, true);
  for (auto _ : state) {
    std::string out = m->reference->SerializeAsString();
    benchmark::DoNotOptimize(out.data());
  }
  set_bytes(state, *m);
}

void pb_serialize_file(benchmark::State& state, const BenchModel* m) {
  prepare(m, true);
  const fs::path out = g_scratch / ("pb_out_" + m->label + ".onnx");
  for (auto _ : state) {
    const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    m->reference->SerializeToFileDescriptor(fd);
    ::close(fd);
  }
  set_bytes(state, *m);
}

// --- The floor: reading the file ---

void read_file(benchmark::State& state, const BenchModel* m) {
  prepare(m, false);
  std::vector<std::uint8_t> buffer(m->bytes.size());
  for (auto _ : state) {
    const int fd = ::open(m->path.c_str(), O_RDONLY);
    std::size_t done = 0;
    while (done < buffer.size()) {
      const ssize_t n = ::read(fd, buffer.data() + done, buffer.size() - done);
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    ::close(fd);
    benchmark::DoNotOptimize(buffer.data());
  }
  set_bytes(state, *m);
}

// Keeps bytes/s of every benchmark for the ratio table: with --benchmark_repetitions, the best
// repetition (the machine is shared; the best run is the one least disturbed).
class RatioReporter final : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      const auto rate = run.counters.find("bytes_per_second");
      if (rate != run.counters.end() && !run.error_occurred && run.run_type == Run::RT_Iteration) {
        std::string name = run.benchmark_name();
        // The model's label ends the name; options ("/min_time:2.000", "/real_time",
        // "/repeats:3") follow it.
        for (const char* option : {"/min_time:", "/real_time", "/repeats:"}) {
          const std::size_t at = name.find(option);
          if (at != std::string::npos) name.erase(at);
        }
        rates[name] = std::max(rates[name], rate->second.value);
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
  std::map<std::string, double> rates;
};

int int_flag(int& argc, char** argv, const std::string& name, int fallback) {
  int value = fallback;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--" + name + "=", 0) == 0) {
      value = std::atoi(arg.c_str() + name.size() + 3);
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  return value;
}

// Generates a model in a child process and writes it to the scratch folder, so that building it
// leaves nothing behind in this process's heap to skew the timings.
void write_generated_model(const fs::path& path, ModelProto (*generate)(std::size_t),
                           std::size_t size) {
  std::fflush(nullptr);  // Or the child would print the parent's pending output again.
  const pid_t child = ::fork();
  if (child < 0) throw std::runtime_error("fork failed");
  if (child == 0) {
    int status = 0;
    try {
      serialize_model_to_file(generate(size), path);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "onnx_codec_bench: %s\n", e.what());
      status = 1;
    }
    std::fflush(nullptr);
    ::_exit(status);
  }
  int status = 0;
  if (::waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error("generating " + path.string() + " failed");
  }
}

void add_model(const std::string& label, const std::string& description,
               ModelProto (*generate)(std::size_t), std::size_t size, int python_runs) {
  auto m = std::make_unique<BenchModel>();
  m->label = label;
  m->description = description;
  m->path = g_scratch / ("model_" + label + ".onnx");
  write_generated_model(m->path, generate, size);
  m->bytes = read_whole_file(m->path);
  {
    // Outside any timing: both codecs agree on the model, and onnxzip's output is the input.
    const ModelProto parsed = parse_model(m->bytes);
    if (serialize_model(parsed) != m->bytes) throw std::runtime_error("round trip failed");
    onnx::ModelProto reference;
    if (!reference.ParseFromArray(m->bytes.data(), static_cast<int>(m->bytes.size())) ||
        reference.SerializeAsString().size() != m->bytes.size()) {
      throw std::runtime_error("libprotobuf disagrees on model " + label);
    }
  }
  m->python_seconds = python_load_seconds(m->path, python_runs);
  std::printf("model (%s): %s, %.1f MB; python onnx.load best of %d: %.3f s\n", label.c_str(),
              description.c_str(), static_cast<double>(m->bytes.size()) / 1e6, python_runs,
              m->python_seconds);
  g_models.push_back(std::move(m));
}

void register_benchmarks() {
  for (const auto& owned : g_models) {
    const BenchModel* m = owned.get();
    const std::string s = "/" + m->label;
    // Model (a) takes a few hundred milliseconds per iteration: at the default minimum time a
    // result would be one or two iterations, most of whose cost is the first touch of fresh
    // memory rather than the steady state a long-running process sees.
    const double min_time = m->label == "a" ? 2.0 : 0.5;
    const auto add = [&](benchmark::internal::Benchmark* b) { b->MinTime(min_time); };
    add(benchmark::RegisterBenchmark(("onnxzip_parse_no_copy" + s).c_str(), parse_bytes, m, true));
    add(benchmark::RegisterBenchmark(("onnxzip_parse_copy" + s).c_str(), parse_bytes, m, false));
    add(benchmark::RegisterBenchmark(("onnxzip_parse_path_no_copy" + s).c_str(), parse_path, m,
                                     true)
            ->UseRealTime());
    add(benchmark::RegisterBenchmark(("onnxzip_parse_path_copy" + s).c_str(), parse_path, m, false)
            ->UseRealTime());
    add(benchmark::RegisterBenchmark(("libprotobuf_parse" + s).c_str(), pb_parse, m));
    add(benchmark::RegisterBenchmark(("onnxzip_parse_no_copy_only" + s).c_str(),
                                     parse_bytes_untimed_destruction, m));
    add(benchmark::RegisterBenchmark(("libprotobuf_parse_only" + s).c_str(),
                                     pb_parse_untimed_destruction, m));
    add(benchmark::RegisterBenchmark(("read_file" + s).c_str(), read_file, m)->UseRealTime());
    add(benchmark::RegisterBenchmark(("onnxzip_serialize_vector" + s).c_str(), serialize_to_vector,
                                     m));
    add(benchmark::RegisterBenchmark(("onnxzip_serialize_owned" + s).c_str(), serialize_to_owned,
                                     m));
    add(benchmark::RegisterBenchmark(("onnxzip_serialize_span" + s).c_str(), serialize_to_span, m));
    add(benchmark::RegisterBenchmark(("onnxzip_serialize_streamed" + s).c_str(), serialize_streamed,
                                     m));
    add(benchmark::RegisterBenchmark(("onnxzip_serialize_file" + s).c_str(), serialize_file, m)
            ->UseRealTime());
    add(benchmark::RegisterBenchmark(("libprotobuf_serialize_array" + s).c_str(),
                                     pb_serialize_to_array, m));
    add(benchmark::RegisterBenchmark(("libprotobuf_serialize_string" + s).c_str(),
                                     pb_serialize_to_string, m));
    add(benchmark::RegisterBenchmark(("libprotobuf_serialize_file" + s).c_str(), pb_serialize_file,
                                     m)
            ->UseRealTime());
  }
}

void print_ratios(const std::map<std::string, double>& rates) {
  const auto rate = [&](const std::string& name) {
    const auto it = rates.find(name);
    return it == rates.end() ? 0.0 : it->second;
  };
  const auto line = [&](const char* what, double ours, double theirs, const char* goal) {
    if (ours <= 0 || theirs <= 0) {
      std::printf("  %-52s %8s   %s\n", what, "n/a", goal);
    } else {
      std::printf("  %-52s %7.2fx   %s\n", what, ours / theirs, goal);
    }
  };
  std::printf("\nRatios (throughput of the first / the second; > 1 means onnxzip is faster)\n");
  for (const auto& m : g_models) {
    const std::string s = "/" + m->label;
    const double mb = static_cast<double>(m->bytes.size()) / 1e6;
    std::printf("model (%s) %s, %.1f MB\n", m->label.c_str(), m->description.c_str(), mb);
    // Like with like: CPU time against CPU time for work in memory, wall time against wall time
    // where a file is read or written (UseRealTime benchmarks, python's perf_counter).
    const double pb_parse_rate = rate("libprotobuf_parse" + s);
    line("parse no_copy, load and drop / libprotobuf", rate("onnxzip_parse_no_copy" + s),
         pb_parse_rate, m->label == "a" ? "goal >= 2" : "");
    line("parse no_copy, destruction untimed / libprotobuf", rate("onnxzip_parse_no_copy_only" + s),
         rate("libprotobuf_parse_only" + s), m->label == "a" ? "goal >= 2" : "");
    line("parse copy, load and drop / libprotobuf", rate("onnxzip_parse_copy" + s), pb_parse_rate,
         "");
    const double path_no_copy = rate("onnxzip_parse_path_no_copy" + s);
    const double path_copy = rate("onnxzip_parse_path_copy" + s);
    if (m->python_seconds > 0) {
      const double python_rate = static_cast<double>(m->bytes.size()) / m->python_seconds;
      line("parse path no_copy (mapped) / python onnx.load", path_no_copy, python_rate, "");
      line("parse path copy / python onnx.load", path_copy, python_rate, "");
    }
    line("parse path no_copy (mapped) / read() of the file", path_no_copy, rate("read_file" + s),
         m->label == "b" ? "goal: near 1 or above" : "");
    line("parse path copy / read() of the file", path_copy, rate("read_file" + s), "");
    // Each serializer against libprotobuf's doing the same thing.
    const double pb_string = rate("libprotobuf_serialize_string" + s);
    line("serialize to new memory: owned bytes / SerializeAsString",
         rate("onnxzip_serialize_owned" + s), pb_string, "goal >= 1.5");
    line("serialize to new memory: vector / SerializeAsString",
         rate("onnxzip_serialize_vector" + s), pb_string, "goal >= 1.5");
    line("serialize into a buffer / SerializeToArray", rate("onnxzip_serialize_span" + s),
         rate("libprotobuf_serialize_array" + s), "goal >= 1.5");
    line("serialize to a file / SerializeToFileDescriptor", rate("onnxzip_serialize_file" + s),
         rate("libprotobuf_serialize_file" + s), "goal >= 1.5");
    line("serialize streamed, no I/O / SerializeToArray", rate("onnxzip_serialize_streamed" + s),
         rate("libprotobuf_serialize_array" + s), "");
  }
}

}  // namespace
}  // namespace onnxzip

int main(int argc, char** argv) {
  using namespace onnxzip;
  const int nodes = int_flag(argc, argv, "nodes", 200000);
  const int weights_mb = int_flag(argc, argv, "weights_mb", 1000);
  const int python_runs = int_flag(argc, argv, "python_runs", 3);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  g_scratch = fs::temp_directory_path() / ("onnx_codec_bench_" + std::to_string(::getpid()));
  fs::create_directories(g_scratch);
  int status = 0;
  try {
    add_model("a", std::to_string(nodes) + " nodes, structure-heavy", structure_heavy_model,
              static_cast<std::size_t>(nodes), python_runs);
    add_model("b", std::to_string(weights_mb / 10) + " initializers of 10 MB, inline",
              weight_heavy_model, static_cast<std::size_t>(weights_mb), python_runs);
    register_benchmarks();
    RatioReporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
    print_ratios(reporter.rates);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "onnx_codec_bench: %s\n", e.what());
    status = 1;
  }
  g_models.clear();
  std::error_code ignored;
  fs::remove_all(g_scratch, ignored);
  benchmark::Shutdown();
  return status;
}
