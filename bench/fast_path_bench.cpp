// What each fast path gains over its plain twin, on the work it was made for, at realistic sizes
// (issue 31: a fast path whose gain is under about 10 % goes). Every fast path sits behind one
// switch (src/base/fast_path.h, or a seam of its own) and every trial times the same work with
// the switch on and off, the repetitions of all trials shuffled together:
//   * huge page advice: opening a 1 GiB archive read whole into memory (FileAccess::kRead), and
//     serializing the 1 GiB model with its payloads inline into a new buffer;
//   * splice: legacy external data -> .onnxz, and repack (payloads copied from a mapped file);
//   * CRC-32 worker: save() of the model held in memory, and legacy external data -> .onnxz;
//   * local-header read-ahead: opening a 20,000-entry archive by ranges (FileAccess::kRanges);
//   * digests ahead: editing the properties of a signed 20,000-entry archive with the key;
//   * shared blocks: legacy external data (payloads at multiples of 4096) -> .onnxz at
//     alignment 4096;
//   * allocate ahead: save() of 16 tensors of 64 MiB and of the 1,000-tensor model held in
//     memory, and legacy external data -> .onnxz;
//   * verify's threads (VerifyOptions::threads, a public choice): verify of the signed 1 GiB
//     archive, every CRC-32 and SHA-256, with one thread and with one per core.
// Two fast paths went by this bench (2026-11-27, 21 runs each under chrt -f 1; gains off/on - 1
// in wall time, CPU time): non-temporal stores for copies of 1 MiB and more into serialized
// models (+4.7 %, +4.9 % serializing the 1 GiB model), and faulting a large in-memory piece in
// before pwrite (+3.2 %, +5.6 % saving a model loaded kMapPrivate; +2.1 %, +0.2 % saving one held
// in memory).
// Shared blocks (FICLONERANGE) take effect only on XFS with reflink or btrfs, and their trial
// times the writeback of the output too (syncfs), which is what they save: from the page cache
// they gain little (+5 % here), from a cold cache much more (onnxzip convert --alignment 4096 of
// 1 GiB on an XFS image, caches dropped, sync timed: 0.43 s shared against 0.97 s copied for
// 64 MiB tensors, 0.51 s against 0.96 s for 1 MiB ones), so they stay; elsewhere both runs
// copy (ONNXZIP_BENCH_DIR on an XFS image: truncate -s 8G xfs.img && mkfs.xfs -m reflink=1
// xfs.img && mount -o loop xfs.img /mnt/xfs).
//
// The summary gives each trial's median wall and CPU time with the path off and on, the spread
// (min..max) of each, and the gains: off / on - 1. Sources are made once, untimed, in a scratch
// folder (ONNXZIP_BENCH_DIR, else TMPDIR, else /tmp; about 4 GiB), and read from the page cache;
// outputs are removed and their dirty pages flushed between runs, untimed.
//   cmake -S . -B build -DONNXZIP_BUILD_BENCH=ON && cmake --build build --target fast_path_bench
//   build/bench/fast_path_bench                       # 7 repetitions
//   build/bench/fast_path_bench --benchmark_filter=splice --benchmark_repetitions=15
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "bench_support.h"
#include "crc_worker_testing.h"
#include "fast_path.h"
#include "onnxzip/archive.h"
#include "onnxzip/convert.h"
#include "onnxzip/edit.h"
#include "onnxzip/legacy.h"
#include "onnxzip/onnx_codec.h"
#include "onnxzip/signing.h"
#include "output_file_testing.h"
#include "zip_local_headers.h"

namespace onnxzip::bench {
namespace {

constexpr std::size_t kManyEntries = 20000;

class Fixture final {
 public:
  static Fixture& get() {
    static Fixture fixture;
    return fixture;
  }

  const ScratchFolder& folder() const { return folder_; }
  const fs::path& archive() const { return archive_; }
  const fs::path& external() const { return external_; }
  const fs::path& many() const { return many_; }
  const ModelProto& owned_model() const { return owned_; }
  // The same 1 GiB in 16 tensors of 64 MiB, as exporters of large models write them.
  const ModelProto& owned_large_tensors() const { return large_; }
  const PrivateKey& key() const { return *key_; }

