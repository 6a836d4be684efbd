#include "message_text.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace onnxzip::detail {
namespace {

using namespace std::string_literals;

TEST(Utf8SequenceLength, MeasuresValidSequencesAndRefusesInvalidOnes) {
  EXPECT_EQ(utf8_sequence_length("a", 0), 1u);
  EXPECT_EQ(utf8_sequence_length("\xc3\xa9", 0), 2u);          // é
  EXPECT_EQ(utf8_sequence_length("\xe2\x82\xac", 0), 3u);      // €
  EXPECT_EQ(utf8_sequence_length("\xf0\x9f\x98\x80", 0), 4u);  // U+1F600
  EXPECT_EQ(utf8_sequence_length("x\xc3\xa9", 1), 2u);
  EXPECT_EQ(utf8_sequence_length("\xc0\x80", 0), 0u);          // Overlong NUL.
  EXPECT_EQ(utf8_sequence_length("\xe0\x80\x80", 0), 0u);      // Overlong.
  EXPECT_EQ(utf8_sequence_length("\xed\xa0\x80", 0), 0u);      // Surrogate U+D800.
  EXPECT_EQ(utf8_sequence_length("\xf4\x90\x80\x80", 0), 0u);  // Past U+10FFFF.
  EXPECT_EQ(utf8_sequence_length("\xc3", 0), 0u);              // Cut short.
  EXPECT_EQ(utf8_sequence_length("\x80", 0), 0u);              // A continuation byte.
}

TEST(Quote, QuotesAndEscapesWhatWouldBreakTheLine) {
  EXPECT_EQ(quote("w"), "'w'");
  EXPECT_EQ(quote(""), "''");
  EXPECT_EQ(quote("caf\xc3\xa9"), "'caf\xc3\xa9'");
  EXPECT_EQ(quote("a\nb"), "'a\\x0ab'");
  EXPECT_EQ(quote("it's"), "'it\\x27s'");
  EXPECT_EQ(quote("a\\b"), "'a\\x5cb'");
  EXPECT_EQ(quote("nul\0x"s), "'nul\\x00x'");
  EXPECT_EQ(quote("bad\xff"), "'bad\\xff'");
  EXPECT_EQ(quote("\x7f"), "'\\x7f'");
}

TEST(Quote, CutsLongTextAt200Bytes) {
  const std::string long_name(250, 'n');
  EXPECT_EQ(quote(long_name), "'" + std::string(200, 'n') + "...'");
  EXPECT_EQ(quote(std::string(200, 'n')), "'" + std::string(200, 'n') + "'");
}

TEST(Hex, PadsToTheDigitsAskedAndNeverCutsTheValue) {
  EXPECT_EQ(hex(0, 4), "0x0000");
  EXPECT_EQ(hex(0x8, 4), "0x0008");
  EXPECT_EQ(hex(0x81a40000u, 8), "0x81a40000");
  EXPECT_EQ(hex(0xABCDu, 2), "0xabcd");  // Lower case; wider than asked rather than wrong.
  EXPECT_EQ(hex(0, 0), "0x0");
  EXPECT_EQ(hex(UINT64_MAX, 8), "0xffffffffffffffff");
  EXPECT_EQ(hex(1, 40), "0x0000000000000001");  // At most the 16 digits of 64 bits.
}

TEST(AsciiClasses, KnowOnlyAsciiLettersAndDigits) {
  for (int c = 0; c < 256; ++c) {
    const char ch = static_cast<char>(c);
    SCOPED_TRACE(c);
    EXPECT_EQ(is_ascii_letter(ch), (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'));
    EXPECT_EQ(is_ascii_digit(ch), c >= '0' && c <= '9');
    EXPECT_EQ(ascii_lower(ch), c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : ch);
  }
}

TEST(AsciiLower, LowersAsciiLettersOnly) {
  EXPECT_EQ(ascii_lower(std::string_view("Weight_01.BIN")), "weight_01.bin");
  EXPECT_EQ(ascii_lower(std::string_view("")), "");
  // UTF-8 and other bytes are left alone: É stays É.
  EXPECT_EQ(ascii_lower(std::string_view("\xc3\x89X\0Y"s)), "\xc3\x89x\0y"s);
}

}  // namespace
}  // namespace onnxzip::detail
