#include <cmath>

#include "gtest/gtest.h"
#include "pipeline/interfaces/schedule.h"
#include "pipeline/testing/plugin_test_util.h"

namespace pipeline {
namespace {

TEST(CosineScheduleTest, AnnealsFromOneToMinFactor) {
  auto schedule = testing::CreatePlugin<LearningRateSchedule>(
      R"pb(name: "cosine"
           options { [type.googleapis.com/pipeline.CosineScheduleOptions] { min_factor: 0.1 } })pb");
  ASSERT_TRUE(schedule.ok()) << schedule.status();
  EXPECT_DOUBLE_EQ((*schedule)->Factor(0, 100, 10), 1.0);
  EXPECT_NEAR((*schedule)->Factor(50, 100, 10), 0.55, 1e-12);
  EXPECT_NEAR((*schedule)->Factor(25, 100, 10), 0.1 + 0.9 * 0.5 * (1 + std::cos(M_PI / 4)), 1e-12);
  EXPECT_NEAR((*schedule)->Factor(100, 100, 10), 0.1, 1e-12);
}

TEST(CosineScheduleTest, RejectsMinFactorAboveOne) {
  auto schedule = testing::CreatePlugin<LearningRateSchedule>(
      R"pb(name: "cosine"
           options { [type.googleapis.com/pipeline.CosineScheduleOptions] { min_factor: 2 } })pb");
  EXPECT_EQ(schedule.status().message(), "options: min_factor: 2; must be in [0, 1]");
}

}  // namespace
}  // namespace pipeline
