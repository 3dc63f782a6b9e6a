#include "gtest/gtest.h"
#include "pipeline/interfaces/schedule.h"
#include "pipeline/testing/plugin_test_util.h"

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

}  // namespace
}  // namespace pipeline
