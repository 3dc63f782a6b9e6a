#include "gtest/gtest.h"
#include "pipeline/interfaces/schedule.h"
#include "pipeline/testing/plugin_test_util.h"

namespace pipeline {
namespace {

TEST(ConstantScheduleTest, FactorIsAlwaysOne) {
  auto schedule = testing::CreatePlugin<LearningRateSchedule>(R"pb(name: "constant")pb");
  ASSERT_TRUE(schedule.ok()) << schedule.status();
  for (int64_t step : {0, 5, 99}) EXPECT_EQ((*schedule)->Factor(step, 100, 10), 1.0);
}

}  // namespace
}  // namespace pipeline
