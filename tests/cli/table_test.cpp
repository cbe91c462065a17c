#include "tessel/cli/table.hpp"

#include <gtest/gtest.h>

namespace tessel::cli {
namespace {

TEST(Table, AlignsColumnsAndTrimsTrailingSpace) {
  Table t({"ID", "NAME", "STATE"});
  t.add_row({"j-1", "train-llama", "running"});
  t.add_row({"j-22", "x", ""});
  EXPECT_EQ(t.render(),
            "ID     NAME          STATE\n"
            "j-1    train-llama   running\n"
            "j-22   x\n");
}

TEST(Table, HeaderOnlyWhenEmpty) {
  Table t({"A", "B"});
  EXPECT_EQ(t.rows(), 0u);
  EXPECT_EQ(t.render(), "A   B\n");
}

TEST(Table, PadsShortRowsAndDropsExtraCells) {
  Table t({"A", "B"});
  t.add_row({"1"});
  t.add_row({"1", "2", "3"});
  EXPECT_EQ(t.render(), "A   B\n1\n1   2\n");
}

TEST(Table, CountsUtf8CodePoints) {
  Table t({"MAP", "X"});
  t.add_row({"0\u25cf 1\u25cb", "a"});  // "0● 1○": 5 code points.
  t.add_row({"abc", "b"});
  EXPECT_EQ(t.render(), "MAP     X\n0\u25cf 1\u25cb   a\nabc     b\n");
}

TEST(Table, ReplacesControlCharacters) {
  Table t({"NAME"});
  t.add_row({"evil\nname\x1b[31m"});
  EXPECT_EQ(t.render(), "NAME\nevil?name?[31m\n");
}

}  // namespace
}  // namespace tessel::cli
