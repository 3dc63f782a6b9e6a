#include "pipeline/trainer/checkpoint_hook.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/checkpoint/checkpoint.h"
#include "pipeline/testing/hook_test_util.h"

namespace pipeline {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::HookTestRun;
using testing::ParseConfig;

constexpr char kSums[] = "sum of the epoch's training figures";

// Tells the hook that steps `from`..`to` (1-based, all in the current
// epoch) have ended.
void EndSteps(CheckpointHook& hook, HookTestRun& run, int64_t from, int64_t to) {
  for (int64_t step = from; step <= to; ++step) {
    run.position().step = run.position().epoch * run.position().steps_per_epoch + step;
    run.position().epoch_step = step;
    const absl::Status status = hook.OnStepEnd(run.context(), StepReport{});
    ASSERT_TRUE(status.ok()) << "step " << step << ": " << status;
  }
}

// The rolling and best checkpoints in `dir`, by name, sorted.
std::vector<std::string> CheckpointFiles(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() == ".pt") names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

EpochReport Validated(int64_t epoch, double value, const std::string& name = "val_acc",
                      bool higher_is_better = true) {
  EpochReport report;
  report.epoch = epoch;
  report.validated = true;
  report.figures = {{"train_loss", 1.0, true, false}, {name, value, true, higher_is_better}};
  return report;
}

LoadedCheckpoint Read(const fs::path& path) {
  absl::StatusOr<LoadedCheckpoint> loaded = ReadCheckpoint(path.string());
  EXPECT_TRUE(loaded.ok()) << loaded.status();
  return loaded.ok() ? *std::move(loaded) : LoadedCheckpoint{};
}

TEST(CheckpointHookTest, EveryStepsWritesStepCheckpointsInsideEpochsOnly) {
  HookTestRun run(ParseConfig("checkpoint { every_steps: 2 every_epochs: 0 keep_last: 0 }"));
  CheckpointHook hook(run.context(), std::nullopt);
  // 4 steps per epoch: step 2 is inside the epoch, step 4 is its end (the
  // epoch's own checkpoint covers it).
  EndSteps(hook, run, 1, 4);
  EXPECT_THAT(CheckpointFiles(run.dir()), ElementsAre("checkpoint_step_2.pt"));
  run.position().epoch = 1;
  EndSteps(hook, run, 1, 4);
  // Step 8 is the run's last.
  EXPECT_THAT(CheckpointFiles(run.dir()),
              ElementsAre("checkpoint_step_2.pt", "checkpoint_step_6.pt"));
  EXPECT_THAT(run.log(), HasSubstr("checkpoint: " + (run.dir() / "checkpoint_step_6.pt").string()));

  const LoadedCheckpoint loaded = Read(run.dir() / "checkpoint_step_6.pt");
  EXPECT_EQ(loaded.contents.epoch, 1);
  EXPECT_EQ(loaded.contents.step, 6);
  EXPECT_EQ(loaded.contents.epoch_step, 2);
  EXPECT_THAT(loaded.contents.class_names, ElementsAre("a", "b", "c"));
  EXPECT_TRUE(std::isnan(loaded.contents.best_value));
  EXPECT_TRUE(loaded.contents.rng_state.defined());
}

TEST(CheckpointHookTest, StepCheckpointHoldsTheSumsOfEveryRank) {
  HookTestRun run(ParseConfig("checkpoint { every_steps: 1 } metrics { name: \"accuracy\" }"),
                  /*rank=*/0, /*world_size=*/2);
  run.context().epoch_sums = {1.5, 4, 3, 4};
  run.communicator().OtherRanksAdd(kSums, {2.5, 4, 1, 4});
  CheckpointHook hook(run.context(), std::nullopt);
  EndSteps(hook, run, 1, 1);
  EXPECT_THAT(run.communicator().calls(), ElementsAre(kSums));
  const LoadedCheckpoint loaded = Read(run.dir() / "checkpoint_step_1.pt");
  EXPECT_THAT(loaded.contents.epoch_sums, ElementsAre(4.0, 8.0, 4.0, 8.0));
  // The run's own sums stay this rank's.
  EXPECT_THAT(run.context().epoch_sums, ElementsAre(1.5, 4.0, 3.0, 4.0));
}

TEST(CheckpointHookTest, OtherRanksAddTheirSumsButWriteNothing) {
  HookTestRun run(ParseConfig("checkpoint { every_steps: 1 }"), /*rank=*/1, /*world_size=*/2);
  CheckpointHook hook(run.context(), std::nullopt);
  EndSteps(hook, run, 1, 2);
  EXPECT_THAT(run.communicator().calls(), ElementsAre(kSums, kSums));
  EXPECT_TRUE(CheckpointFiles(run.dir()).empty());
  EpochReport epoch = Validated(1, 0.5);
  HOOK_TEST_ASSERT_OK(hook.OnEpochEnd(run.context(), epoch));
  EXPECT_TRUE(CheckpointFiles(run.dir()).empty());
}

TEST(CheckpointHookTest, NoStepCheckpointWithoutEveryStepsOrAStop) {
  HookTestRun run(ParseConfig("checkpoint { every_steps: 0 }"));
  CheckpointHook hook(run.context(), std::nullopt);
  EndSteps(hook, run, 1, 3);
  EXPECT_TRUE(CheckpointFiles(run.dir()).empty());
  EXPECT_TRUE(run.communicator().calls().empty());
}

TEST(CheckpointHookTest, StopAfterStepWritesThatStepsCheckpoint) {
  HookTestRun run(ParseConfig("checkpoint { every_steps: 0 checkpoint_on_signal: true }"));
  CheckpointHook hook(run.context(), std::nullopt);
  EndSteps(hook, run, 1, 2);
  run.context().stop_after_step = true;
  EndSteps(hook, run, 3, 3);
  EXPECT_THAT(CheckpointFiles(run.dir()), ElementsAre("checkpoint_step_3.pt"));
  EXPECT_EQ(Read(run.dir() / "checkpoint_step_3.pt").contents.epoch_step, 3);
}

TEST(CheckpointHookTest, KeepLastRemovesTheOldestRollingCheckpointsAndTheirChecksums) {
  HookTestRun run(ParseConfig("checkpoint { every_steps: 1 every_epochs: 1 keep_last: 2 }"));
  run.position().steps_per_epoch = 8;
  run.position().total_steps = 16;
  CheckpointHook hook(run.context(), std::nullopt);
  EndSteps(hook, run, 1, 3);
  EXPECT_THAT(CheckpointFiles(run.dir()),
              ElementsAre("checkpoint_step_2.pt", "checkpoint_step_3.pt"));
  EXPECT_FALSE(fs::exists(ChecksumPathOf((run.dir() / "checkpoint_step_1.pt").string())));
  EXPECT_TRUE(fs::exists(ChecksumPathOf((run.dir() / "checkpoint_step_3.pt").string())));
  // Epoch checkpoints count toward keep_last; checkpoint_best.pt does not.
  EpochReport epoch = Validated(1, 0.5);
  HOOK_TEST_ASSERT_OK(hook.OnEpochEnd(run.context(), epoch));
  EXPECT_THAT(CheckpointFiles(run.dir()),
              ElementsAre("checkpoint_best.pt", "checkpoint_epoch_1.pt", "checkpoint_step_3.pt"));
  run.position().epoch = 1;
  EndSteps(hook, run, 1, 2);
  EXPECT_THAT(CheckpointFiles(run.dir()),
              ElementsAre("checkpoint_best.pt", "checkpoint_step_10.pt", "checkpoint_step_9.pt"));
}

TEST(CheckpointHookTest, EveryEpochsAndTheLastEpoch) {
  HookTestRun run(ParseConfig("checkpoint { every_epochs: 2 keep_last: 0 keep_best: false }"));
  run.position().epochs = 3;
  CheckpointHook hook(run.context(), std::nullopt);
  for (int64_t e = 1; e <= 3; ++e) {
    EpochReport epoch = Validated(e, 0.1 * e);
    HOOK_TEST_ASSERT_OK(hook.OnEpochEnd(run.context(), epoch));
  }
  EXPECT_THAT(CheckpointFiles(run.dir()),
              ElementsAre("checkpoint_epoch_2.pt", "checkpoint_epoch_3.pt"));
  const LoadedCheckpoint last = Read(run.dir() / "checkpoint_epoch_3.pt");
  EXPECT_EQ(last.contents.epoch, 3);
  EXPECT_EQ(last.contents.epoch_step, 0);
  // No running sums at an epoch's end (the file holds zeros).
  for (double sum : last.contents.epoch_sums) EXPECT_EQ(sum, 0.0);
}

TEST(CheckpointHookTest, BestOnlyWhenTheBestMetricImproves) {
  HookTestRun run(ParseConfig("checkpoint { every_epochs: 1 keep_last: 0 }"));
  run.position().epochs = 5;
  CheckpointHook hook(run.context(), std::nullopt);
  const fs::path best = run.dir() / "checkpoint_best.pt";
  auto end_epoch = [&](EpochReport epoch) {
    const absl::Status status = hook.OnEpochEnd(run.context(), epoch);
    EXPECT_TRUE(status.ok()) << status;
  };
  end_epoch(Validated(1, 0.5));
  ASSERT_TRUE(fs::exists(best));
  EXPECT_EQ(Read(best).contents.epoch, 1);
  EXPECT_DOUBLE_EQ(Read(best).contents.best_value, 0.5);
  end_epoch(Validated(2, 0.4));
  EXPECT_EQ(Read(best).contents.epoch, 1);
  // The epoch checkpoints carry the best so far.
  EXPECT_DOUBLE_EQ(Read(run.dir() / "checkpoint_epoch_2.pt").contents.best_value, 0.5);
  // Carried over from an earlier validation, not validated now: no best.
  EpochReport carried = Validated(3, 0.9);
  carried.validated = false;
  end_epoch(carried);
  EXPECT_EQ(Read(best).contents.epoch, 1);
  end_epoch(Validated(4, std::numeric_limits<double>::quiet_NaN()));
  EXPECT_EQ(Read(best).contents.epoch, 1);
  end_epoch(Validated(5, 0.7));
  EXPECT_EQ(Read(best).contents.epoch, 5);
  EXPECT_DOUBLE_EQ(Read(best).contents.best_value, 0.7);
}

TEST(CheckpointHookTest, LowerIsBetterForValLoss) {
  HookTestRun run(
      ParseConfig("checkpoint { every_epochs: 1 keep_last: 0 best_metric: \"val_loss\" }"));
  run.position().epochs = 4;
  CheckpointHook hook(run.context(), std::nullopt);
  const fs::path best = run.dir() / "checkpoint_best.pt";
  const double losses[] = {0.8, 0.9, 0.6, 0.61};
  const int64_t best_epoch_after[] = {1, 1, 3, 3};
  for (int64_t e = 1; e <= 4; ++e) {
    EpochReport epoch = Validated(e, losses[e - 1], "val_loss", /*higher_is_better=*/false);
    HOOK_TEST_ASSERT_OK(hook.OnEpochEnd(run.context(), epoch));
    EXPECT_EQ(Read(best).contents.epoch, best_epoch_after[e - 1]) << "after epoch " << e;
  }
  EXPECT_DOUBLE_EQ(Read(best).contents.best_value, 0.6);
}

TEST(CheckpointHookTest, NoBestWithoutTheBestMetricOrKeepBest) {
  HookTestRun run(ParseConfig("checkpoint { every_epochs: 1 keep_last: 0 keep_best: false }"));
  CheckpointHook hook(run.context(), std::nullopt);
  EpochReport epoch = Validated(1, 0.9);
  HOOK_TEST_ASSERT_OK(hook.OnEpochEnd(run.context(), epoch));
  EXPECT_FALSE(fs::exists(run.dir() / "checkpoint_best.pt"));

  HookTestRun other(ParseConfig("checkpoint { every_epochs: 1 best_metric: \"val_acc_top5\" }"));
  CheckpointHook other_hook(other.context(), std::nullopt);
  EpochReport no_such = Validated(1, 0.9);
  HOOK_TEST_ASSERT_OK(other_hook.OnEpochEnd(other.context(), no_such));
  EXPECT_FALSE(fs::exists(other.dir() / "checkpoint_best.pt"));
}

TEST(CheckpointHookTest, AResumedRunKeepsItsBestAndRollsItsOldCheckpoints) {
  HookTestRun run(ParseConfig("checkpoint { every_steps: 1 every_epochs: 1 keep_last: 2 }"));
  run.position().steps_per_epoch = 8;
  run.position().total_steps = 16;
  {
    CheckpointHook first(run.context(), std::nullopt);
    EndSteps(first, run, 1, 2);
    EpochReport epoch = Validated(1, 0.8);
    run.position().epoch_step = 8;
    HOOK_TEST_ASSERT_OK(first.OnEpochEnd(run.context(), epoch));
  }
  ASSERT_THAT(CheckpointFiles(run.dir()),
              ElementsAre("checkpoint_best.pt", "checkpoint_epoch_1.pt", "checkpoint_step_2.pt"));
  // Written in step order, seconds apart in a real run (not within one
  // tick of the file system's clock, as here).
  const auto now = fs::file_time_type::clock::now();
  fs::last_write_time(run.dir() / "checkpoint_step_2.pt", now - std::chrono::seconds(20));
  fs::last_write_time(run.dir() / "checkpoint_epoch_1.pt", now - std::chrono::seconds(10));
  const std::string from = (run.dir() / "checkpoint_epoch_1.pt").string();
  const std::optional<FoundCheckpoint> resume = FoundCheckpoint{from, Read(from)};
  ASSERT_DOUBLE_EQ(resume->checkpoint.contents.best_value, 0.8);
  CheckpointHook resumed(run.context(), resume);
  run.position().epoch = 1;
  EndSteps(resumed, run, 1, 1);
  // step_2 of the first start was the oldest of the two kept.
  EXPECT_THAT(CheckpointFiles(run.dir()),
              ElementsAre("checkpoint_best.pt", "checkpoint_epoch_1.pt", "checkpoint_step_9.pt"));
  EpochReport worse = Validated(2, 0.7);
  HOOK_TEST_ASSERT_OK(resumed.OnEpochEnd(run.context(), worse));
  EXPECT_EQ(Read(run.dir() / "checkpoint_best.pt").contents.epoch, 1);
}

TEST(CheckpointHookTest, AFailedWriteStopsTheRunUnderStop) {
  HookTestRun run(ParseConfig("checkpoint { every_steps: 1 }"));
  CheckpointHook hook(run.context(), std::nullopt);
  EndSteps(hook, run, 1, 1);
  // A folder where the checkpoint should go: the rename onto it fails.
  fs::create_directories(run.dir() / "checkpoint_step_2.pt" / "blocker");
  run.position().step = run.position().epoch_step = 2;
  const absl::Status status = hook.OnStepEnd(run.context(), StepReport{});
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(std::string(status.message()), HasSubstr("checkpoint_step_2.pt"));
  // The last checkpoint written is where the run continues from.
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("--resume=auto continues from " +
                        (run.dir() / "checkpoint_step_1.pt").string()));
}

