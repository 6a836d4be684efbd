#include "onnxzip/text.h"

#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

namespace onnxzip {
namespace {

const std::string kLong = "a name longer than any inline buffer: /encoder/layer.0/attn";

TEST(Text, OwnedValuesCopyTheirSource) {
  for (const std::string& value : {std::string(), std::string("short"), kLong}) {
    std::string source = value;
    const Text text(source);
    EXPECT_FALSE(text.borrowed());
    EXPECT_EQ(text, value);
    EXPECT_EQ(text.size(), value.size());
    EXPECT_EQ(text.empty(), value.empty());
    if (!source.empty()) source[0] = '#';
    EXPECT_EQ(text, value);  // Unaffected by a change of the source.
  }
  EXPECT_EQ(Text("with\0nul", 8).size(), 8u);
  EXPECT_EQ(Text("c string"), std::string_view("c string"));
}

TEST(Text, BorrowedValuesPointAtTheirSourceAndSoDoTheirCopies) {
  std::string source = kLong;
  const Text text = Text::borrow(source);
  EXPECT_TRUE(text.borrowed());
  EXPECT_EQ(text.data(), source.data());
  const Text copy = text;
  EXPECT_TRUE(copy.borrowed());
  EXPECT_EQ(copy.data(), source.data());
  source[0] = 'A';
  EXPECT_EQ(text[0], 'A');  // A view, not a copy.

  Text owned = text;
  owned.own();
  EXPECT_FALSE(owned.borrowed());
  EXPECT_NE(owned.data(), source.data());
  source[0] = 'B';
  EXPECT_EQ(owned[0], 'A');
  EXPECT_EQ(Text::borrow(std::string_view()).size(), 0u);
}

TEST(Text, MovesLeaveTheSourceEmptyAndKeepTheMode) {
  for (const bool borrow : {false, true}) {
    for (const std::string& value : {std::string("short"), kLong}) {
      Text text = borrow ? Text::borrow(value) : Text(value);
      const char* const data = text.data();
      Text moved = std::move(text);
      EXPECT_EQ(moved, value);
      EXPECT_EQ(moved.borrowed(), borrow);
      if (borrow || value.size() > 15) {
        EXPECT_EQ(moved.data(), data);  // Nothing copied.
      }
      EXPECT_TRUE(text.empty());  // NOLINT(bugprone-use-after-move): specified state.
      Text assigned("old value that is long enough to be on the heap");
      assigned = std::move(moved);
      EXPECT_EQ(assigned, value);
      const Text& same = assigned;
      assigned = same;  // Self-assignment keeps the value.
      EXPECT_EQ(assigned, value);
    }
  }
}

TEST(Text, MutationMakesABorrowedValueOwned) {
  const std::string source = "layer";
  Text text = Text::borrow(source);
  text += ".0";
  text += '/';
  EXPECT_FALSE(text.borrowed());
  EXPECT_EQ(text, "layer.0/");
  EXPECT_EQ(source, "layer");
  text.append(kLong);
  EXPECT_EQ(text, "layer.0/" + kLong);
  text = std::string_view("x");
  EXPECT_EQ(text, "x");
  text.clear();
  EXPECT_TRUE(text.empty());
}

TEST(Text, WorksWhereStringsDo) {
  const Text text(kLong);
  const std::string as_string = text;  // A copy.
  EXPECT_EQ(as_string, kLong);
  EXPECT_EQ(text.str(), kLong);
  std::map<std::string, int> by_name;
  by_name[text] = 1;
  EXPECT_EQ(by_name.at(kLong), 1);
  std::unordered_set<Text> set = {Text("a"), Text::borrow(kLong)};
  EXPECT_TRUE(set.contains(Text(kLong)));
  EXPECT_EQ(Text("12345") == std::string("12345"), true);
  EXPECT_EQ(std::string("12345") == Text("12345"), true);
  EXPECT_EQ(std::string_view("x") != Text("y"), true);
  EXPECT_LT(Text("a"), Text("b"));
  EXPECT_LT(Text("a"), "b");
  EXPECT_EQ("pre/" + Text("x") + "/post", "pre/x/post");
  EXPECT_EQ(std::stoull(std::string(Text("42"))), 42u);
  std::ostringstream out;
  out << Text::borrow("printed");
  EXPECT_EQ(out.str(), "printed");
  std::vector<Text> names(3, Text("same"));
  EXPECT_EQ(names[2], "same");
}

}  // namespace
}  // namespace onnxzip
