// Every way onnxzip writes a 1 GiB model (1,000 FLOAT tensors), each next to the real `cp` of
// 1 GiB in the same run (goal, issues 11 and 21: each within 1.25x cp, with at most 64 MiB of
// anonymous memory whatever the model's size):
//   * legacy external data (model.onnx + one data file) -> .onnxz: read_legacy_model + save;
//   * legacy inline .onnx (one 1 GiB protobuf) -> .onnxz: read_legacy_model + save;
//   * .onnxz -> legacy external data: load + write_legacy_model (kExternal);
//   * the same by convert() with the CRC-32 check the CLI asks for (LoadOptions::verify_crc),
//     which runs beside the write;
//   * .onnxz -> legacy inline .onnx: load + write_legacy_model (kInline; 1 GiB fits protobuf);
//   * save() of the model held in memory (owned payloads);
//   * repack() of the .onnxz (every entry kept, every CRC-32 checked).
// Payloads that come from a file are copied by the kernel (splice, or shared blocks where the
// file system can) and their CRC-32 computed on the second core beside the copy; the summary
// says how `cp` itself copied here (strace when installed, else whether copy_file_range works in
// the scratch folder), since a cp that copies through user memory is slower and would flatter
// every ratio. bench/convert_cli_bench.py measures the same conversions through the CLI.
//
// Sources are written once, untimed, in a scratch folder under ONNXZIP_BENCH_DIR, else TMPDIR,
// else /tmp (about 7 GiB free needed), removed at exit; reads find them in the page cache.
// Outputs are removed and dirty pages flushed (syncfs) between iterations, untimed. After the
// timed runs each piece of work runs once more, untimed, while a thread samples RssAnon: the
// summary shows its peak growth.
//   cmake -G Ninja -S . -B build-rel -DCMAKE_BUILD_TYPE=Release -DONNXZIP_BUILD_BENCH=ON
//   ninja -C build-rel convert_bench && build-rel/bench/convert_bench
// Each benchmark runs 3 times (3 iterations each), the repetitions of all of them shuffled, and
// medians are shown (bench_support.h); on a busy machine ask for more, e.g.
// --benchmark_repetitions=9, or one quick pass with --benchmark_repetitions=1. On a machine
// shared with other work, running it under `chrt -f 1` (root) keeps that work out of the figures.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "bench_support.h"
#include "onnxzip/archive.h"
#include "onnxzip/convert.h"
#include "onnxzip/legacy.h"

namespace onnxzip::bench {
namespace {

constexpr int kIterations = 3;

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
  // The 1 GiB model with every payload in owned memory, for save().
  const ModelProto& owned_model() const { return owned_; }

 private:
  Fixture()
      : folder_("convert_bench"),
        archive_(folder_ / "model.onnxz"),
        external_(folder_ / "external" / "model.onnx"),
        inline_(folder_ / "inline" / "model.onnx"),
        plain_(folder_ / "plain_1g.bin") {
    fs::create_directories(external_.parent_path());
    fs::create_directories(inline_.parent_path());
    owned_ = make_chain_model(1000, kGiB, "onnxzip convert_bench");
    save(owned_, archive_);
    write_legacy_model(owned_, external_, legacy_options(LegacyWriteOptions::Mode::kExternal));
    write_legacy_model(owned_, inline_, legacy_options(LegacyWriteOptions::Mode::kInline));
    const int fd = ::open(plain_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) fail("create " + plain_.string());
    for (const TensorProto& t : owned_.graph->initializer)
      write_all(fd, t.raw_data->view(), plain_);
    ::close(fd);
    folder_.settle();
  }