TEST(CheckpointHookTest, AFailedWriteUnderContinueKeepsTheOlderCheckpoints) {
  HookTestRun run(ParseConfig(
      "checkpoint { every_steps: 1 keep_last: 1 on_write_error: CONTINUE "
      "checkpoint_on_signal: true }"));
  CheckpointHook hook(run.context(), std::nullopt);
  EndSteps(hook, run, 1, 1);
  fs::create_directories(run.dir() / "checkpoint_step_2.pt" / "blocker");
  EndSteps(hook, run, 2, 2);
  EXPECT_TRUE(fs::exists(run.dir() / "checkpoint_step_1.pt"));
  EXPECT_THAT(run.log(), HasSubstr("warning: "));
  EXPECT_THAT(run.log(), HasSubstr("checkpoint_step_2.pt"));
  EXPECT_THAT(run.log(), ::testing::Not(HasSubstr(
                             "checkpoint: " + (run.dir() / "checkpoint_step_2.pt").string())));
  // The checkpoint of a run that stops after it must be written, even
  // under CONTINUE.
  fs::create_directories(run.dir() / "checkpoint_step_3.pt" / "blocker");
  run.context().stop_after_step = true;
  run.position().step = run.position().epoch_step = 3;
  EXPECT_FALSE(hook.OnStepEnd(run.context(), StepReport{}).ok());
  EXPECT_TRUE(fs::exists(run.dir() / "checkpoint_step_1.pt"));
}

