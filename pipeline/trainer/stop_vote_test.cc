#include "pipeline/trainer/stop_vote.h"

#include <csignal>
#include <cstring>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/testing/hook_test_util.h"

namespace pipeline {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::HookTestRun;
using testing::ParseConfig;

constexpr char kVote[] = "the stop vote";
constexpr char kConfig[] = "checkpoint { checkpoint_on_signal: true }";

TEST(StopVoteHookTest, NoSignalNoStop) {
  HookTestRun run(ParseConfig(kConfig), /*rank=*/0, /*world_size=*/2);
  StopVoteHook hook;
  run.position().step = 1;
  HOOK_TEST_ASSERT_OK(hook.OnStepEnd(run.context(), StepReport{}));
  EXPECT_FALSE(run.context().stop_after_step);
  // Every rank votes after every step.
  EXPECT_THAT(run.communicator().calls(), ElementsAre(kVote));
}

TEST(StopVoteHookTest, OwnSignalStopsAfterThisStep) {
  HookTestRun run(ParseConfig(kConfig));
  StopVoteHook hook;
  run.position().step = 3;
  run.stop_signal() = SIGTERM;
  HOOK_TEST_ASSERT_OK(hook.OnStepEnd(run.context(), StepReport{}));
  EXPECT_TRUE(run.context().stop_after_step);
}

TEST(StopVoteHookTest, AnotherRanksVoteStopsThisOne) {
  HookTestRun run(ParseConfig(kConfig), /*rank=*/1, /*world_size=*/4);
  run.communicator().OtherRanksAdd(kVote, {1});
  StopVoteHook hook;
  run.position().step = 2;
  HOOK_TEST_ASSERT_OK(hook.OnStepEnd(run.context(), StepReport{}));
  EXPECT_TRUE(run.context().stop_after_step);
}

TEST(StopVoteHookTest, NoStopAfterTheLastStep) {
  HookTestRun run(ParseConfig(kConfig), /*rank=*/0, /*world_size=*/2);
  run.communicator().OtherRanksAdd(kVote, {1});
  run.stop_signal() = SIGINT;
  StopVoteHook hook;
  run.position().step = run.position().total_steps;
  HOOK_TEST_ASSERT_OK(hook.OnStepEnd(run.context(), StepReport{}));
  EXPECT_FALSE(run.context().stop_after_step);
  // One step before it still stops.
  run.position().step = run.position().total_steps - 1;
  HOOK_TEST_ASSERT_OK(hook.OnStepEnd(run.context(), StepReport{}));
  EXPECT_TRUE(run.context().stop_after_step);
}

TEST(StopVoteHookTest, AFailedVoteIsAnError) {
  HookTestRun run(ParseConfig(kConfig), /*rank=*/0, /*world_size=*/2);
  run.communicator().FailOn(kVote, absl::DeadlineExceededError("rank 1 did not come"));
  StopVoteHook hook;
  EXPECT_EQ(hook.OnStepEnd(run.context(), StepReport{}).code(),
            absl::StatusCode::kDeadlineExceeded);
}

TEST(StoppedBySignalTest, NamesTheSignalTheStepAndTheCheckpoint) {
  HookTestRun run(ParseConfig(kConfig));
  run.stop_signal() = SIGTERM;
  run.position().epoch = 1;
  run.position().step = 6;
  const absl::Status status = StoppedBySignal(run.context());
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(status.message(), "stopped by SIGTERM (" + std::string(strsignal(SIGTERM)) +
                                  ") after step 6 (epoch 2), checkpoint_step_6.pt written in " +
                                  run.dir().string() + "; continue with --resume=auto");
}

TEST(StoppedBySignalTest, SigintByName) {
  HookTestRun run(ParseConfig(kConfig));
  run.stop_signal() = SIGINT;
  EXPECT_THAT(std::string(StoppedBySignal(run.context()).message()),
              HasSubstr("stopped by SIGINT ("));
}

TEST(StoppedBySignalTest, AnotherRanksSignal) {
  HookTestRun run(ParseConfig(kConfig), /*rank=*/1, /*world_size=*/2);
  run.position().step = 2;
  const absl::Status status = StoppedBySignal(run.context());
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("stopped by a signal to another rank after step 2 (epoch 1), "
                        "checkpoint_step_2.pt written in "));
}

}  // namespace
}  // namespace pipeline
