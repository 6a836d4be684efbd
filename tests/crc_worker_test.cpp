// crc32_of: the CRC of memory and of a mapped file's bytes (read with pread) equals crc32() of the
// same bytes, chained; a file that shrank under a mapping is an I/O error naming the offset.
// CrcJobQueue: results in submission order whatever thread ran each job, every byte handed to a
// job's observer in order, a failed job's error in its own result, no thread at all, and never
// more jobs waiting than its bound.
#include "crc_worker.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "crc32.h"
#include "onnxzip/error.h"
#include "onnxzip/internal/mapped_file.h"
#include "posix_file.h"
#include "support/scratch_dir.h"
#include "support/zip_builder.h"

namespace onnxzip {
namespace {

namespace fs = std::filesystem;
using detail::CrcJob;
using detail::CrcJobQueue;
using detail::CrcJobResult;
using test_support::ScratchDir;

void write_file_bytes(const fs::path& path, const std::vector<std::uint8_t>& bytes) {
  test_support::write_file_bytes(path, std::string(bytes.begin(), bytes.end()));
}

detail::Fd open_for_reading(const fs::path& path) {
  detail::Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  EXPECT_GE(fd.get(), 0) << path;
  return fd;
}

std::string error_message(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    return std::string(to_string(e.code())) + ": " + e.message();
  } catch (const std::exception& e) {
    return e.what();
  }
}

TEST(CrcOf, MemoryGivesTheSameCrcAsCrc32AndChains) {
  const std::vector<std::uint8_t> bytes = testing::pattern(3 << 20, 7);
  const ByteSpan all(bytes);
  OwnedBytes buffer;
  EXPECT_EQ(detail::crc32_of(all, 0, buffer), crc32(all));
  // Chained: the second half after the first is the whole.
  const std::uint32_t first = crc32(all.first(1000));
  EXPECT_EQ(detail::crc32_of(all.subspan(1000), first, buffer), crc32(all));
  // Nothing to add: the previous CRC.
  EXPECT_EQ(detail::crc32_of(all.first(0), 0x12345678, buffer), 0x12345678u);
}

// The observer (a writer's SHA-256) is handed every byte once, in order, from memory and from a
// mapped file's pread buffer alike, beside the CRC.
TEST(CrcOf, TheObserverSeesEveryByteInOrder) {
  ScratchDir dir("crc_worker_observer");
  const fs::path path = dir / "weights.bin";
  const std::vector<std::uint8_t> bytes = testing::pattern((3 << 20) + 77, 5);
  write_file_bytes(path, bytes);
  const auto file = MappedFile::open(path);
  OwnedBytes buffer;
  for (const ByteSpan source : {ByteSpan(bytes), file->bytes()}) {
    std::vector<std::uint8_t> seen;
    std::size_t pieces = 0;
    const detail::PieceObserver observer = [&](ByteSpan piece) {
      seen.insert(seen.end(), piece.begin(), piece.end());
      ++pieces;
    };
    EXPECT_EQ(detail::crc32_of(source.subspan(3), 0, buffer, &observer),
              crc32(ByteSpan(bytes).subspan(3)));
    EXPECT_TRUE(std::equal(seen.begin(), seen.end(), bytes.begin() + 3, bytes.end()));
    EXPECT_EQ(seen.size(), bytes.size() - 3);
    EXPECT_GT(pieces, 1u);  // In pieces that fit a cache, not the whole at once.
  }
}

TEST(CrcOf, MappedBytesAreReadFromTheirFileWithTheSameCrc) {
  ScratchDir dir("crc_worker");
  const fs::path path = dir / "weights.bin";
  const std::vector<std::uint8_t> bytes = testing::pattern((5 << 20) + 123, 3);
  write_file_bytes(path, bytes);
  const auto file = MappedFile::open(path);
  const ByteSpan mapped = file->bytes();
  OwnedBytes buffer;
  for (const auto& [at, size] : {std::pair<std::size_t, std::size_t>{0, bytes.size()},
                                 {1, bytes.size() - 1},
                                 {4096 + 17, 2 << 20},
                                 {bytes.size() - 5, 5}}) {
    SCOPED_TRACE(std::to_string(at) + "+" + std::to_string(size));
    EXPECT_EQ(detail::crc32_of(mapped.subspan(at, size), 0, buffer),
              crc32(ByteSpan(bytes).subspan(at, size)));
  }
}

TEST(CrcOf, AFileThatShrankUnderItsMappingIsAnIoErrorNamingTheOffset) {
  ScratchDir dir("crc_worker");
  const fs::path path = dir / "weights.bin";
  write_file_bytes(path, testing::pattern(4 << 20, 5));
  const auto file = MappedFile::open(path);
  fs::resize_file(path, 1 << 20);  // Never touched through the mapping: no SIGBUS.
  OwnedBytes buffer;
  try {
    (void)detail::crc32_of(file->bytes(), 0, buffer);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_EQ(e.message(),
              "the source file ended at offset 1048576 while its CRC-32 was computed (was it "
              "truncated?)");
  }
}

// Ranges of one file of every size around the read piece, each with an observer that records
// what it saw: the results come back in submission order and each is the CRC of its own range,
// whether the jobs ran on the worker, on the caller (a bound of 0 or 1 makes the caller take
// most), or all on the caller (no thread).
TEST(CrcJobQueue, ResultsComeInSubmissionOrderWithEveryByteObserved) {
  ScratchDir dir("crc_jobs_order");
  const fs::path path = dir / "data.bin";
  const std::vector<std::uint8_t> bytes = testing::pattern((9 << 20) + 5, 11);
  write_file_bytes(path, bytes);
  const std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges = {
      {0, 0},           {0, 1},
      {7, 262143},      {100, 262144},
      {3, 262145},      {0, 3 << 20},
      {1 << 20, 5},     {4096, 2 << 20},
      {9, 1 << 20},     {bytes.size() - 1, 1},
      {5, 1 << 19},     {2 << 20, 4 << 20},
      {0, bytes.size()}};
  for (const std::size_t threads : {1u, 0u}) {
    for (const std::size_t max_waiting : {0u, 1u, 4u, 100u}) {
      SCOPED_TRACE("threads " + std::to_string(threads) + ", bound " + std::to_string(max_waiting));
      CrcJobQueue queue(open_for_reading(path), max_waiting, threads);
      std::vector<std::vector<std::uint8_t>> seen(ranges.size());
      std::vector<CrcJobResult> results;
      for (std::size_t i = 0; i < ranges.size(); ++i) {
        queue.submit({.offset = ranges[i].first,
                      .size = ranges[i].second,
                      .observer = [&seen, i](ByteSpan piece) {
                        seen[i].insert(seen[i].end(), piece.begin(), piece.end());
                      }});
        for (CrcJobResult& r : queue.take_done()) results.push_back(std::move(r));
        EXPECT_LE(results.size(), i + 1);
      }
      for (CrcJobResult& r : queue.take_all()) results.push_back(std::move(r));
      EXPECT_TRUE(queue.take_all().empty());  // Each result is handed out once.
      ASSERT_EQ(results.size(), ranges.size());
      for (std::size_t i = 0; i < ranges.size(); ++i) {
        const ByteSpan expected = ByteSpan(bytes).subspan(ranges[i].first, ranges[i].second);
        EXPECT_FALSE(results[i].error) << i << ": " << error_message(results[i].error);
        EXPECT_EQ(results[i].crc, crc32(expected)) << i;
        EXPECT_TRUE(std::equal(seen[i].begin(), seen[i].end(), expected.begin(), expected.end()))
            << i;
      }
      EXPECT_LE(queue.most_waiting(), max_waiting);
      if (threads == 0) {
        EXPECT_EQ(queue.run_by_caller(), ranges.size());
        EXPECT_EQ(queue.most_waiting(), 0u);
      }
    }
  }
}

// A job that fails (its range runs past the end of the file; its observer throws) has the error
// in its own result, with the offset; the jobs before and after it are unaffected.
TEST(CrcJobQueue, AFailedJobsErrorIsInItsOwnResult) {
  ScratchDir dir("crc_jobs_error");
  const fs::path path = dir / "data.bin";
  const std::vector<std::uint8_t> bytes = testing::pattern(3 << 20, 2);
  write_file_bytes(path, bytes);
  for (const std::size_t threads : {1u, 0u}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    CrcJobQueue queue(open_for_reading(path), CrcJobQueue::kDefaultMaxWaiting, threads);
    queue.submit({.offset = 0, .size = 1 << 20, .observer = nullptr});
    queue.submit({.offset = 2 << 20, .size = 2 << 20, .observer = nullptr});
    queue.submit({.offset = 5, .size = 1 << 20, .observer = [](ByteSpan) {
                    throw Error(ErrorCode::kIo, "SHA-256: no more");
                  }});
    queue.submit({.offset = 1, .size = 2 << 20, .observer = nullptr});
    const std::vector<CrcJobResult> results = queue.take_all();
    ASSERT_EQ(results.size(), 4u);
    EXPECT_FALSE(results[0].error);
    EXPECT_EQ(results[0].crc, crc32(ByteSpan(bytes).first(1 << 20)));
    ASSERT_TRUE(results[1].error);
    EXPECT_EQ(error_message(results[1].error),
              "io: the file ended at offset 3145728 while its CRC-32 was computed (was it "
              "truncated?)");
    ASSERT_TRUE(results[2].error);
    EXPECT_EQ(error_message(results[2].error), "io: SHA-256: no more");
    EXPECT_FALSE(results[3].error);
    EXPECT_EQ(results[3].crc, crc32(ByteSpan(bytes).subspan(1, 2 << 20)));
  }
}

// The bound holds when the worker cannot keep up at all: with the worker blocked inside its first
// job's observer, no more than max_waiting jobs wait, the caller runs the rest itself, and every
// result is still handed out in order once the worker is let go.
TEST(CrcJobQueue, NoMoreThanTheBoundWaitsWhenTheWorkerIsStuck) {
  ScratchDir dir("crc_jobs_bound");
  const fs::path path = dir / "data.bin";
  const std::vector<std::uint8_t> bytes = testing::pattern(1 << 20, 4);
  write_file_bytes(path, bytes);
  std::mutex gate;
  std::unique_lock<std::mutex> held(gate);
  std::atomic<bool> worker_inside{false};
  const std::thread::id caller = std::this_thread::get_id();
  CrcJobQueue queue(open_for_reading(path), 3, 1);
  queue.submit({.offset = 0, .size = 10, .observer = [&](ByteSpan) {
                  if (std::this_thread::get_id() == caller) return;
                  worker_inside.store(true);
                  const std::lock_guard<std::mutex> wait_for_the_test(gate);
                }});
  while (!worker_inside.load()) std::this_thread::yield();
  constexpr std::size_t kJobs = 40;
  for (std::size_t i = 1; i < kJobs; ++i) {
    queue.submit({.offset = i, .size = 1000, .observer = nullptr});
    EXPECT_TRUE(queue.take_done().empty());  // The first job is not done: nothing is handed out.
  }
  EXPECT_EQ(queue.most_waiting(), 3u);
  EXPECT_EQ(queue.run_by_caller(), kJobs - 1 - 3);
  held.unlock();
  const std::vector<CrcJobResult> results = queue.take_all();
  ASSERT_EQ(results.size(), kJobs);
  EXPECT_EQ(results[0].crc, crc32(ByteSpan(bytes).first(10)));
  for (std::size_t i = 1; i < kJobs; ++i) {
    EXPECT_EQ(results[i].crc, crc32(ByteSpan(bytes).subspan(i, 1000))) << i;
  }
}

// Destroyed with jobs waiting and one running: the worker stops, nothing is left running.
TEST(CrcJobQueue, DestroyedWithJobsUnderWayStopsTheWorker) {
  ScratchDir dir("crc_jobs_stop");
  const fs::path path = dir / "data.bin";
  write_file_bytes(path, testing::pattern(8 << 20, 4));
  std::atomic<std::size_t> pieces{0};
  // A millisecond per piece: the 20 jobs would keep the worker busy for over half a second, far
  // longer than this thread, even when it waits for a core, needs to reach the destructor.
  const auto count_slowly = [&pieces](ByteSpan) {
    ++pieces;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  };
  {
    CrcJobQueue queue(open_for_reading(path), 100, 1);
    for (int i = 0; i < 20; ++i) {
      queue.submit({.offset = 0, .size = 8 << 20, .observer = count_slowly});
    }
  }
  const std::size_t after = pieces.load();
  EXPECT_LT(after, 20u * 32u);  // Not every job ran to its end.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(pieces.load(), after);  // And nothing runs any more.
}

}  // namespace
}  // namespace onnxzip