TEST(CheckpointHookTest, AFailedAllReduceIsTheStepsError) {
  HookTestRun run(ParseConfig("checkpoint { every_steps: 1 }"), 0, 2);
  run.communicator().FailOn(kSums, absl::UnavailableError("rank 1 did not come"));
  CheckpointHook hook(run.context(), std::nullopt);
  run.position().step = run.position().epoch_step = 1;
  const absl::Status status = hook.OnStepEnd(run.context(), StepReport{});
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(CheckpointFiles(run.dir()).empty());
}

TEST(RandomStateTest, RestoringTheStateRepeatsTheNumbers) {
  torch::manual_seed(3);
  const torch::Tensor state = RandomState();
  const torch::Tensor first = torch::rand({5});
  const torch::Tensor second = torch::rand({5});
  EXPECT_FALSE(torch::equal(first, second));
  SetRandomState(state);
  EXPECT_TRUE(torch::equal(torch::rand({5}), first));
}

TEST(CheckpointHookTest, CheckpointHoldsTheRandomStateAtItsStep) {
  HookTestRun run(ParseConfig("checkpoint { every_steps: 1 }"));
  CheckpointHook hook(run.context(), std::nullopt);
  torch::manual_seed(11);
  const torch::Tensor state = RandomState();
  EndSteps(hook, run, 1, 1);
  const LoadedCheckpoint loaded = Read(run.dir() / "checkpoint_step_1.pt");
  ASSERT_TRUE(loaded.contents.rng_state.defined());
  EXPECT_TRUE(torch::equal(loaded.contents.rng_state, state));
}

}  // namespace
}  // namespace pipeline
