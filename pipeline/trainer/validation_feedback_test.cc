#include "pipeline/trainer/validation_feedback.h"

#include <cmath>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/testing/hook_test_util.h"

namespace pipeline {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::HookTestRun;
using testing::ParseConfig;

EpochReport Validated(int64_t epoch, double val_acc, double val_loss, bool validated = true) {
  EpochReport report;
  report.epoch = epoch;
  report.validated = validated;
  report.figures = {{"val_loss", val_loss, true, false}, {"val_acc", val_acc, true, true}};
  return report;
}

// Feeds val_acc values, one epoch each; returns the 1-based epoch after
// which the hook stopped the run, or 0.
int64_t StopEpoch(HookTestRun& run, EarlyStoppingHook& hook, const std::vector<double>& values) {
  for (size_t i = 0; i < values.size(); ++i) {
    EpochReport epoch = Validated(i + 1, values[i], 1.0 - values[i]);
    EXPECT_TRUE(hook.OnEpochEnd(run.context(), epoch).ok());
    if (run.context().stop_after_epoch) return epoch.epoch;
  }
  return 0;
}

TEST(EarlyStoppingHookTest, StopsAfterPatienceValidationsWithoutImprovement) {
  HookTestRun run(ParseConfig("trainer { early_stopping { patience: 2 } }"));
  EarlyStoppingHook hook(run.config());
  HOOK_TEST_ASSERT_OK(hook.OnRunStart(run.context()));
  EXPECT_EQ(StopEpoch(run, hook, {0.5, 0.6, 0.6, 0.65, 0.64, 0.6, 0.9}), 6);
  EXPECT_THAT(run.log(), HasSubstr("early stopping: val_acc has not improved on its best, "
                                   "0.65, by more than 0 in 2 validations in a row; the run "
                                   "ends after epoch 6"));
}

TEST(EarlyStoppingHookTest, MinDeltaAndALossFigure) {
  HookTestRun run(ParseConfig(
      "trainer { early_stopping { patience: 1 min_delta: 0.05 metric: \"val_loss\" } }"));
  EarlyStoppingHook hook(run.config());
  // val_loss = 1 - acc: 0.5, 0.4 (better by 0.1), 0.37 (by 0.03: not enough).
  EXPECT_EQ(StopEpoch(run, hook, {0.5, 0.6, 0.63}), 3);
}

// A NaN figure (a diverged run) is never an improvement, as for
// checkpoint_best.pt.
TEST(EarlyStoppingHookTest, ANanFigureCountsAsNoImprovement) {
  HookTestRun run(ParseConfig("trainer { early_stopping { patience: 2 } }"));
  EarlyStoppingHook hook(run.config());
  EXPECT_EQ(StopEpoch(run, hook, {std::nan(""), 0.5, std::nan(""), std::nan("")}), 4);
}

TEST(EarlyStoppingHookTest, EpochsWithoutValidationDoNotCount) {
  HookTestRun run(ParseConfig("trainer { early_stopping { patience: 1 } }"));
  EarlyStoppingHook hook(run.config());
  for (int64_t epoch = 1; epoch <= 3; ++epoch) {
    EpochReport report = Validated(epoch, 0.5, 0.5, /*validated=*/epoch == 1);
    HOOK_TEST_ASSERT_OK(hook.OnEpochEnd(run.context(), report));
  }
  EXPECT_FALSE(run.context().stop_after_epoch);
}

// The count lives in saved_state, so a resumed run stops where an
// uninterrupted one would.
TEST(EarlyStoppingHookTest, AResumedRunContinuesTheCount) {
  HookTestRun first(ParseConfig("trainer { early_stopping { patience: 3 } }"));
  EarlyStoppingHook before(first.config());
  EXPECT_EQ(StopEpoch(first, before, {0.5, 0.7, 0.6}), 0);
  EXPECT_THAT(first.context().saved_state.at("early_stopping"), ElementsAre(0.7, 1));
  HookTestRun resumed(ParseConfig("trainer { early_stopping { patience: 3 } }"));
  resumed.context().saved_state = first.context().saved_state;
  EarlyStoppingHook after(resumed.config());
  HOOK_TEST_ASSERT_OK(after.OnRunStart(resumed.context()));
  EpochReport fourth = Validated(4, 0.6, 0.4), fifth = Validated(5, 0.69, 0.31);
  HOOK_TEST_ASSERT_OK(after.OnEpochEnd(resumed.context(), fourth));
  EXPECT_FALSE(resumed.context().stop_after_epoch);
  HOOK_TEST_ASSERT_OK(after.OnEpochEnd(resumed.context(), fifth));
  EXPECT_TRUE(resumed.context().stop_after_epoch);
}

// Records what it was told; its state is the values seen.
class RecordingSchedule : public LearningRateSchedule {
 public:
  double Factor(int64_t, int64_t, int64_t) const override { return 1.0; }
  std::string MonitoredFigure() const override { return "val_loss"; }
  void Observe(double value, bool higher_is_better) override {
    seen.push_back(value);
    directions.push_back(higher_is_better);
  }
  std::vector<double> State() const override { return seen; }
  absl::Status Restore(const std::vector<double>& state) override {
    seen = state;
    return absl::OkStatus();
  }
  std::vector<double> seen;
  std::vector<bool> directions;
};

TEST(ScheduleFeedbackHookTest, TellsTheScheduleEachValidatedValueAndKeepsItsState) {
  HookTestRun run(ParseConfig(""));
  RecordingSchedule schedule;
  ScheduleFeedbackHook hook(schedule);
  run.context().saved_state["schedule"] = {0.9};
  HOOK_TEST_ASSERT_OK(hook.OnRunStart(run.context()));
  EpochReport validated = Validated(1, 0.6, 0.4), carried = Validated(2, 0.6, 0.4, false);
  HOOK_TEST_ASSERT_OK(hook.OnEpochEnd(run.context(), validated));
  HOOK_TEST_ASSERT_OK(hook.OnEpochEnd(run.context(), carried));
  EXPECT_THAT(schedule.seen, ElementsAre(0.9, 0.4));
  EXPECT_THAT(schedule.directions, ElementsAre(false));
  EXPECT_THAT(run.context().saved_state.at("schedule"), ElementsAre(0.9, 0.4));
}

}  // namespace
}  // namespace pipeline
