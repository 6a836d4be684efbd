// What the archive and conversion benchmarks share: a scratch folder removed at exit, payload
// bytes no layer could shortcut, the real `cp` as the reference for writers, flushing dirty
// pages between timed writes, /proc/self/status readings, and a console reporter that prints the
// ratios each benchmark is judged by after the usual table.
//
// Header-only and for bench/*_bench.cpp alone.
#ifndef ONNXZIP_BENCH_BENCH_SUPPORT_H_
#define ONNXZIP_BENCH_BENCH_SUPPORT_H_

#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "onnxzip/bytes.h"
#include "onnxzip/legacy.h"
#include "onnxzip/onnx_model.h"

extern char** environ;

namespace onnxzip::bench {

namespace fs = std::filesystem;

inline constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
inline constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;

[[noreturn]] inline void fail(const std::string& what) {
  throw std::runtime_error(what + ": " + std::strerror(errno));
}

// ONNXZIP_BENCH_DIR, else TMPDIR, else /tmp.
inline fs::path scratch_root() {
  for (const char* variable : {"ONNXZIP_BENCH_DIR", "TMPDIR"}) {
    const char* value = std::getenv(variable);
    if (value != nullptr && *value != '\0') return value;
  }
  return "/tmp";
}

// A fresh folder under scratch_root(), removed with its content when the object goes.
class ScratchFolder final {
 public:
  explicit ScratchFolder(const std::string& tag)
      : path_(scratch_root() / ("onnxzip_" + tag + "." + std::to_string(::getpid()))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~ScratchFolder() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;

  const fs::path& path() const noexcept { return path_; }
  fs::path operator/(const std::string& name) const { return path_ / name; }

  // Writes back the dirty pages of the folder's file system, so that each timed write starts
  // with an empty writeback backlog instead of paying for its predecessor's.
  void settle() const {
    const int fd = ::open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) fail("open " + path_.string());
    ::syncfs(fd);
    ::close(fd);
  }

 private:
  fs::path path_;
};

// xorshift64*, keyed by `seed` and the 8-byte word index: incompressible, and any piece of a
// payload can be produced on its own (for producers that stream gigabytes).
inline void fill_random_ish(std::uint64_t seed, std::uint64_t at, MutableByteSpan out) {
  for (std::size_t i = 0; i < out.size(); i += 8) {
    std::uint64_t x = ((at + i) / 8 + 1) * 0x9E3779B97F4A7C15u ^ (seed * 0xD1B54A32D192ED03u);
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    const std::uint64_t word = x * 0x2545F4914F6CDD1Du;
    std::memcpy(out.data() + i, &word, std::min<std::size_t>(8, out.size() - i));
  }
}

// A model of `tensor_count` FLOAT weights of `total_bytes` together (as even as whole floats
// allow), every payload owned and filled by fill_random_ish: a chain of Mul nodes, one per weight.
inline ModelProto make_chain_model(std::size_t tensor_count, std::uint64_t total_bytes,
                                   const char* producer) {
  const std::uint64_t floats = total_bytes / 4;
  ModelProto model;
  model.ir_version = 8;
  model.producer_name = producer;
  OperatorSetIdProto& opset = model.opset_import.emplace_back();
  opset.domain = "";
  opset.version = 17;
  GraphProto& graph = model.graph.ensure();
  graph.name = "chain";
  for (std::size_t i = 0; i < tensor_count; ++i) {
    const std::uint64_t count = floats / tensor_count + (i < floats % tensor_count ? 1 : 0);
    TensorProto& t = graph.initializer.emplace_back();
    t.name = "model.layers." + std::to_string(i / 4) + ".mlp.w" + std::to_string(i % 4);
    t.data_type = TensorProto::kFloat;
    t.dims = {static_cast<std::int64_t>(count)};
    OwnedBytes bytes(static_cast<std::size_t>(count * 4));
    fill_random_ish(i, 0, bytes.mutable_span());
    t.raw_data = TensorBytes::owned(std::move(bytes));
    NodeProto& node = graph.node.emplace_back();
    node.op_type = "Mul";
    node.input = {"x" + std::to_string(i), *t.name};
    node.output = {"x" + std::to_string(i + 1)};
  }
  return model;
}

inline void write_all(int fd, ByteSpan bytes, const fs::path& path) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("write " + path.string());
    bytes = bytes.subspan(static_cast<std::size_t>(n));
  }
}

// Runs a program (looked up in PATH) and waits for it; true when it exited with status 0.
inline bool run_program(const std::vector<std::string>& args, const char* stdout_path = nullptr) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (stdout_path != nullptr) {
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, stdout_path,
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
  }
  pid_t pid = 0;
  const int spawn_error = ::posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawn_error != 0) return false;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// `cp FROM TO`, or with ONNXZIP_BENCH_CP_NO_REFLINK=1 `cp --reflink=never FROM TO`: on XFS or
