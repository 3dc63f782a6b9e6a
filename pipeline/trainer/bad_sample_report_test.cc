#include "pipeline/trainer/bad_sample_report.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pipeline {
namespace {

using ::testing::ElementsAre;

SkippedSamples Skipped(const std::vector<int64_t>& indices) {
  SkippedSamples skipped;
  skipped.count = static_cast<int64_t>(indices.size());
  skipped.indices = indices;
  for (int64_t index : indices) {
    if (skipped.first.size() < SkippedSamples::kMaxListed) {
      skipped.first.push_back({index, "sample " + std::to_string(index) + ": f" +
                                          std::to_string(index) + ".jpg: empty file"});
    }
  }
  return skipped;
}

TEST(BadSampleReportTest, EpochLinesNameTheFilesAndTheSummaryCountsDistinctOnes) {
  BadSampleReport report;
  EXPECT_THAT(report.EndEpoch(0, 2, "train_data", 2, Skipped({7, 3}), 1),
              ElementsAre("epoch 1/2: train_data: skipped 2 samples that failed to load "
                          "(on_bad_sample: SKIP), each replaced by the next sample in the "
                          "epoch's order that loads:",
                          "  sample 7: f7.jpg: empty file", "  sample 3: f3.jpg: empty file"));
  report.EndEpoch(1, 2, "train_data", 2, Skipped({3, 7}), 1);
  EXPECT_TRUE(report.EndEpoch(1, 2, "validation_data", 0, Skipped({}), 1).empty());
  EXPECT_EQ(report.total(), 4);
  EXPECT_THAT(report.Summary(),
              ElementsAre("bad samples: train_data: skipped 4 times in 2 epochs, 2 different "
                          "samples; fix or remove these files:",
                          "  sample 7: f7.jpg: empty file", "  sample 3: f3.jpg: empty file",
                          "bad samples: validation_data: none skipped in 1 epoch"));
}

TEST(BadSampleReportTest, LongListsAreCut) {
  std::vector<int64_t> many;
  for (int64_t i = 0; i < 25; ++i) many.push_back(i);
  BadSampleReport report;
  std::vector<std::string> lines = report.EndEpoch(0, 1, "validation_data", 50, Skipped(many), 2);
  ASSERT_EQ(lines.size(), 1 + 20 + 2u);
  EXPECT_EQ(lines[0],
            "epoch 1/1: validation_data: skipped 50 samples that failed to load (on_bad_sample: "
            "SKIP), left out of the validation pass:");
  EXPECT_EQ(lines[21], "  ... and 5 more");
  EXPECT_EQ(lines[22],
            "  (the count is all 2 processes'; the files listed are this process's share)");
  std::vector<std::string> summary = report.Summary();
  ASSERT_EQ(summary.size(), 1 + 20 + 1u);
  EXPECT_EQ(summary[0],
            "bad samples: validation_data: skipped 50 times in 1 epoch by all 2 processes; 25 "
            "different samples in this process's share; fix or remove these files:");
  EXPECT_EQ(summary[21], "  ... and 5 more");
}

}  // namespace
}  // namespace pipeline
