// Conversion between legacy ONNX files and .onnxz for a 1 GiB model (1,000 FLOAT tensors), each
// direction next to the real `cp` of 1 GiB in the same run (goal: each within 1.25x cp):
//   * legacy external data (model.onnx + one data file) -> .onnxz: read_legacy_model + save;
//   * legacy inline .onnx (one 1 GiB protobuf) -> .onnxz: read_legacy_model + save;
//   * .onnxz -> legacy external data: load + write_legacy_model (kExternal);
//   * .onnxz -> legacy inline .onnx: load + write_legacy_model (kInline; 1 GiB fits protobuf).
// The conversions stream: every payload goes from the source's mapping to the output once.
//
// coreutils' cp copies with copy_file_range, inside the kernel (page cache to page cache on
// ext4, no user-space copy at all), so it is a demanding reference: a user-space converter pays
// at least one extra copy (mapping -> write()) plus the CRC-32 it must compute (.onnxz) .
//
// Sources are written once, untimed, in a scratch folder under ONNXZIP_BENCH_DIR, else TMPDIR,
// else /tmp (about 6 GiB free needed), removed at exit; reads find them in the page cache.
// Outputs are removed and dirty pages flushed (syncfs) between iterations, untimed.
//   cmake -G Ninja -S . -B build-rel -DCMAKE_BUILD_TYPE=Release && ninja -C build-rel convert_bench
//   build-rel/bench/convert_bench
// Each benchmark runs 3 times, the repetitions of all of them shuffled, and medians are shown
// (bench_support.h); --benchmark_repetitions=1 gives one quick pass.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "bench_support.h"
#include "onnxzip/archive.h"
#include "onnxzip/legacy.h"

namespace onnxzip::bench {
namespace {

constexpr std::size_t kTensorCount = 1000;
constexpr int kIterations = 3;

std::uint64_t tensor_floats(std::size_t i) {
  constexpr std::uint64_t kFloatsPerGiB = kGiB / 4;
  return kFloatsPerGiB / kTensorCount + (i < kFloatsPerGiB % kTensorCount ? 1 : 0);
}

// The 1 GiB model with owned payloads: a chain of Mul nodes, one per weight.
ModelProto make_model() {
  ModelProto model;
  model.ir_version = 8;
  model.producer_name = "onnxzip convert_bench";
  OperatorSetIdProto& opset = model.opset_import.emplace_back();
  opset.domain = "";
  opset.version = 17;
  GraphProto& graph = model.graph.ensure();
  graph.name = "chain";
  for (std::size_t i = 0; i < kTensorCount; ++i) {
    TensorProto& t = graph.initializer.emplace_back();
    t.name = "model.layers." + std::to_string(i / 4) + ".mlp.w" + std::to_string(i % 4);
    t.data_type = TensorProto::kFloat;
    t.dims = {static_cast<std::int64_t>(tensor_floats(i))};
    OwnedBytes bytes(static_cast<std::size_t>(tensor_floats(i) * 4));
    fill_random_ish(i, 0, bytes.mutable_span());
    t.raw_data = TensorBytes::owned(std::move(bytes));
    NodeProto& node = graph.node.emplace_back();
    node.op_type = "Mul";
    node.input = {"x" + std::to_string(i), *t.name};
    node.output = {"x" + std::to_string(i + 1)};
  }
  return model;
}

class Fixture final {
 public:
  static Fixture& get() {
    static Fixture fixture;
    return fixture;
  }

  const ScratchFolder& folder() const { return folder_; }
  const fs::path& archive() const { return archive_; }
  const fs::path& external() const { return external_; }
  const fs::path& inline_model() const { return inline_; }
  const fs::path& plain() const { return plain_; }

