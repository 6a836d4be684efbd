// Conversion of a model over 4 GiB, both ways, through the library functions: legacy external
// data -> read_legacy_model -> save (a zip64 archive) -> verify -> load -> write_legacy_model
// (external data). The suite is named *Slow*: it writes about 13 GiB, so CTest labels it `slow`
// and runs it alone (`ctest -L slow`; `ctest -LE slow` skips it).
//
// What it shows: every byte survives both conversions (sizes, and the first, middle and last
// 4 KiB of every tensor in each copy, compared with the generator; verify checks the CRC-32 of
// every entry), the zip64 records are where the spec wants them, and the conversion streams
// from the mappings: the process's anonymous memory stays far below the size of the model.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "onnxzip/archive.h"
#include "onnxzip/internal/mapped_file.h"
#include "onnxzip/internal/zip_reader.h"
#include "onnxzip/legacy.h"
#include "onnxzip/onnx_codec.h"
#include "support/big_model.h"
#include "support/external_tool.h"
#include "support/memory_probe.h"
#include "support/scratch_dir.h"

namespace onnxzip {
namespace {

namespace fs = std::filesystem;
using test_support::AnonMemoryProbe;
using test_support::BigTensor;
using test_support::equals_big_bytes;
using test_support::sample_ranges;
using test_support::ScratchDir;

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
constexpr std::uint64_t kFourGiB = std::uint64_t{1} << 32;

// Checks the sampled ranges of every tensor of `model` (inline payloads) against the generator.
void expect_samples(const ModelProto& model, const std::vector<BigTensor>& layout) {
  ASSERT_EQ(model.graph->initializer.size(), layout.size());
  for (std::size_t i = 0; i < layout.size(); ++i) {
    const TensorProto& t = model.graph->initializer[i];
    SCOPED_TRACE(*t.name);
    EXPECT_EQ(*t.name, layout[i].name);
    ASSERT_TRUE(t.raw_data.has_value());
    const ByteSpan bytes = t.raw_data->view();
    ASSERT_EQ(bytes.size(), layout[i].length);
    for (const auto& [begin, end] : sample_ranges(bytes.size())) {
      EXPECT_TRUE(equals_big_bytes(layout[i].seed, begin, bytes.subspan(begin, end - begin)))
          << "bytes " << begin << ".." << end;
    }
  }
}

class Stopwatch final {
 public:
  double lap() {
    const auto now = std::chrono::steady_clock::now();
    const double seconds = std::chrono::duration<double>(now - last_).count();
    last_ = now;
    return seconds;
  }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

TEST(ArchiveSlow, ModelOver4GiBConvertsBothWaysInBoundedMemory) {
  ScratchDir dir("archive_big");
  const fs::path source = dir / "source";
  const fs::path target = dir / "target";
  fs::create_directories(source);
  fs::create_directories(target);

  // 4.4 GiB: five tensors of about 900 MiB, the last one with an odd size and starting past
  // 3.5 GiB, then a small tensor whose local header lies past 4 GiB.
  std::vector<test_support::BigTensorSpec> specs;
  for (int i = 0; i < 5; ++i) {
    specs.push_back({"layer" + std::to_string(i) + ".weight", 900 * kMiB + (i == 4 ? 12345 : 0)});
  }
  specs.push_back({"tail.bias", 4096 + 7, 4096});
  Stopwatch clock;
  const std::vector<BigTensor> layout = test_support::write_big_external_model(source, specs);
  std::uint64_t total = 0;
  for (const BigTensor& t : layout) total += t.length;
  ASSERT_GT(total, kFourGiB);
  std::printf("[ big ] model %.2f GiB written in %.1f s\n", total / 1073741824.0, clock.lap());

  {
    // The probe can fail: it sees a 64 MiB buffer that lives for a few samples.
    AnonMemoryProbe probe;
    std::vector<std::uint8_t> buffer(64 * kMiB, 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    probe.stop();
    EXPECT_GE(probe.growth_bytes(), 60 * kMiB);
  }
  AnonMemoryProbe memory;
  const fs::path archive = dir / "model.onnxz";
  {
    const ModelProto model = read_legacy_model(source / "model.onnx");
    save(model, archive);
  }
  const double save_seconds = clock.lap();
  // The source is no longer needed: the generator is the reference from here on.
  fs::remove_all(source);
  ASSERT_GT(fs::file_size(archive), kFourGiB);

  const VerifyReport report = verify(archive);
  const double verify_seconds = clock.lap();
  for (const VerifyFinding& f : report.findings) {
    ADD_FAILURE() << to_string(f.severity) << " " << f.entry << " @" << f.offset << ": "
                  << f.message;
  }
  EXPECT_TRUE(report.ok());
  {
    // zip64 exactly where spec §5 wants it: the end records (the directory lies past 4 GiB) and
    // the entries whose local header does; no entry is 4 GiB long, so none has zip64 sizes.
    const ZipReader zip = ZipReader::open(archive);
    EXPECT_TRUE(zip.has_zip64_end_record());
    EXPECT_GT(zip.central_directory_offset(), kFourGiB);
    ASSERT_EQ(zip.entries().size(), layout.size() + 1);
    for (const ZipEntry& e : zip.entries()) {
      SCOPED_TRACE(e.name);
      EXPECT_EQ(e.zip64, e.local_header_offset >= 0xFFFFFFFFu);
      EXPECT_EQ(e.local->data_offset % 64, 0u);
    }
    EXPECT_EQ(zip.entries().back().name, kModelEntryName);
    EXPECT_TRUE(zip.entries().back().zip64);
  }

  std::uint64_t written_data = 0;
  double load_seconds = 0;
  double write_seconds = 0;
  {
    const ModelProto loaded = load(archive);
    load_seconds = clock.lap();
    expect_samples(loaded, layout);
    clock.lap();
    LegacyWriteOptions options;
    options.mode = LegacyWriteOptions::Mode::kExternal;
    write_legacy_model(loaded, target / "model.onnx", options);
    write_seconds = clock.lap();
  }
  memory.stop();
  fs::remove(archive);

  // The legacy copy: one data file, each payload at a multiple of 4096, as the reference loads it.
  {
    const ModelProto raw = parse_model_file(target / "model.onnx");
    const auto data = MappedFile::open(target / "model.onnx.data");
    written_data = data->bytes().size();
    ASSERT_EQ(raw.graph->initializer.size(), layout.size());
    std::uint64_t end = 0;
    for (std::size_t i = 0; i < layout.size(); ++i) {
      const TensorProto& t = raw.graph->initializer[i];
      SCOPED_TRACE(*t.name);
      ASSERT_EQ(t.data_location, TensorProto::kExternal);
      ASSERT_EQ(t.external_data.size(), 3u);
      EXPECT_EQ(*t.external_data[0].value, "model.onnx.data");
      const std::uint64_t offset = std::stoull(*t.external_data[1].value);
      const std::uint64_t length = std::stoull(*t.external_data[2].value);
      EXPECT_EQ(length, layout[i].length);
      EXPECT_EQ(offset, align_up(end, 4096));
      end = offset + length;
      for (const auto& [begin, stop] : sample_ranges(length)) {
        EXPECT_TRUE(equals_big_bytes(layout[i].seed, begin,
                                     data->bytes().subspan(offset + begin, stop - begin)))
            << "bytes " << begin << ".." << stop;
      }
    }
    EXPECT_EQ(written_data, end);  // Nothing after the last payload (legacy.h).
    // And it reads back through the legacy reader.
    expect_samples(read_legacy_model(target / "model.onnx"), layout);
  }

  const double gib = total / 1073741824.0;
  std::printf(
      "[ big ] %.2f GiB: read_legacy_model + save %.1f s (%.2f GiB/s), verify %.1f s, load "
      "%.3f s, write_legacy_model %.1f s (%.2f GiB/s)\n",
      gib, save_seconds, gib / save_seconds, verify_seconds, load_seconds, write_seconds,
      gib / write_seconds);
  std::printf(
      "[ big ] anonymous memory: baseline %.1f MiB, peak %.1f MiB (+%.1f MiB); VmHWM %.1f "
      "MiB (file pages of the mappings included)\n",
      memory.baseline_bytes() / 1048576.0, memory.peak_bytes() / 1048576.0,
      memory.growth_bytes() / 1048576.0, test_support::proc_status_bytes("VmHWM") / 1048576.0);
  // Streaming: one write buffer and the model structure, not a tensor (900 MiB), let alone the
  // model. Sanitizers keep freed memory in quarantine, so the bound applies without them.
  if (!test_support::kSanitizedBuild) {
    EXPECT_LT(memory.growth_bytes(), 512 * kMiB);
  }
}

}  // namespace
}  // namespace onnxzip
