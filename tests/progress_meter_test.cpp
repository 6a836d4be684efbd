#include "progress_meter.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "support/progress_calls.h"

namespace onnxzip::detail {
namespace {

using test_support::expect_progress_well_formed;
using test_support::ProgressRecorder;

constexpr std::uint64_t kStep = kProgressStepBytes;

TEST(ProgressMeter, ReportsAtTheStartEveryStepAndOnceAtTheEnd) {
  for (const std::uint64_t total :
       {std::uint64_t{0}, std::uint64_t{1}, kStep - 1, kStep, kStep + 1, 10 * kStep + 123}) {
    for (const std::uint64_t piece : {std::uint64_t{1} << 20, kStep, 3 * kStep}) {
      SCOPED_TRACE(::testing::Message() << "total " << total << ", pieces of " << piece);
      ProgressRecorder recorder;
      const ProgressCallback callback = recorder.callback();
      ProgressMeter meter(callback, total);
      EXPECT_TRUE(meter.active());
      for (std::uint64_t written = 0; written < total; written += piece) meter.advance(piece);
      meter.finish();
      meter.finish();  // Once only.
      expect_progress_well_formed(recorder.calls, total);
      // The start, at most one call per step, and the end.
      EXPECT_LE(recorder.calls.size(), 2 + total / kStep);
    }
  }
}

TEST(ProgressMeter, MovesWithinALargeWriteButNeverReachesTheTotalBeforeFinish) {
  ProgressRecorder recorder;
  const ProgressCallback callback = recorder.callback();
  ProgressMeter meter(callback, 4 * kStep);
  meter.advance(10 * kStep);  // More than announced (a total that was an estimate).
  ASSERT_EQ(recorder.calls.size(), 2u);
  EXPECT_EQ(recorder.calls[1].done, 4 * kStep - 1);
  meter.advance(kStep);
  EXPECT_EQ(recorder.calls.size(), 2u);  // Nothing new to say.
  meter.finish();
  expect_progress_well_formed(recorder.calls, 4 * kStep);
}

TEST(ProgressMeter, WithoutACallbackItIsInactiveAndWritesWhole) {
  const ProgressCallback none;
  ProgressMeter meter(none, 100);
  EXPECT_FALSE(meter.active());
  EXPECT_EQ(meter.last_part(), nullptr);
  meter.advance(50);
  meter.finish();
  const std::vector<std::uint8_t> bytes(3 * kStep);
  std::vector<std::size_t> pieces;
  write_with_progress(bytes, meter, [&](ByteSpan piece) { pieces.push_back(piece.size()); });
  EXPECT_EQ(pieces, std::vector<std::size_t>{bytes.size()});
}

TEST(WriteWithProgress, HandsOverEveryByteInOrderInStepSizedPieces) {
  ProgressRecorder recorder;
  const ProgressCallback callback = recorder.callback();
  std::vector<std::uint8_t> bytes(2 * kStep + 5);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::uint8_t>(i * 7);
  ProgressMeter meter(callback, bytes.size());
  std::vector<std::uint8_t> received;
  write_with_progress(bytes, meter, [&](ByteSpan piece) {
    EXPECT_LE(piece.size(), kStep);
    received.insert(received.end(), piece.begin(), piece.end());
  });
  meter.finish();
  EXPECT_EQ(received, bytes);
  expect_progress_well_formed(recorder.calls, bytes.size());
  EXPECT_EQ(recorder.calls.size(), 4u);  // 0, after each whole step, the end.
}

TEST(ProgressMeter, ALastPartCarriesANestedWritersProgressToTheEnd) {
  ProgressRecorder recorder;
  const ProgressCallback callback = recorder.callback();
  const std::uint64_t own = 2 * kStep;
  const std::uint64_t nested = 3 * kStep;
  ProgressMeter meter(callback, own + nested);
  meter.advance(own);
  const ProgressCallback part = meter.last_part();
  ASSERT_NE(part, nullptr);
  // A nested writer's calls, as a ProgressMeter of its own makes them.
  ProgressMeter nested_meter(part, nested);
  for (int i = 0; i < 3; ++i) nested_meter.advance(kStep);
  EXPECT_LT(recorder.calls.back().done, own + nested);
  nested_meter.finish();
  expect_progress_well_formed(recorder.calls, own + nested);
  // 0, the own step, two nested steps (the third stops below the nested total), the end.
  EXPECT_EQ(recorder.calls.size(), 5u);
  meter.finish();  // Already finished by the nested writer's end.
  EXPECT_EQ(recorder.calls.size(), 5u);
}

TEST(ProgressMeter, ALastPartWithNothingToWriteStillEndsOnce) {
  ProgressRecorder recorder;
  const ProgressCallback callback = recorder.callback();
  ProgressMeter meter(callback, 5);
  meter.advance(5);
  const ProgressCallback part = meter.last_part();
  part(0, 0);  // The nested writer's start...
  EXPECT_EQ(recorder.calls.back().done, 0u);
  part(0, 0);  // ...and its end.
  expect_progress_well_formed(recorder.calls, 5);
  EXPECT_EQ(recorder.calls.size(), 2u);
}

}  // namespace
}  // namespace onnxzip::detail