// btrfs a plain cp shares the source's extents and copies no byte, which no conversion that
// moves payloads to new offsets can match; --reflink=never makes the yardstick a copy of bytes.
inline std::vector<std::string> cp_command(const fs::path& from, const fs::path& to) {
  const char* no_reflink = std::getenv("ONNXZIP_BENCH_CP_NO_REFLINK");
  if (no_reflink != nullptr && std::string(no_reflink) == "1")
    return {"cp", "--reflink=never", from.string(), to.string()};
  return {"cp", from.string(), to.string()};
}

// The real cp binary, as a user would copy the bytes (process start included). coreutils 9
// copies with copy_file_range, inside the kernel: its bytes never pass through user memory, and
// on file systems that share extents (btrfs, XFS with reflink) it copies no byte at all. On ext4
// it is an in-kernel page-cache-to-page-cache copy.
inline bool run_cp(const fs::path& from, const fs::path& to) {
  return run_program(cp_command(from, to));
}

// A field of /proc/self/status in bytes ("RssAnon", "VmHWM"...), 0 when absent.
inline std::uint64_t proc_status_bytes(const char* field) {
  std::ifstream status("/proc/self/status");
  const std::string prefix = std::string(field) + ":";
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(prefix, 0) == 0)
      return std::strtoull(line.c_str() + prefix.size(), nullptr, 10) * 1024;
  }
  return 0;
}

