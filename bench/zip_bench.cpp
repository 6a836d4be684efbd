// How fast the ZIP layer is next to what the machine can do anyway, in one run.
//
// Every onnxzip figure has its reference beside it: crc32 next to memcpy of the same size, the
// writer next to the real `cp` and a plain write() loop of the same bytes, the reader's
// touch/verify passes next to a plain read() of the same archive. The closing summary divides
// them. The workload is one archive of 1,000 entries of 1 MiB each (1000 MiB) of random-ish
// bytes, generated once outside the timing. Writes are not fsync'ed: they measure the way into
// the page cache, as cp does. Reads run with the page cache warm.
//
// Files live in a scratch folder under ONNXZIP_BENCH_DIR, else TMPDIR, else /tmp, which needs
// about 4 GiB free; it is removed at exit. Run a Release build:
//   cmake -G Ninja -S . -B build-rel -DCMAKE_BUILD_TYPE=Release && ninja -C build-rel zip_bench
//   build-rel/bench/zip_bench
// On a shared or noisy machine, medians of interleaved repetitions are steadier (the summary
// then uses the medians):
//   build-rel/bench/zip_bench --benchmark_repetitions=3 --benchmark_enable_random_interleaving=true
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "crc32.h"
#include "onnxzip/bytes.h"
#include "onnxzip/internal/mapped_file.h"
#include "onnxzip/internal/zip_reader.h"
#include "zip_writer.h"

extern char** environ;

namespace onnxzip {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kEntryCount = 1000;
constexpr std::size_t kEntrySize = kMiB;
constexpr std::size_t kTotalSize = kEntryCount * kEntrySize;
constexpr std::size_t kProducerPiece = 64 * 1024;
constexpr int kIoIterations = 5;

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error(what + ": " + std::strerror(errno));
}

fs::path scratch_root() {
  for (const char* variable : {"ONNXZIP_BENCH_DIR", "TMPDIR"}) {
    const char* value = std::getenv(variable);
    if (value != nullptr && *value != '\0') return value;
  }
  return "/tmp";
}

std::string entry_name(std::size_t i) {
  char name[16];
  std::snprintf(name, sizeof name, "w%04zu", i);
  return name;
}

// xorshift64*: incompressible enough that no layer below could shortcut the bytes.
void fill_random_ish(std::vector<std::uint8_t>& bytes) {
  std::uint64_t state = 0x9E3779B97F4A7C15u;
  for (std::size_t at = 0; at + 8 <= bytes.size(); at += 8) {
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    const std::uint64_t word = state * 0x2545F4914F6CDD1Du;
    std::memcpy(bytes.data() + at, &word, 8);
  }
}

void write_all(int fd, ByteSpan bytes, const fs::path& path) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("write " + path.string());
    bytes = bytes.subspan(static_cast<std::size_t>(n));
  }
}

// The payload and the files every benchmark shares, made on first use and removed at exit.
class Fixture final {
 public:
  static Fixture& get() {
    static Fixture fixture;
    return fixture;
  }

  ByteSpan payload() const { return payload_; }
  ByteSpan entry(std::size_t i) const { return payload().subspan(i * kEntrySize, kEntrySize); }
  const fs::path& dir() const { return dir_; }
  // The archive the read benchmarks open, written once by ZipWriter from spans.
  const fs::path& archive() const { return archive_; }
  // The payload as one plain file, the source of `cp`.
  const fs::path& plain() const { return plain_; }

  // Writes back dirty pages of the scratch file system, so that every write benchmark starts
  // with the same (empty) writeback backlog instead of paying for its predecessor's.
  void settle() const {
    const int fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) fail("open " + dir_.string());
    ::syncfs(fd);
    ::close(fd);
  }

  ~Fixture() {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  Fixture(const Fixture&) = delete;
  Fixture& operator=(const Fixture&) = delete;

 private:
  Fixture()
      : payload_(kTotalSize),
        dir_(scratch_root() / ("onnxzip_zip_bench." + std::to_string(::getpid()))),
        archive_(dir_ / "read.onnxz"),
        plain_(dir_ / "payload.bin") {
    fill_random_ish(payload_);
    fs::create_directories(dir_);
    try {
      ZipWriter writer(archive_);
      for (std::size_t i = 0; i < kEntryCount; ++i) writer.add(entry_name(i), entry(i));
      writer.finish();
      const int fd = ::open(plain_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd < 0) fail("create " + plain_.string());
      write_all(fd, payload_, plain_);
      ::close(fd);
      settle();
    } catch (...) {
      std::error_code ignored;
      fs::remove_all(dir_, ignored);  // The destructor will not run.
      throw;
    }
  }

  std::vector<std::uint8_t> payload_;
  fs::path dir_;
  fs::path archive_;
  fs::path plain_;
};