 private:
  Fixture()
      : folder_("fast_path_bench"),
        archive_(folder_ / "model.onnxz"),
        external_(folder_ / "external" / "model.onnx"),
        many_(folder_ / "many.onnxz") {
    fs::create_directories(external_.parent_path());
    owned_ = make_chain_model(1000, kGiB, "onnxzip fast_path_bench");
    large_ = make_chain_model(16, kGiB, "onnxzip fast_path_bench, 64 MiB tensors");
    const fs::path key_file = folder_ / "key.pem";
    if (!run_program({"openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out",
                      key_file.string()})) {
      fail("openssl ecparam (needs the openssl command)");
    }
    key_ = PrivateKey::load(key_file);
    SaveOptions with_digests;
    with_digests.digests = true;
    SignOptions sign_options;
    sign_options.key = *key_;
    save(owned_, archive_, with_digests);
    sign_archive(archive_, sign_options);
    write_legacy_model(owned_, external_, legacy_options(LegacyWriteOptions::Mode::kExternal));
    save(make_chain_model(kManyEntries, 320 * kMiB, "onnxzip fast_path_bench, many"), many_,
         with_digests);
    sign_archive(many_, sign_options);
    folder_.settle();
  }

  ScratchFolder folder_;
  fs::path archive_;
  fs::path external_;
  fs::path many_;
  ModelProto owned_;
  ModelProto large_;
  std::optional<PrivateKey> key_;
};

// VerifyOptions::threads for the verify trial: 0 (one per core) when "on".
std::size_t g_verify_threads = 0;

struct Switch {
  const char* name;
  void (*set)(bool on);
};

const Switch kSwitches[] = {
    {"huge page advice",
     [](bool on) { detail::set_fast_path_on(detail::FastPath::kHugePageAdvice, on); }},
    {"splice",
     [](bool on) {
       detail::set_splice_refusal(on ? detail::SpliceRefusal::kNone : detail::SpliceRefusal::kAll);
     }},
    {"CRC-32 worker", [](bool on) { detail::set_crc_job_threads(on ? 1 : 0); }},
    {"local-header read-ahead", [](bool on) { zip::set_local_header_prefetch_for_testing(on); }},
    {"digests ahead",
     [](bool on) { detail::set_fast_path_on(detail::FastPath::kDigestsAhead, on); }},
    {"shared blocks",
     [](bool on) { detail::set_fast_path_on(detail::FastPath::kShareBlocks, on); }},
    {"allocate ahead",
     [](bool on) { detail::set_fast_path_on(detail::FastPath::kAllocateAhead, on); }},
    {"verify threads", [](bool on) { g_verify_threads = on ? 0 : 1; }},
};

// One piece of work a fast path was made for: what it writes (removed after each run) and how.
struct Trial {
  const char* fast_path;  // A Switch's name.
  const char* work;
  const char* output;  // In the scratch folder; "" for none.
  void (*run)(const Fixture& f, const fs::path& out);
};

std::uint64_t serialized_size(const ModelProto& model) {
  return serialize_model_to_owned_bytes(model).size();
}

const Trial kTrials[] = {
    {"huge page advice", "open 1 GiB .onnxz read whole (kRead)", "",
     [](const Fixture& f, const fs::path&) {
       LoadOptions options;
       options.access = FileAccess::kRead;
       benchmark::DoNotOptimize(Archive::open(f.archive(), options));
     }},
    {"huge page advice", "serialize the 1 GiB model to new bytes", "",
     [](const Fixture& f, const fs::path&) {
       benchmark::DoNotOptimize(serialized_size(f.owned_model()));
     }},
    {"splice", "legacy external data -> .onnxz", "converted.onnxz",
     [](const Fixture& f, const fs::path& out) { save(read_legacy_model(f.external()), out); }},
    {"splice", "repack 1 GiB .onnxz", "repacked.onnxz",
     [](const Fixture& f, const fs::path& out) { repack(f.archive(), out); }},
    {"shared blocks", "legacy external data -> .onnxz, alignment 4096", "converted.onnxz",
     [](const Fixture& f, const fs::path& out) {
       SaveOptions options;
       options.alignment = 4096;
       save(read_legacy_model(f.external()), out, options);
       f.folder().settle();  // Timed: the writeback is what shared blocks save.
     }},
    {"allocate ahead", "save() of 16 x 64 MiB held in memory", "saved.onnxz",
     [](const Fixture& f, const fs::path& out) { save(f.owned_large_tensors(), out); }},
    {"allocate ahead", "save() of the model held in memory", "saved.onnxz",
     [](const Fixture& f, const fs::path& out) { save(f.owned_model(), out); }},
    {"allocate ahead", "legacy external data -> .onnxz", "converted.onnxz",
     [](const Fixture& f, const fs::path& out) { save(read_legacy_model(f.external()), out); }},
    {"CRC-32 worker", "save() of the model held in memory", "saved.onnxz",
     [](const Fixture& f, const fs::path& out) { save(f.owned_model(), out); }},
    {"CRC-32 worker", "legacy external data -> .onnxz", "converted.onnxz",
     [](const Fixture& f, const fs::path& out) { save(read_legacy_model(f.external()), out); }},
    {"local-header read-ahead", "open a 20,000-entry .onnxz (kRanges)", "",
     [](const Fixture& f, const fs::path&) {
       LoadOptions options;
       options.access = FileAccess::kRanges;
       benchmark::DoNotOptimize(Archive::open(f.many(), options));
     }},
    {"digests ahead", "edit properties of a signed 20,000-entry .onnxz", "",
     [](const Fixture& f, const fs::path&) {
       EditOptions options;
       options.signing_key = f.key();
       options.output.durable = false;
       edit_model_properties(
           f.many(), [](ModelProto& m) { m.doc_string = std::to_string(::getpid()); }, options);
     }},
    {"verify threads", "verify the signed 1 GiB .onnxz", "",
     [](const Fixture& f, const fs::path&) {
       VerifyOptions options;
       options.threads = g_verify_threads;
       if (!verify(f.archive(), options).ok()) throw std::runtime_error("verify found problems");
     }},
};

const Switch& switch_named(const char* name) {
  for (const Switch& s : kSwitches) {
    if (std::string(s.name) == name) return s;
  }
  throw std::logic_error(std::string("no switch ") + name);
}

// Wall and CPU seconds (every thread of the process, user and system) of every timed run, by
// benchmark name: a fast path that takes a second core shows in the first, one that saves work
// in the second.
struct Timings {
  std::vector<double> wall;
  std::vector<double> cpu;
};

std::map<std::string, Timings>& runs() {
  static std::map<std::string, Timings> timings;
  return timings;
}

double cpu_seconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

std::string benchmark_name(const Trial& trial, bool on) {
  std::string name = std::string(trial.fast_path) + "/" + trial.work + (on ? "/on" : "/off");
  std::replace(name.begin(), name.end(), ' ', '_');
  return name;
}

void BM_Trial(benchmark::State& state, const Trial& trial, bool on) {
  const Fixture& f = Fixture::get();
  const fs::path out = *trial.output != '\0' ? f.folder() / trial.output : fs::path();
  const Switch& path = switch_named(trial.fast_path);
  path.set(on);
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = cpu_seconds();
    trial.run(f, out);
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    Timings& timings = runs()[benchmark_name(trial, on)];
    timings.wall.push_back(took.count());
    timings.cpu.push_back(cpu_seconds() - cpu_start);
    if (!out.empty()) remove_untimed(state, f.folder(), {out});
  }
  path.set(true);
}

void register_trials() {
  for (const Trial& trial : kTrials) {
    for (const bool on : {true, false}) {
      benchmark::RegisterBenchmark(benchmark_name(trial, on).c_str(), BM_Trial, trial, on)
          ->Iterations(1)
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
}

struct Spread {
  double median = 0;
  double min = 0;
  double max = 0;
};

std::optional<Spread> spread_of(std::vector<double> seconds) {
  if (seconds.empty()) return std::nullopt;
  std::sort(seconds.begin(), seconds.end());
  const std::size_t n = seconds.size();
  const double median = n % 2 == 1 ? seconds[n / 2] : (seconds[n / 2 - 1] + seconds[n / 2]) / 2;
  return Spread{median, seconds.front(), seconds.back()};
}

void print_line(const char* what, const std::vector<double>& off_runs,
                const std::vector<double>& on_runs) {
  const auto off = spread_of(off_runs);
  const auto on = spread_of(on_runs);
  if (!off || !on) return;
  std::printf(
      "      %-5s off %7.4f [%7.4f..%7.4f]  on %7.4f [%7.4f..%7.4f]  n %2zu  gain %+7.1f %%\n",
      what, off->median, off->min, off->max, on->median, on->min, on->max, on_runs.size(),
      100.0 * (off->median / on->median - 1.0));
}

void summary(const FigureReporter&) {
  std::printf("\nload average now: %s\n", load_average().c_str());
  std::printf(
      "\nGain of each fast path over its plain twin, in wall and in CPU seconds (all threads):\n"
      "median seconds with the path off and on [min..max] of n runs; gain = off / on - 1\n"
      "(goal: about 10 %% or more in one of the two, else the fast path goes)\n");
  for (const Trial& trial : kTrials) {
    const Timings& off = runs()[benchmark_name(trial, false)];
    const Timings& on = runs()[benchmark_name(trial, true)];
    if (off.wall.empty() || on.wall.empty()) continue;  // Filtered out.
    std::printf("  %s: %s\n", trial.fast_path, trial.work);
    print_line("wall", off.wall, on.wall);
    print_line("cpu", off.cpu, on.cpu);
  }
}

}  // namespace
}  // namespace onnxzip::bench

int main(int argc, char** argv) {
  onnxzip::bench::register_trials();
  return onnxzip::bench::run_main(argc, argv, "fast_path_bench", onnxzip::bench::summary, 7);
}