 private:
  Fixture()
      : folder_("convert_bench"),
        archive_(folder_ / "model.onnxz"),
        external_(folder_ / "external" / "model.onnx"),
        inline_(folder_ / "inline" / "model.onnx"),
        plain_(folder_ / "plain_1g.bin") {
    fs::create_directories(external_.parent_path());
    fs::create_directories(inline_.parent_path());
    {
      const ModelProto model = make_model();
      save(model, archive_);
      write_legacy_model(model, external_, legacy_options(LegacyWriteOptions::Mode::kExternal));
      write_legacy_model(model, inline_, legacy_options(LegacyWriteOptions::Mode::kInline));
      const int fd = ::open(plain_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd < 0) fail("create " + plain_.string());
      for (const TensorProto& t : model.graph->initializer)
        write_all(fd, t.raw_data->view(), plain_);
      ::close(fd);
    }
    folder_.settle();
  }

  ScratchFolder folder_;
  fs::path archive_;
  fs::path external_;
  fs::path inline_;
  fs::path plain_;
};

// The bytes each conversion writes: the archive's size, or the legacy output's files.
std::uint64_t tree_size(const fs::path& path) {
  if (!fs::is_directory(path)) return fs::file_size(path);
  std::uint64_t total = 0;
  for (const auto& item : fs::directory_iterator(path)) total += fs::file_size(item.path());
  return total;
}

void BM_LegacyExternalToOnnxz(benchmark::State& state) {
  const Fixture& f = Fixture::get();
  const fs::path out = f.folder() / "from_external.onnxz";
  std::uint64_t written = 0;
  for (auto _ : state) {
    save(read_legacy_model(f.external()), out);
    state.PauseTiming();
    written = tree_size(out);
    state.ResumeTiming();
    remove_untimed(state, f.folder(), {out});
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(written));
}

void BM_LegacyInlineToOnnxz(benchmark::State& state) {
  const Fixture& f = Fixture::get();
  const fs::path out = f.folder() / "from_inline.onnxz";
  std::uint64_t written = 0;
  for (auto _ : state) {
    save(read_legacy_model(f.inline_model()), out);
    state.PauseTiming();
    written = tree_size(out);
    state.ResumeTiming();
    remove_untimed(state, f.folder(), {out});
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(written));
}

void BM_OnnxzToLegacy(benchmark::State& state) {
  const Fixture& f = Fixture::get();
  const bool external = state.range(0) != 0;
  const fs::path out_dir = f.folder() / (external ? "to_external" : "to_inline");
  std::uint64_t written = 0;
  for (auto _ : state) {
    fs::create_directories(out_dir);
    write_legacy_model(load(f.archive()), out_dir / "model.onnx",
                       legacy_options(external ? LegacyWriteOptions::Mode::kExternal
                                               : LegacyWriteOptions::Mode::kInline));
    state.PauseTiming();
    written = tree_size(out_dir);
    state.ResumeTiming();
    remove_untimed(state, f.folder(), {out_dir});
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(written));
}

void BM_CpCommand1GiB(benchmark::State& state) {
  const Fixture& f = Fixture::get();
  time_cp(state, f.plain(), f.folder(), kGiB);
}

BENCHMARK(BM_CpCommand1GiB)->Iterations(kIterations)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LegacyExternalToOnnxz)
    ->Iterations(kIterations)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LegacyInlineToOnnxz)
    ->Iterations(kIterations)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_OnnxzToLegacy)
    ->ArgName("external")
    ->Arg(1)
    ->Arg(0)
    ->Iterations(kIterations)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

void summary(const FigureReporter& r) {
  std::printf("\nSummary (real time / cp of 1 GiB in the same run; goal: at most 1.25)\n");
  r.ratio("legacy external data -> .onnxz", "BM_LegacyExternalToOnnxz", "BM_CpCommand1GiB",
          "<= 1.25");
  r.ratio("legacy inline .onnx -> .onnxz", "BM_LegacyInlineToOnnxz", "BM_CpCommand1GiB", "<= 1.25");
  r.ratio(".onnxz -> legacy external data", "BM_OnnxzToLegacy/external:1", "BM_CpCommand1GiB",
          "<= 1.25");
  r.ratio(".onnxz -> legacy inline .onnx", "BM_OnnxzToLegacy/external:0", "BM_CpCommand1GiB",
          "<= 1.25");
}

}  // namespace
}  // namespace onnxzip::bench

int main(int argc, char** argv) {
  return onnxzip::bench::run_main(argc, argv, "convert_bench", onnxzip::bench::summary);
}