// Removes a destination between iterations, outside the timing: unlinking 1 GB of dirty pages
// is not what any of the writers is measured for.
void remove_untimed(benchmark::State& state, const fs::path& path) {
  state.PauseTiming();
  fs::remove(path);
  Fixture::get().settle();
  state.ResumeTiming();
}

// ---------------------------------------------------------------------------------------------
// CRC-32 against memcpy

void BM_Crc32(benchmark::State& state) {
  const ByteSpan bytes = Fixture::get().payload().first(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(crc32(bytes));
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

void BM_Memcpy(benchmark::State& state) {
  const ByteSpan bytes = Fixture::get().payload().first(static_cast<std::size_t>(state.range(0)));
  std::vector<std::uint8_t> target(bytes.size(), 1);  // Faulted in before the timing.
  for (auto _ : state) {
    std::memcpy(target.data(), bytes.data(), bytes.size());
    benchmark::DoNotOptimize(target.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

BENCHMARK(BM_Crc32)->Arg(1 << 20)->Arg(256 << 20)->MinTime(0.5);
BENCHMARK(BM_Memcpy)->Arg(1 << 20)->Arg(256 << 20)->MinTime(0.5);

// ---------------------------------------------------------------------------------------------
// Writing 1000 MiB: the writer against cp and write()

void BM_WriteZipFromSpans(benchmark::State& state) {
  const Fixture& f = Fixture::get();
  const fs::path path = f.dir() / "spans.onnxz";
  for (auto _ : state) {
    ZipWriter writer(path);
    for (std::size_t i = 0; i < kEntryCount; ++i) writer.add(entry_name(i), f.entry(i));
    writer.finish();
    remove_untimed(state, path);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(kTotalSize));
}

void BM_WriteZipFromProducer(benchmark::State& state) {
  const Fixture& f = Fixture::get();
  const fs::path path = f.dir() / "producer.onnxz";
  for (auto _ : state) {
    ZipWriter writer(path);
    for (std::size_t i = 0; i < kEntryCount; ++i) {
      const ByteSpan bytes = f.entry(i);
      writer.add(entry_name(i), bytes.size(), [bytes](EntrySink& sink) {
        for (std::size_t at = 0; at < bytes.size(); at += kProducerPiece) {
          sink.write(bytes.subspan(at, std::min(kProducerPiece, bytes.size() - at)));
        }
      });
    }
    writer.finish();
    remove_untimed(state, path);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(kTotalSize));
}

// The real cp binary, as a user would copy the payload: process start included. Its CPU column
// shows only this process (cp's own time is not counted). coreutils 9 copies with
// copy_file_range, inside the kernel, so its bytes never pass through user memory.
void BM_CpCommand(benchmark::State& state) {
  const Fixture& f = Fixture::get();
  const fs::path target = f.dir() / "cp_copy.bin";
  const std::string source_arg = f.plain().string();
  const std::string target_arg = target.string();
  for (auto _ : state) {
    char* argv[] = {const_cast<char*>("cp"), const_cast<char*>(source_arg.c_str()),
                    const_cast<char*>(target_arg.c_str()), nullptr};
    pid_t pid = 0;
    const int spawn_error = ::posix_spawnp(&pid, "cp", nullptr, nullptr, argv, environ);
    if (spawn_error != 0) {
      state.SkipWithError("cannot start cp");
      break;
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      state.SkipWithError("cp failed");
      break;
    }
    remove_untimed(state, target);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(kTotalSize));
}

// The I/O floor: the same bytes in 1 MiB write() calls to a new file, nothing else. staged=0
// writes straight from the 1000 MiB payload, as ZipWriter does with spans of at least its buffer
// size; staged=1 first copies each MiB into one reused 1 MiB buffer, as ZipWriter's buffered
// path does with producer pieces, so the kernel copies from a cache-hot source.
void BM_WriteLoop(benchmark::State& state) {
  const Fixture& f = Fixture::get();
  const bool staged = state.range(0) != 0;
  const fs::path path = f.dir() / "write_loop.bin";
  std::vector<std::uint8_t> stage(kEntrySize, 1);
  for (auto _ : state) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) fail("create " + path.string());
    for (std::size_t i = 0; i < kEntryCount; ++i) {
      if (staged) {
        std::memcpy(stage.data(), f.entry(i).data(), kEntrySize);
        write_all(fd, stage, path);
      } else {
        write_all(fd, f.entry(i), path);
      }
    }
    ::close(fd);
    remove_untimed(state, path);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(kTotalSize));
}

BENCHMARK(BM_WriteZipFromSpans)
    ->Iterations(kIoIterations)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_WriteZipFromProducer)
    ->Iterations(kIoIterations)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CpCommand)->Iterations(kIoIterations)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_WriteLoop)
    ->ArgName("staged")
    ->Arg(0)
    ->Arg(1)
    ->Iterations(kIoIterations)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// ---------------------------------------------------------------------------------------------
