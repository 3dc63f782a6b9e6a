#include "pipeline/reporting/step_profile.h"

#include "gtest/gtest.h"

namespace pipeline {
namespace {

TEST(StepProfileTest, AveragesThePhasesOverTheProfiledSteps) {
  StepProfile profile(2);
  EXPECT_TRUE(profile.active());
  EXPECT_FALSE(profile.Record(0.001, 0.006, 0.003, 32));
  EXPECT_TRUE(profile.Record(0.003, 0.010, 0.001, 32));
  EXPECT_FALSE(profile.active());
  // Steps after the last profiled one change nothing.
  EXPECT_FALSE(profile.Record(1, 1, 1, 32));
  EXPECT_EQ(profile.Report(3),
            "profile rank 3, steps 1-2 (32 images each): data wait 2.0 ms/step (16.7%), "
            "forward+backward 8.0 ms/step (66.7%), optimizer step 2.0 ms/step (16.7%); "
            "2667 images/s");
}

TEST(StepProfileTest, CommunicationWaitIsItsOwnPhase) {
  StepProfile profile(1);
  // 10 ms of forward+backward, 4 of them blocked on the all-reduce.
  EXPECT_TRUE(profile.Record(0.0, 0.010, 0.010, 20, 0.004));
  EXPECT_EQ(profile.Report(1),
            "profile rank 1, steps 1-1 (20 images each): data wait 0.0 ms/step (0.0%), "
            "forward+backward 6.0 ms/step (30.0%), communication wait 4.0 ms/step (20.0%), "
            "optimizer step 10.0 ms/step (50.0%); 1000 images/s");
}

TEST(StepProfileTest, ZeroStepsProfilesNothing) {
  StepProfile profile(0);
  EXPECT_FALSE(profile.active());
  EXPECT_FALSE(profile.Record(1, 1, 1, 1));
}

}  // namespace
}  // namespace pipeline
