// What load() costs does not grow with the weights: it reads the central directory, every local
// header (with pread, ZipReader::open) and __MODEL_PROTO, and touches no page of any payload.
// Measured by the page faults of the process during a load (getrusage): touching one page per
// entry through the mapping would fault at least once per entry. bench/archive_bench.cpp times
// the same promise (1 GiB and 4 GiB archives of 1,000 tensors).
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdint>
#include <string>
#include <vector>

#include "onnxzip/archive.h"
#include "onnxzip/internal/mapped_file.h"
#include "onnxzip/internal/zip_reader.h"
#include "support/memory_probe.h"
#include "support/scratch_dir.h"

namespace onnxzip {
namespace {

long minor_faults() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

TEST(ArchiveLoadCost, LoadTouchesNoPayloadPage) {
  test_support::ScratchDir dir("archive_load_cost");
  constexpr std::size_t kEntries = 400;
  constexpr std::int64_t kFloats = 32 * 1024;  // 128 KiB apart: every header on its own page.
  ModelProto model;
  model.ir_version = 8;
  GraphProto& graph = model.graph.ensure();
  const std::vector<std::uint8_t> payload(kFloats * 4, 0x42);
  {
    ArchiveWriter writer(dir / "model.onnxz");
    for (std::size_t i = 0; i < kEntries; ++i) {
      TensorProto& t = graph.initializer.emplace_back();
      t.name = "w" + std::to_string(i);
      t.data_type = TensorProto::kFloat;
      t.dims = {kFloats};
      writer.add_tensor(*t.name, TensorProto::kFloat, t.dims, payload).apply_to(t);
    }
    writer.finish(model);
  }
  // Warm: the allocator's pages and the file's page cache, so that what remains is the load.
  for (int i = 0; i < 2; ++i) load(dir / "model.onnxz");

  const long before = minor_faults();
  const ModelProto loaded = load(dir / "model.onnxz");
  const long faults = minor_faults() - before;
  ASSERT_EQ(loaded.graph->initializer.size(), kEntries);
  EXPECT_EQ(loaded.graph->initializer[7].raw_data->view()[5], 0x42);  // After the count.
  // The central directory and __MODEL_PROTO take a few pages; a fault per entry would be 400.
  // (Sanitizers fault in fresh heap pages for every allocation: no bound there.)
  if (!test_support::kSanitizedBuild) {
    EXPECT_LT(faults, static_cast<long>(kEntries / 4)) << faults << " page faults";
  }

  // The local headers' extra fields read by pread are the same bytes the mapping holds.
  const ZipReader by_path = ZipReader::open(dir / "model.onnxz");
  const auto mapped = MappedFile::open(dir / "model.onnxz");
  const ZipReader by_bytes = ZipReader::from_bytes(mapped->bytes(), kNoOwner);
  ASSERT_EQ(by_path.entries().size(), by_bytes.entries().size());
  std::size_t padded = 0;
  for (std::size_t i = 0; i < by_path.entries().size(); ++i) {
    const ZipEntry& a = by_path.entries()[i];
    const ZipEntry& b = by_bytes.entries()[i];
    EXPECT_EQ(a.local->data_offset, b.local->data_offset);
    EXPECT_EQ(a.local->data_offset % 64, 0u);
    EXPECT_TRUE(equal_bytes(a.local->local_extra, b.local->local_extra)) << a.name;
    padded += !a.local->local_extra.empty();
  }
  EXPECT_GT(padded, kEntries / 2);  // Alignment records: the comparison above compared bytes.
}

}  // namespace
}  // namespace onnxzip