// Reading the 1000 MiB archive: open, touch, verify against read()

// Open maps the file and checks every header, but reads no payload: its cost is per entry.
// minor_faults counts the pages the kernel had to map per open.
void BM_ReaderOpen(benchmark::State& state) {
  const Fixture& f = Fixture::get();
  rusage before{};
  ::getrusage(RUSAGE_SELF, &before);
  for (auto _ : state) {
    const ZipReader reader = ZipReader::open(f.archive());
    std::uint64_t total = 0;
    for (const ZipEntry& e : reader.entries()) total += e.size + e.local->data_offset;
    benchmark::DoNotOptimize(total);
  }
  rusage after{};
  ::getrusage(RUSAGE_SELF, &after);
  state.counters["entries"] = static_cast<double>(kEntryCount);
  state.counters["minor_faults"] = benchmark::Counter(
      static_cast<double>(after.ru_minflt - before.ru_minflt), benchmark::Counter::kAvgIterations);
}

// The same without mapping and unmapping: from_bytes over a mapping made (and faulted in) once,
// so what remains is reading and cross-checking the headers.
void BM_ReaderParseMapped(benchmark::State& state) {
  const auto mapped = MappedFile::open(Fixture::get().archive());
  const ByteSpan bytes = mapped->bytes();
  std::uint64_t warm = 0;
  for (std::size_t at = 0; at < bytes.size(); at += 4096) warm += bytes[at];
  benchmark::DoNotOptimize(warm);
  for (auto _ : state) {
    const ZipReader reader = ZipReader::from_bytes(bytes, kNoOwner);
    std::uint64_t total = 0;
    for (const ZipEntry& e : reader.entries()) total += e.size + e.local->data_offset;
    benchmark::DoNotOptimize(total);
  }
  state.counters["entries"] = static_cast<double>(kEntryCount);
}

std::uint64_t sum_words(ByteSpan bytes) {
  std::uint64_t sum = 0;
  for (std::size_t at = 0; at + 8 <= bytes.size(); at += 8) {
    std::uint64_t word;
    std::memcpy(&word, bytes.data() + at, 8);
    sum += word;
  }
  return sum;
}

// Every byte of every entry through stored_data(). fresh_map=1 opens (maps) the archive in each
// iteration, so page faults are paid as a loader would pay them; fresh_map=0 reuses one mapping.
void BM_ReaderTouchStored(benchmark::State& state) {
  const Fixture& f = Fixture::get();
  const bool fresh_map = state.range(0) != 0;
  std::optional<ZipReader> kept;
  if (!fresh_map) {
    kept.emplace(ZipReader::open(f.archive()));
    for (const ZipEntry& e : kept->entries())
      benchmark::DoNotOptimize(sum_words(kept->stored_data(e)));
  }
  for (auto _ : state) {
    std::optional<ZipReader> fresh;
    if (fresh_map) fresh.emplace(ZipReader::open(f.archive()));
    const ZipReader& reader = fresh_map ? *fresh : *kept;
    std::uint64_t sum = 0;
    for (const ZipEntry& e : reader.entries()) sum += sum_words(reader.stored_data(e));
    benchmark::DoNotOptimize(sum);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(kTotalSize));
}

void BM_ReaderVerify(benchmark::State& state) {
  const ZipReader reader = ZipReader::open(Fixture::get().archive());
  for (const ZipEntry& e : reader.entries()) reader.verify(e);  // Maps every page first.
  for (auto _ : state) {
    for (const ZipEntry& e : reader.entries()) reader.verify(e);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(kTotalSize));
}

// The reference: the whole archive file into one buffer with read().
void BM_ReadSyscall(benchmark::State& state) {
  const fs::path& path = Fixture::get().archive();
  const std::size_t size = static_cast<std::size_t>(fs::file_size(path));
  std::vector<std::uint8_t> buffer(size, 1);  // Faulted in before the timing.
  for (auto _ : state) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail("open " + path.string());
    std::size_t done = 0;
    while (done < size) {
      const ssize_t n = ::read(fd, buffer.data() + done, size - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail("read " + path.string());
      done += static_cast<std::size_t>(n);
    }
    ::close(fd);
    benchmark::DoNotOptimize(buffer.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(size));
}

BENCHMARK(BM_ReaderOpen)->MinTime(0.5)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ReaderParseMapped)->MinTime(0.5)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ReaderTouchStored)
    ->ArgName("fresh_map")
    ->Arg(1)
    ->Arg(0)
    ->Iterations(5)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReaderVerify)->Iterations(5)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReadSyscall)->Iterations(5)->UseRealTime()->Unit(benchmark::kMillisecond);