  ScratchFolder folder_;
  fs::path archive_;
  fs::path external_;
  fs::path inline_;
  fs::path plain_;
  ModelProto owned_;
};

// One piece of work: what it writes (a file, or a folder for legacy outputs) and how.
struct Work {
  const char* label;
  const char* benchmark;
  const char* output;  // Name in the scratch folder.
  void (*run)(const Fixture& f, const fs::path& out);
};

const Work kWorks[] = {
    {"legacy external data -> .onnxz", "BM_LegacyExternalToOnnxz", "from_external.onnxz",
     [](const Fixture& f, const fs::path& out) { save(read_legacy_model(f.external()), out); }},
    {"legacy inline .onnx -> .onnxz", "BM_LegacyInlineToOnnxz", "from_inline.onnxz",
     [](const Fixture& f, const fs::path& out) { save(read_legacy_model(f.inline_model()), out); }},
    {".onnxz -> legacy external data", "BM_OnnxzToLegacyExternal", "to_external",
     [](const Fixture& f, const fs::path& out) {
       fs::create_directories(out);
       write_legacy_model(load(f.archive()), out / "model.onnx",
                          legacy_options(LegacyWriteOptions::Mode::kExternal));
     }},
    {".onnxz -> legacy external, CRCs checked", "BM_ConvertOnnxzToLegacyChecked",
     "to_external_checked",
     [](const Fixture& f, const fs::path& out) {
       fs::create_directories(out);
       ConvertOptions options;
       options.load.verify_crc = true;
       options.legacy.mode = LegacyWriteOptions::Mode::kExternal;
       convert(f.archive(), out / "model.onnx", options);
     }},
    {".onnxz -> legacy inline .onnx", "BM_OnnxzToLegacyInline", "to_inline",
     [](const Fixture& f, const fs::path& out) {
       fs::create_directories(out);
       write_legacy_model(load(f.archive()), out / "model.onnx",
                          legacy_options(LegacyWriteOptions::Mode::kInline));
     }},
    {"save() of the model held in memory", "BM_SaveInMemory", "saved.onnxz",
     [](const Fixture& f, const fs::path& out) { save(f.owned_model(), out); }},
    {"repack .onnxz -> .onnxz", "BM_Repack", "repacked.onnxz",
     [](const Fixture& f, const fs::path& out) { repack(f.archive(), out); }},
};

// The bytes a piece of work wrote: the archive's size, or the legacy output's files.
std::uint64_t tree_size(const fs::path& path) {
  if (!fs::is_directory(path)) return fs::file_size(path);
  std::uint64_t total = 0;
  for (const auto& item : fs::directory_iterator(path)) total += fs::file_size(item.path());
  return total;
}

// Per piece of work (by benchmark name), each timed run divided by the time of a `cp` of 1 GiB
// run just before it: on a shared machine a yardstick measured seconds apart, not minutes, sees
// the same neighbours.
std::map<std::string, std::vector<double>>& paired_ratios() {
  static std::map<std::string, std::vector<double>> ratios;
  return ratios;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void BM_Work(benchmark::State& state, const Work& work) {
  const Fixture& f = Fixture::get();
  const fs::path out = f.folder() / work.output;
  const fs::path copy = f.folder() / "paired_cp.bin";
  std::uint64_t written = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto start = std::chrono::steady_clock::now();
    if (!run_cp(f.plain(), copy)) {
      state.SkipWithError("cp failed");
      return;
    }
    const double cp_seconds = seconds_since(start);
    fs::remove(copy);
    f.folder().settle();
    state.ResumeTiming();
    start = std::chrono::steady_clock::now();
    work.run(f, out);
    const double seconds = seconds_since(start);
    state.PauseTiming();
    paired_ratios()[work.benchmark].push_back(seconds / cp_seconds);
    written = tree_size(out);
    state.ResumeTiming();
    remove_untimed(state, f.folder(), {out});
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(written));
}

void BM_CpCommand1GiB(benchmark::State& state) {
  const Fixture& f = Fixture::get();
  time_cp(state, f.plain(), f.folder(), kGiB);
}

BENCHMARK(BM_CpCommand1GiB)->Iterations(kIterations)->UseRealTime()->Unit(benchmark::kMillisecond);

// Registered in main(), one benchmark per piece of work.
void register_works() {
  for (const Work& work : kWorks) {
    benchmark::RegisterBenchmark(work.benchmark, BM_Work, work)
        ->Iterations(kIterations)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
}

void summary(const FigureReporter& r) {
  const Fixture& f = Fixture::get();
  std::printf("\ncp: %s\n", cp_copy_method(f.plain(), f.folder().path()).c_str());
  std::printf("load average now: %s\n", load_average().c_str());
  std::printf(
      "\nSummary (real time / cp of 1 GiB in the same run; goal: at most 1.25): the median run\n"
      "over the median cp; then each run over the cp run just before it, median [min..max]\n");
  for (const Work& work : kWorks) {
    const auto seconds = r.seconds(work.benchmark);
    const auto cp_seconds = r.seconds("BM_CpCommand1GiB");
    std::vector<double> paired = paired_ratios()[work.benchmark];
    if (!seconds || !cp_seconds || paired.empty()) continue;
    std::sort(paired.begin(), paired.end());
    std::printf("  %-44s %6.3f (%6.4f s vs %6.4f s)   paired %5.3f [%5.3f..%5.3f] of %zu\n",
                work.label, *seconds / *cp_seconds, *seconds, *cp_seconds,
                paired[paired.size() / 2], paired.front(), paired.back(), paired.size());
  }
  std::printf(
      "\nAnonymous memory (peak RssAnon growth over one untimed run; goal: at most 64 MiB)\n");
  for (const Work& work : kWorks) {
    const fs::path out = f.folder() / work.output;
    const std::uint64_t growth = peak_anon_growth([&] { work.run(f, out); });
    fs::remove_all(out);
    std::printf("  %-44s %9.1f MiB\n", work.label, static_cast<double>(growth) / kMiB);
  }
}

}  // namespace
}  // namespace onnxzip::bench

int main(int argc, char** argv) {
  onnxzip::bench::register_works();
  return onnxzip::bench::run_main(argc, argv, "convert_bench", onnxzip::bench::summary);
}
