#include "tools/bench/markdown_table.h"

#include <sstream>

#include "gtest/gtest.h"

namespace pipeline {
namespace bench {
namespace {

TEST(MarkdownTableTest, PrintsTheHeaderASeparatorAndTheRowsInTheOrderAdded) {
  MarkdownTable table({"measurement", "images/s"});
  table.Add({"second added first", "2.0"});
  table.Add({"then this", "1.0"});
  std::ostringstream out;
  table.Print(out);
  EXPECT_EQ(out.str(),
            "| measurement | images/s |\n"
            "| --- | --- |\n"
            "| second added first | 2.0 |\n"
            "| then this | 1.0 |\n"
            "\n");
}

TEST(MarkdownTableTest, AnEmptyTableIsItsHeader) {
  std::ostringstream out;
  MarkdownTable({"model"}).Print(out);
  EXPECT_EQ(out.str(), "| model |\n| --- |\n\n");
}

TEST(RatioTest, TwoDecimalsOrADashWhenTheBaseWasNotMeasured) {
  EXPECT_EQ(Ratio(3, 2), "1.50");
  EXPECT_EQ(Ratio(1, 3), "0.33");
  EXPECT_EQ(Ratio(5, 0), "-");
}

}  // namespace
}  // namespace bench
}  // namespace pipeline