// ---------------------------------------------------------------------------------------------
// The console table, then the ratios a reader would otherwise compute by hand.

class SummaryReporter final : public benchmark::ConsoleReporter {
 public:
  explicit SummaryReporter(OutputOptions options) : ConsoleReporter(options) {}

  // With --benchmark_repetitions the summary uses the medians; otherwise the single run.
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.error_occurred) continue;
      const bool median = run.run_type == Run::RT_Aggregate && run.aggregate_name == "median";
      if (run.run_type == Run::RT_Aggregate && !median) continue;
      const std::string name = run.run_name.str();
      if (!median && medians_.count(name) != 0) continue;
      if (median) medians_.insert(name);
      const auto rate = run.counters.find("bytes_per_second");
      if (rate != run.counters.end()) rates_[name] = rate->second.value;
      seconds_[name] = run.GetAdjustedRealTime() / benchmark::GetTimeUnitMultiplier(run.time_unit);
    }
    ConsoleReporter::ReportRuns(runs);
  }

  void print_summary() const {
    std::printf("\nSummary (throughput ratios; 1.00 = as fast as the reference)\n");
    ratio("crc32 1 MiB / memcpy 1 MiB", "BM_Crc32/1048576", "BM_Memcpy/1048576");
    ratio("crc32 256 MiB / memcpy 256 MiB", "BM_Crc32/268435456", "BM_Memcpy/268435456");
    ratio("ZipWriter spans / cp", "BM_WriteZipFromSpans", "BM_CpCommand");
    ratio("ZipWriter producer 64 KiB / cp", "BM_WriteZipFromProducer", "BM_CpCommand");
    ratio("ZipWriter spans / write() loop", "BM_WriteZipFromSpans", "BM_WriteLoop/staged:0");
    ratio("ZipWriter producer 64 KiB / staged write() loop", "BM_WriteZipFromProducer",
          "BM_WriteLoop/staged:1");
    ratio("cp / write() loop", "BM_CpCommand", "BM_WriteLoop/staged:0");
    ratio("touch stored_data, fresh map / read()", "BM_ReaderTouchStored/fresh_map:1",
          "BM_ReadSyscall");
    ratio("touch stored_data, mapped / read()", "BM_ReaderTouchStored/fresh_map:0",
          "BM_ReadSyscall");
    ratio("verify() all / read()", "BM_ReaderVerify", "BM_ReadSyscall");
    per_entry("ZipReader::open + iterate", "BM_ReaderOpen");
    per_entry("ZipReader::from_bytes, mapped + iterate", "BM_ReaderParseMapped");
  }

 private:
  void ratio(const char* label, const std::string& measured, const std::string& reference) const {
    const auto m = find(measured, rates_);
    const auto r = find(reference, rates_);
    if (!m || !r) return;  // Filtered out or failed.
    constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
    std::printf("  %-48s %6.2f   (%6.2f vs %6.2f GiB/s)\n", label, *m / *r, *m / kGiB, *r / kGiB);
  }

  void per_entry(const char* label, const std::string& benchmark) const {
    const auto seconds = find(benchmark, seconds_);
    if (!seconds) return;
    std::printf("  %-48s %8.0f us per archive, %5.2f us per entry\n", label, *seconds * 1e6,
                *seconds * 1e6 / static_cast<double>(kEntryCount));
  }

  static std::optional<double> find(const std::string& prefix,
                                    const std::map<std::string, double>& values) {
    // Names carry suffixes such as "/iterations:3/real_time".
    for (const auto& [name, value] : values) {
      if (name == prefix || name.rfind(prefix + "/", 0) == 0) return value;
    }
    return std::nullopt;
  }

  std::map<std::string, double> rates_;    // bytes_per_second by benchmark name.
  std::map<std::string, double> seconds_;  // Real time per iteration by benchmark name.
  std::set<std::string> medians_;          // Names whose figures above are medians.
};

}  // namespace
}  // namespace onnxzip

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  try {
    // A reporter given explicitly ignores --benchmark_color: colour only on a terminal.
    onnxzip::SummaryReporter reporter(::isatty(STDOUT_FILENO)
                                          ? benchmark::ConsoleReporter::OO_Defaults
                                          : benchmark::ConsoleReporter::OO_Tabular);
    benchmark::RunSpecifiedBenchmarks(&reporter);
    reporter.print_summary();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zip_bench: %s\n", e.what());
    return 1;
  }
  benchmark::Shutdown();
  return 0;
}