// The growth of RssAnon (private memory: heap, stacks; not the page cache nor file mappings)
// over its level before `work`, at its peak while `work` runs, sampled every millisecond by a
// thread: what a conversion needs beyond what the caller already holds.
inline std::uint64_t peak_anon_growth(const std::function<void()>& work) {
  const std::uint64_t before = proc_status_bytes("RssAnon");
  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> peak{before};
  std::thread sampler([&] {
    while (!done.load()) {
      peak.store(std::max(peak.load(), proc_status_bytes("RssAnon")));
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  try {
    work();
  } catch (...) {
    done.store(true);
    sampler.join();
    throw;
  }
  done.store(true);
  sampler.join();
  peak.store(std::max(peak.load(), proc_status_bytes("RssAnon")));
  return peak.load() - std::min(before, peak.load());
}

// /proc/loadavg's first three fields: how busy the machine was (on a shared machine the
// figures vary with it).
inline std::string load_average() {
  std::ifstream file("/proc/loadavg");
  std::string one, five, fifteen;
  file >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen + " (1, 5, 15 min; " +
         std::to_string(std::thread::hardware_concurrency()) + " cores)";
}

// How `cp` copies `plain` into `folder`, the reference of every writer: "copy_file_range" (in
// the kernel, page cache to page cache), "FICLONE" (extents shared, no byte copied) or
// "read/write" (through user memory, which is slower and flatters every ratio). Told by strace
// when it is installed; otherwise by trying copy_file_range between two files of the folder
// (coreutils 9 uses it wherever it works).
inline std::string cp_copy_method(const fs::path& plain, const fs::path& folder) {
  const fs::path trace = folder / "cp_strace.txt";
  const fs::path copy = folder / "cp_strace_copy.bin";
  std::vector<std::string> traced_cp = {
      "strace", "-f", "-o", trace.string(), "-e", "trace=copy_file_range,ioctl,read,write"};
  for (std::string& word : cp_command(plain, copy)) traced_cp.push_back(std::move(word));
  const bool traced = run_program(traced_cp);
  std::error_code ignored;
  fs::remove(copy, ignored);
  if (traced) {
    std::ifstream lines(trace);
    std::uint64_t ranges = 0;
    std::uint64_t clones = 0;
    std::uint64_t writes = 0;
    std::string line;
    while (std::getline(lines, line)) {
      const std::size_t equals = line.rfind("= ");
      const bool succeeded = equals != std::string::npos && line.compare(equals, 4, "= -1") != 0;
      if (!succeeded) continue;
      const long long result = std::atoll(line.c_str() + equals + 2);
      if (line.find("copy_file_range(") != std::string::npos && result > 0) ++ranges;
      if (line.find("FICLONE") != std::string::npos) ++clones;
      if (line.find("write(") != std::string::npos && result >= 4096) ++writes;
    }
    fs::remove(trace, ignored);
    if (clones > 0) return "FICLONE (extents shared, no byte copied), by strace";
    if (ranges > 0 && writes == 0) {
      return "copy_file_range (" + std::to_string(ranges) + " calls), by strace";
    }
    return "read/write (" + std::to_string(writes) + " writes of 4 KiB or more, " +
           std::to_string(ranges) + " copy_file_range calls), by strace";
  }
  fs::remove(trace, ignored);
  // Without strace: does copy_file_range work between two files here?
  const fs::path a = folder / "cfr_probe_a.bin";
  const fs::path b = folder / "cfr_probe_b.bin";
  std::string verdict = "read/write (copy_file_range fails here), guessed without strace";
  const int in = ::open(a.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const int out = ::open(b.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (in >= 0 && out >= 0) {
    const std::vector<std::uint8_t> bytes(1 << 16, 0x5A);
    write_all(in, ByteSpan(bytes.data(), bytes.size()), a);
    loff_t from = 0;
    if (::copy_file_range(in, &from, out, nullptr, bytes.size(), 0) > 0) {
      verdict = "copy_file_range works here (coreutils 9 cp uses it), guessed without strace";
    }
  }
  if (in >= 0) ::close(in);
  if (out >= 0) ::close(out);
  fs::remove(a, ignored);
  fs::remove(b, ignored);
  return verdict;
}

inline LegacyWriteOptions legacy_options(LegacyWriteOptions::Mode mode) {
  LegacyWriteOptions options;
  options.mode = mode;
  return options;
}

// Removes a destination between iterations, outside the timing, and flushes what was written.
inline void remove_untimed(benchmark::State& state, const ScratchFolder& folder,
                           const std::vector<fs::path>& paths) {
  state.PauseTiming();
  for (const fs::path& p : paths) fs::remove_all(p);
  folder.settle();
  state.ResumeTiming();
}

// The yardstick for writing `bytes` bytes: `cp` of the file `plain` into `folder`, the copy
// removed between iterations.
inline void time_cp(benchmark::State& state, const fs::path& plain, const ScratchFolder& folder,
                    std::uint64_t bytes) {
  const fs::path out = folder / "cp_copy.bin";
  for (auto _ : state) {
    if (!run_cp(plain, out)) {
      state.SkipWithError("cp failed");
      return;
    }
    remove_untimed(state, folder, {out});
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(bytes));
}

// The console table, then lines the caller adds from the collected figures: real seconds per
// iteration (median when --benchmark_repetitions is given) by benchmark name prefix.
class FigureReporter final : public benchmark::ConsoleReporter {
 public:
  explicit FigureReporter(OutputOptions options) : ConsoleReporter(options) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.error_occurred) continue;
      const bool median = run.run_type == Run::RT_Aggregate && run.aggregate_name == "median";
      if (run.run_type == Run::RT_Aggregate && !median) continue;
      const std::string name = run.run_name.str();
      if (!median && medians_.count(name) != 0) continue;
      if (median) medians_.insert(name);
      seconds_[name] = run.GetAdjustedRealTime() / benchmark::GetTimeUnitMultiplier(run.time_unit);
      for (const auto& [counter, value] : run.counters) counters_[name][counter] = value.value;
    }
    ConsoleReporter::ReportRuns(runs);
  }

  // Seconds per iteration of the first benchmark whose name is `prefix` or starts with
  // `prefix/`.
  std::optional<double> seconds(const std::string& prefix) const {
    for (const auto& [name, value] : seconds_) {
      if (name == prefix || name.rfind(prefix + "/", 0) == 0) return value;
    }
    return std::nullopt;
  }
  std::optional<double> counter(const std::string& prefix, const std::string& counter) const {
    for (const auto& [name, values] : counters_) {
      if (name != prefix && name.rfind(prefix + "/", 0) != 0) continue;
      const auto it = values.find(counter);
      if (it != values.end()) return it->second;
    }
    return std::nullopt;
  }

  // "  label   ratio  (a s vs b s)  goal" for measured / reference.
  void ratio(const char* label, const std::string& measured, const std::string& reference,
             const char* goal) const {
    const auto m = seconds(measured);
    const auto r = seconds(reference);
    if (!m || !r) return;
    std::printf("  %-44s %7.3f   (%9.4f s vs %9.4f s)   %s\n", label, *m / *r, *m, *r, goal);
  }

 private:
  std::map<std::string, double> seconds_;
  std::map<std::string, std::map<std::string, double>> counters_;
  std::set<std::string> medians_;
};

// Runs the benchmarks with a FigureReporter, then `summary(reporter)`. Unless the command line
// says otherwise, every benchmark runs `repetitions` times, the repetitions of all benchmarks
// shuffled together, and the table and summary show medians: on a shared machine a reference
// measured minutes before or after what it is compared with would say more about the neighbours.
inline int run_main(int argc, char** argv, const char* program,
                    const std::function<void(const FigureReporter&)>& summary,
                    int repetitions = 3) {
  std::vector<std::string> arguments(argv, argv + argc);
  const auto given = [&](const std::string& flag) {
    for (const std::string& a : arguments) {
      if (a.rfind(flag, 0) == 0) return true;
    }
    return false;
  };
  if (!given("--benchmark_repetitions")) {
    arguments.insert(arguments.begin() + 1,
                     {"--benchmark_repetitions=" + std::to_string(repetitions),
                      "--benchmark_enable_random_interleaving=true",
                      "--benchmark_display_aggregates_only=true"});
  }
  std::vector<char*> args;
  for (std::string& a : arguments) args.push_back(a.data());
  args.push_back(nullptr);
  argc = static_cast<int>(arguments.size());
  argv = args.data();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  try {
    FigureReporter reporter(::isatty(STDOUT_FILENO) ? benchmark::ConsoleReporter::OO_Defaults
                                                    : benchmark::ConsoleReporter::OO_Tabular);
    benchmark::RunSpecifiedBenchmarks(&reporter);
    summary(reporter);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    return 1;
  }
  benchmark::Shutdown();
  return 0;
}

}  // namespace onnxzip::bench

#endif  // ONNXZIP_BENCH_BENCH_SUPPORT_H_
