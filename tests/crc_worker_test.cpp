// CrcWorker: the CRC of memory and of a mapped file's bytes (read with pread) equals crc32() of
// the same bytes, chained; a file that shrank under a mapping is an I/O error naming the offset.
#include "crc_worker.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "crc32.h"
#include "onnxzip/error.h"
#include "onnxzip/mapped_file.h"
#include "support/scratch_dir.h"
#include "support/zip_builder.h"

namespace onnxzip {
namespace {

namespace fs = std::filesystem;
using test_support::ScratchDir;

void write_file_bytes(const fs::path& path, const std::vector<std::uint8_t>& bytes) {
  test_support::write_file_bytes(path, std::string(bytes.begin(), bytes.end()));
}

TEST(CrcWorker, MemoryGivesTheSameCrcAsCrc32AndChains) {
  const std::vector<std::uint8_t> bytes = testing::pattern(3 << 20, 7);
  const ByteSpan all(bytes);
  detail::CrcWorker worker;
  worker.start(all, 0);
  EXPECT_EQ(worker.wait(), crc32(all));
  // Chained: the second half after the first is the whole.
  const std::uint32_t first = crc32(all.first(1000));
  worker.start(all.subspan(1000), first);
  EXPECT_EQ(worker.wait(), crc32(all));
  worker.start(all.first(0), 0x12345678);  // Nothing to add: the previous CRC.
  EXPECT_EQ(worker.wait(), 0x12345678u);
}

// The observer (a writer's SHA-256) is handed every byte once, in order, from memory and from a
// mapped file's pread buffer alike, beside the CRC.
TEST(CrcWorker, TheObserverSeesEveryByteInOrder) {
  ScratchDir dir("crc_worker_observer");
  const fs::path path = dir / "weights.bin";
  const std::vector<std::uint8_t> bytes = testing::pattern((3 << 20) + 77, 5);
  write_file_bytes(path, bytes);
  const auto file = MappedFile::open(path);
  detail::CrcWorker worker;
  for (const ByteSpan source : {ByteSpan(bytes), file->bytes()}) {
    std::vector<std::uint8_t> seen;
    std::size_t pieces = 0;
    const detail::PieceObserver observer = [&](ByteSpan piece) {
      seen.insert(seen.end(), piece.begin(), piece.end());
      ++pieces;
    };
    worker.start(source.subspan(3), 0, &observer);
    EXPECT_EQ(worker.wait(), crc32(ByteSpan(bytes).subspan(3)));
    EXPECT_TRUE(std::equal(seen.begin(), seen.end(), bytes.begin() + 3, bytes.end()));
    EXPECT_EQ(seen.size(), bytes.size() - 3);
    EXPECT_GT(pieces, 1u);  // In pieces that fit a cache, not the whole at once.
  }
  // An Error from the observer is the worker's.
  const detail::PieceObserver failing = [](ByteSpan) {
    throw Error(ErrorCode::kIo, "SHA-256: no more");
  };
  worker.start(ByteSpan(bytes), 0, &failing);
  try {
    (void)worker.wait();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_EQ(e.message(), "SHA-256: no more");
  }
}

TEST(CrcWorker, MappedBytesAreReadFromTheirFileWithTheSameCrc) {
  ScratchDir dir("crc_worker");
  const fs::path path = dir / "weights.bin";
  const std::vector<std::uint8_t> bytes = testing::pattern((5 << 20) + 123, 3);
  write_file_bytes(path, bytes);
  const auto file = MappedFile::open(path);
  const ByteSpan mapped = file->bytes();
  detail::CrcWorker worker;
  for (const auto& [at, size] : {std::pair<std::size_t, std::size_t>{0, bytes.size()},
                                 {1, bytes.size() - 1},
                                 {4096 + 17, 2 << 20},
                                 {bytes.size() - 5, 5}}) {
    SCOPED_TRACE(std::to_string(at) + "+" + std::to_string(size));
    worker.start(mapped.subspan(at, size), 0);
    EXPECT_EQ(worker.wait(), crc32(ByteSpan(bytes).subspan(at, size)));
  }
}

TEST(CrcWorker, AFileThatShrankUnderItsMappingIsAnIoErrorNamingTheOffset) {
  ScratchDir dir("crc_worker");
  const fs::path path = dir / "weights.bin";
  write_file_bytes(path, testing::pattern(4 << 20, 5));
  const auto file = MappedFile::open(path);
  fs::resize_file(path, 1 << 20);  // Never touched through the mapping: no SIGBUS.
  detail::CrcWorker worker;
  worker.start(file->bytes(), 0);
  try {
    worker.wait();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(e.message().find("ended at offset 1048576"), std::string::npos) << e.message();
  }
  // The worker is usable again.
  const std::vector<std::uint8_t> small = testing::pattern(100, 1);
  worker.start(small, 0);
  EXPECT_EQ(worker.wait(), crc32(small));
}

TEST(CrcWorker, WaitWithoutStartIsABadState) {
  detail::CrcWorker worker;
  try {
    worker.wait();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadState);
  }
}

}  // namespace
}  // namespace onnxzip
