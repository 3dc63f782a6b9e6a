#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pipeline/interfaces/schedule.h"
#include "pipeline/testing/plugin_test_util.h"
#include "pipeline/testing/schedule_fixture.h"

namespace pipeline {
namespace {

TEST(StepScheduleTest, DecaysEveryStepEpochs) {
  auto schedule = testing::CreatePlugin<LearningRateSchedule>(
      R"pb(name: "step"
           options {
             [type.googleapis.com/pipeline.StepScheduleOptions] { step_epochs: 2 gamma: 0.5 }
           })pb");
  ASSERT_TRUE(schedule.ok()) << schedule.status();
  // 10 steps per epoch: epochs 0-1 -> 1, 2-3 -> 0.5, 4 -> 0.25.
  EXPECT_DOUBLE_EQ((*schedule)->Factor(19, 100, 10), 1.0);
  EXPECT_DOUBLE_EQ((*schedule)->Factor(20, 100, 10), 0.5);
  EXPECT_DOUBLE_EQ((*schedule)->Factor(45, 100, 10), 0.25);
}

TEST(StepScheduleTest, MilestonesOverrideStepEpochs) {
  auto schedule = testing::CreatePlugin<LearningRateSchedule>(
      R"pb(name: "step"
           options {
             [type.googleapis.com/pipeline.StepScheduleOptions] { milestones: [ 1, 3 ] gamma: 0.1 }
           })pb");
  ASSERT_TRUE(schedule.ok()) << schedule.status();
  EXPECT_DOUBLE_EQ((*schedule)->Factor(9, 100, 10), 1.0);
  EXPECT_DOUBLE_EQ((*schedule)->Factor(10, 100, 10), 0.1);
  EXPECT_NEAR((*schedule)->Factor(35, 100, 10), 0.01, 1e-12);
}

TEST(StepScheduleTest, RejectsDecreasingMilestones) {
  auto schedule = testing::CreatePlugin<LearningRateSchedule>(
      R"pb(name: "step"
           options { [type.googleapis.com/pipeline.StepScheduleOptions] { milestones: [ 3, 1 ] } })pb");
  EXPECT_EQ(schedule.status().message(), "options: milestones: must be increasing epochs");
}

// With milestones, the schedule is MultiStepLR stepped once per epoch.
TEST(StepScheduleTest, MilestonesMatchTorchMultiStepLR) {
  struct Case {
    const char* options;
    const char* fixture;
  };
  for (const Case& c : {Case{"milestones: [1, 3]", "torch_step_milestones_1_3_gamma_0.1.txt"},
                        Case{"milestones: [2] gamma: 0.5", "torch_step_milestones_2_gamma_0.5.txt"}}) {
    auto schedule = testing::CreatePlugin<LearningRateSchedule>(absl::StrCat(
        "name: \"step\" options { [type.googleapis.com/pipeline.StepScheduleOptions] { ",
        c.options, " } }"));
    ASSERT_TRUE(schedule.ok()) << schedule.status();
    const std::vector<double> expected = testing::ReadLearningRates(
        absl::StrCat("plugins/schedules/step/testdata/", c.fixture));
    ASSERT_EQ(expected.size(), testing::kFixtureTotalSteps) << c.fixture;
    for (int64_t step = 0; step < testing::kFixtureTotalSteps; ++step) {
      const double lr = (*schedule)->Factor(step, testing::kFixtureTotalSteps,
                                            testing::kFixtureStepsPerEpoch) *
                        testing::kFixtureBaseLr;
      EXPECT_NEAR(lr, expected[step], 1e-12 * std::abs(expected[step]))
          << c.fixture << ", step " << step;
    }
  }
}

}  // namespace
}  // namespace pipeline
