#include "tools/bench/child_output.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/testing/temp_path.h"

namespace pipeline {
namespace bench {
namespace {

using ::testing::Optional;

TEST(JsonNumberTest, TakesTheKeyFromTheLastLineWithTheMarker) {
  const std::string output =
      "{\"summary\": true, \"images_per_sec\": 12.5}\n"
      "step 3 {\"images_per_sec\": 99}\n"
      "{\"summary\": true, \"loss\": 0.3, \"images_per_sec\":14.25, \"epoch\": 2}\n";
  EXPECT_THAT(JsonNumber(output, "\"summary\"", "images_per_sec"), Optional(14.25));
  EXPECT_THAT(JsonNumber(output, "\"summary\"", "loss"), Optional(0.3));
  // Read up to the closing brace as well as a comma.
  EXPECT_THAT(JsonNumber(output, "step 3", "images_per_sec"), Optional(99.0));
}

TEST(JsonNumberTest, NothingWhenNoMarkedLineHoldsTheKeyAsANumber) {
  const std::string output = "{\"images_per_sec\": 5}\n{\"summary\": 1, \"rate\": \"fast\"}\n";
  EXPECT_EQ(JsonNumber(output, "\"summary\"", "images_per_sec"), std::nullopt);
  EXPECT_EQ(JsonNumber(output, "\"summary\"", "rate"), std::nullopt);
  EXPECT_EQ(JsonNumber("", "\"summary\"", "images_per_sec"), std::nullopt);
  // A key that only ends like the one asked for is another key.
  EXPECT_EQ(JsonNumber("{\"summary\": 1, \"x_rate\": 3}", "\"summary\"", "rate"), std::nullopt);
}

TEST(TailTest, KeepsTheLast2000Characters) {
  EXPECT_EQ(Tail("short"), "short");
  const std::string long_output = std::string(500, 'a') + std::string(2000, 'b');
  EXPECT_EQ(Tail(long_output), std::string(2000, 'b'));
}

TEST(LastLineTest, TheLastNonBlankLineWithoutItsWhitespace) {
  EXPECT_EQ(LastLine("warming up\n 15.25 \n"), "15.25");
  EXPECT_EQ(LastLine("1.13.1"), "1.13.1");
  EXPECT_EQ(LastLine("a\nb\n\n"), "b");
  EXPECT_EQ(LastLine(""), "");
}

TEST(RunProcessTest, StdoutAndStderrTheEnvironmentAndTheExitCodeComeBack) {
  const std::string log = testing::TempPath("child_output_test.txt");
  const ProcessResult result = RunProcess(
      {"/bin/sh", "-c", "echo out; echo \"$BENCH_TEST_VALUE\" >&2; exit 3"},
      {"BENCH_TEST_VALUE=from the parent"}, log);
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_EQ(result.output, "out\nfrom the parent\n");
  EXPECT_GT(result.peak_rss_mb, 0);
}

TEST(RunProcessTest, AProgramThatCannotStartFailsWithItsReason) {
  const ProcessResult result =
      RunProcess({"/nonexistent/program"}, {}, testing::TempPath("child_output_missing.txt"));
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.output, "");
}

}  // namespace
}  // namespace bench
}  // namespace pipeline
