#include "onnxzip/bytes.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "onnxzip/error.h"

namespace onnxzip {
namespace {

constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();

TEST(Fits, AcceptsRangesInsideAndAtTheEdge) {
  EXPECT_TRUE(fits(0, 0, 0));
  EXPECT_TRUE(fits(10, 0, 10));
  EXPECT_TRUE(fits(0, 10, 10));
  EXPECT_TRUE(fits(4, 6, 10));
}

TEST(Fits, RejectsRangesPastTheEndWithoutOverflowing) {
  EXPECT_FALSE(fits(11, 0, 10));
  EXPECT_FALSE(fits(5, 6, 10));
  EXPECT_FALSE(fits(kMax, 2, 10));
  EXPECT_FALSE(fits(2, kMax, 10));
  EXPECT_FALSE(fits(kMax, kMax, kMax));
}

TEST(CheckedSubspan, ReturnsTheSliceOrThrowsCorruptNamingTheRange) {
  const std::vector<std::uint8_t> bytes = {1, 2, 3, 4, 5};
  const auto slice = checked_subspan(bytes, 1, 3, "thing");
  ASSERT_EQ(slice.size(), 3u);
  EXPECT_EQ(slice.data(), bytes.data() + 1);
  try {
    checked_subspan(bytes, 4, 2, "central directory");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCorrupt);
    EXPECT_NE(std::string(e.what()).find("central directory"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("offset 4"), std::string::npos);
  }
}

TEST(CheckedArithmetic, DetectsOverflow) {
  EXPECT_EQ(checked_add(1, 2, "x"), 3u);
  EXPECT_EQ(checked_mul(1u << 20, 1u << 20, "x"), std::uint64_t{1} << 40);
  EXPECT_THROW(checked_add(kMax, 1, "x"), Error);
  EXPECT_THROW(checked_mul(std::uint64_t{1} << 32, std::uint64_t{1} << 32, "x"), Error);
}

TEST(AlignUp, RoundsToPowersOfTwo) {
  EXPECT_EQ(align_up(0, 64), 0u);
  EXPECT_EQ(align_up(1, 64), 64u);
  EXPECT_EQ(align_up(64, 64), 64u);
  EXPECT_EQ(align_up(65, 4096), 4096u);
  EXPECT_TRUE(is_power_of_two(65536));
  EXPECT_FALSE(is_power_of_two(0));
  EXPECT_FALSE(is_power_of_two(96));
}

TEST(OwnedBytes, IsAlignedAndCopiesDeeply) {
  for (std::size_t alignment : {64u, 4096u}) {
    const std::vector<std::uint8_t> source = {9, 8, 7};
    OwnedBytes a = OwnedBytes::copy_of(source, alignment);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a.data()) % alignment, 0u);
    OwnedBytes b = a;
    EXPECT_NE(a.data(), b.data());
    EXPECT_TRUE(equal_bytes(a.span(), b.span()));
    b.data()[0] = 1;
    EXPECT_EQ(a.data()[0], 9);
  }
  EXPECT_THROW(OwnedBytes(8, 3), Error);
}

TEST(TensorBytes, OwnedCopiesAreIndependent) {
  const std::vector<std::uint8_t> source = {1, 2, 3};
  TensorBytes a = TensorBytes::copy_of(source);
  EXPECT_TRUE(a.is_owned());
  EXPECT_NE(a.data(), source.data());
  TensorBytes b = a;
  EXPECT_TRUE(b.is_owned());
  EXPECT_NE(a.data(), b.data());
  EXPECT_EQ(a, b);
}

TEST(TensorBytes, BorrowedCopiesShareMemoryAndToken) {
  auto backing = std::make_shared<std::vector<std::uint8_t>>(std::vector<std::uint8_t>{4, 5, 6});
  std::weak_ptr<std::vector<std::uint8_t>> watch = backing;
  TensorBytes a = TensorBytes::borrowed(*backing, backing);
  backing.reset();
  EXPECT_FALSE(watch.expired()) << "the token must keep the memory alive";
  TensorBytes b = a;
  EXPECT_TRUE(b.is_borrowed());
  EXPECT_EQ(a.data(), b.data());
  a.clear();
  EXPECT_FALSE(watch.expired());
  EXPECT_EQ(b.view()[2], 6);
  b.make_owned();
  EXPECT_TRUE(b.is_owned());
  EXPECT_TRUE(watch.expired()) << "an owned copy must release the token";
  EXPECT_EQ(b.view()[2], 6);
}

TEST(TensorBytes, MovePreservesModeAndPointer) {
  const std::vector<std::uint8_t> source = {1, 2, 3, 4};
  TensorBytes owned = TensorBytes::copy_of(source);
  const auto* owned_data = owned.data();
  TensorBytes moved = std::move(owned);
  EXPECT_EQ(moved.data(), owned_data);
  EXPECT_TRUE(moved.is_owned());
  TensorBytes borrowed = TensorBytes::borrowed(source, kNoOwner);
  TensorBytes moved_borrowed = std::move(borrowed);
  EXPECT_TRUE(moved_borrowed.is_borrowed());
  EXPECT_EQ(moved_borrowed.data(), source.data());
  EXPECT_EQ(moved_borrowed.owner(), nullptr);
}

}  // namespace
}  // namespace onnxzip
