#include "pipeline/trainer/nonfinite_guard.h"

#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/testing/hook_test_util.h"
#include "pipeline/trainer/grad_scaler.h"

namespace pipeline {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::HookTestRun;
using testing::ParseConfig;
using testing::TinyModel;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr char kVote[] = "the non-finite loss vote";

void SetGradient(torch::Tensor parameter, int64_t index, double value) {
  torch::NoGradGuard no_grad;
  parameter.grad().view({-1})[index].fill_(value);
}

bool AllGradientsZero(TinyModel& model) {
  for (const torch::Tensor& parameter : model.parameters()) {
    if (parameter.grad().defined() && parameter.grad().ne(0).any().item<bool>()) return false;
  }
  return true;
}

std::string Message(const absl::StatusOr<bool>& result) {
  return std::string(result.status().message());
}

// "applied", "skipped" or "error: <message>".
std::string Outcome(const absl::StatusOr<bool>& result) {
  if (!result.ok()) return "error: " + Message(result);
  return *result ? "applied" : "skipped";
}

TEST(FirstNonFiniteGradientTest, EmptyWhenEveryGradientIsFiniteOrAbsent) {
  HookTestRun run(ParseConfig(""));
  EXPECT_EQ(FirstNonFiniteGradient(run.model()), "");  // no backward yet
  run.Backward();
  EXPECT_EQ(FirstNonFiniteGradient(run.model()), "");
}

TEST(FirstNonFiniteGradientTest, NamesTheParameterAndNaNOrInf) {
  HookTestRun run(ParseConfig(""));
  run.Backward();
  SetGradient(run.model().fc->bias, 2, kInf);
  EXPECT_EQ(FirstNonFiniteGradient(run.model()), "the gradient of parameter fc.bias holds Inf");
  SetGradient(run.model().fc->bias, 2, -kInf);
  EXPECT_EQ(FirstNonFiniteGradient(run.model()), "the gradient of parameter fc.bias holds Inf");
  SetGradient(run.model().fc->bias, 0, kNaN);
  EXPECT_EQ(FirstNonFiniteGradient(run.model()), "the gradient of parameter fc.bias holds NaN");
  // The first parameter in state_dict order is named.
  SetGradient(run.model().fc->weight, 5, kInf);
  EXPECT_EQ(FirstNonFiniteGradient(run.model()), "the gradient of parameter fc.weight holds Inf");
}

TEST(FirstNonFiniteGradientTest, ASumThatOnlyOverflowedIsFinite) {
  HookTestRun run(ParseConfig(""));
  run.Backward();
  {
    torch::NoGradGuard no_grad;
    run.model().fc->weight.grad().fill_(3e38);  // finite floats; their float sum is not
  }
  EXPECT_EQ(FirstNonFiniteGradient(run.model()), "");
}

TEST(FirstNonFiniteGradientTest, ParametersWithoutGradientAreLeftOut) {
  HookTestRun run(ParseConfig(""));
  run.Backward();
  SetGradient(run.model().fc->weight, 0, kNaN);
  run.model().fc->weight.mutable_grad() = torch::Tensor();
  EXPECT_EQ(FirstNonFiniteGradient(run.model()), "");
}

TEST(NonFiniteGuardTest, AFiniteStepIsAppliedWithoutCollectivesInOneProcess) {
  HookTestRun run(ParseConfig(""));
  run.Backward();
  NonFiniteGuard guard;
  absl::StatusOr<bool> applied = guard.ApplyStep(run.context(), std::nullopt);
  ASSERT_TRUE(applied.ok()) << applied.status();
  EXPECT_TRUE(*applied);
  EXPECT_EQ(run.context().skipped_steps, 0);
  EXPECT_TRUE(run.communicator().calls().empty());
  EXPECT_EQ(run.log(), "");
}

TEST(NonFiniteGuardTest, StopNamesTheStepAndTheWayOut) {
  HookTestRun run(ParseConfig("trainer { on_nonfinite: STOP }"));
  run.position().epoch = 1;
  run.position().step = 6;
  run.Backward();
  SetGradient(run.model().fc->bias, 1, kNaN);
  NonFiniteGuard guard;
  const absl::StatusOr<bool> result = guard.ApplyStep(run.context(), std::nullopt);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Message(result),
              HasSubstr("step 7 (epoch 2): the gradient of parameter fc.bias holds NaN; stopped "
                        "before the weights were updated"));
  EXPECT_THAT(Message(result), HasSubstr("trainer.on_nonfinite: SKIP_STEP"));
  EXPECT_EQ(run.context().skipped_steps, 0);
}

TEST(NonFiniteGuardTest, StopOnANonFiniteLossInOneProcess) {
  HookTestRun run(ParseConfig(""));  // STOP is the default
  run.Backward();
  NonFiniteGuard guard;
  const absl::StatusOr<bool> result = guard.ApplyStep(run.context(), kInf);
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(Message(result), HasSubstr("step 1 (epoch 1): the training loss is inf;"));
  EXPECT_THAT(Message(result), HasSubstr("on_nonfinite: SKIP_STEP"));
}

TEST(NonFiniteGuardTest, SkipStepZeroesTheGradientsAndCounts) {
  HookTestRun run(ParseConfig("trainer { on_nonfinite: SKIP_STEP }"));
  run.position().step = 3;
  run.Backward();
  SetGradient(run.model().fc->weight, 0, kInf);
  const torch::Tensor weight_before = run.model().fc->weight.detach().clone();
  NonFiniteGuard guard;
  const absl::StatusOr<bool> applied = guard.ApplyStep(run.context(), std::nullopt);
  ASSERT_TRUE(applied.ok()) << applied.status();
  EXPECT_FALSE(*applied);
  EXPECT_TRUE(AllGradientsZero(run.model()));
  EXPECT_TRUE(torch::equal(run.model().fc->weight, weight_before));
  EXPECT_EQ(run.context().skipped_steps, 1);
  EXPECT_EQ(run.log(),
            "step 4 (epoch 1): the gradient of parameter fc.weight holds Inf; skipped this "
            "optimizer step (1 skipped so far, 1 in a row)\n");
}

TEST(NonFiniteGuardTest, MoreThanMaxConsecutiveSkippedStepsStops) {
  HookTestRun run(
      ParseConfig("trainer { on_nonfinite: SKIP_STEP max_consecutive_skipped_steps: 2 }"));
  NonFiniteGuard guard;
  auto step = [&](bool finite) {
    run.Backward();
    const absl::StatusOr<bool> result =
        guard.ApplyStep(run.context(), finite ? std::nullopt : std::optional<double>(kNaN));
    ++run.position().step;
    return result;
  };
  // Two in a row, then an applied step starts the count again.
  EXPECT_EQ(Outcome(step(false)), "skipped");
  EXPECT_EQ(Outcome(step(false)), "skipped");
  EXPECT_EQ(Outcome(step(true)), "applied");
  EXPECT_EQ(Outcome(step(false)), "skipped");
  EXPECT_EQ(Outcome(step(false)), "skipped");
  const absl::StatusOr<bool> third = step(false);
  ASSERT_FALSE(third.ok());
  EXPECT_THAT(Message(third),
              HasSubstr("step 6 (epoch 1): the training loss is nan; 3 steps in a row were "
                        "skipped for non-finite values (more than "
                        "trainer.max_consecutive_skipped_steps: 2), 5 in all; stopped"));
  EXPECT_EQ(run.context().skipped_steps, 5);
}

TEST(NonFiniteGuardTest, AnotherRanksNonFiniteLossSkipsTheStepOnEveryRank) {
  HookTestRun run(ParseConfig("trainer { on_nonfinite: SKIP_STEP }"), /*rank=*/0,
                  /*world_size=*/2);
  run.communicator().OtherRanksAdd(kVote, {0, 1});
  run.Backward();  // this rank's gradients are finite
  NonFiniteGuard guard;
  const absl::StatusOr<bool> applied = guard.ApplyStep(run.context(), std::nullopt);
  ASSERT_TRUE(applied.ok()) << applied.status();
  EXPECT_FALSE(*applied);
  EXPECT_THAT(run.communicator().calls(), ElementsAre(kVote));
  EXPECT_THAT(run.log(), HasSubstr("the training loss of rank 1 is not finite; skipped"));
  EXPECT_TRUE(AllGradientsZero(run.model()));
  EXPECT_EQ(run.context().skipped_steps, 1);
}

TEST(NonFiniteGuardTest, AnotherRanksNonFiniteLossStopsEveryRankUnderStop) {
  HookTestRun run(ParseConfig(""), /*rank=*/1, /*world_size=*/2);
  run.communicator().OtherRanksAdd(kVote, {1, 0});
  run.Backward();
  NonFiniteGuard guard;
  const absl::StatusOr<bool> result = guard.ApplyStep(run.context(), std::nullopt);
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(Message(result), HasSubstr("the training loss of rank 0 is not finite"));
}

TEST(NonFiniteGuardTest, NamesEveryRankWhoseLossIsNotFinite) {
  HookTestRun run(ParseConfig(""), /*rank=*/1, /*world_size=*/3);
  run.communicator().OtherRanksAdd(kVote, {1, 0, 1});
  run.Backward();
  NonFiniteGuard guard;
  const absl::StatusOr<bool> result = guard.ApplyStep(run.context(), kNaN);
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(Message(result), HasSubstr("the training loss of ranks 0, 1, 2 is not finite"));
}

TEST(NonFiniteGuardTest, EveryRankFiniteAppliesTheStep) {
  HookTestRun run(ParseConfig(""), /*rank=*/0, /*world_size=*/2);
  run.communicator().OtherRanksAdd(kVote, {0, 0});
  run.Backward();
  NonFiniteGuard guard;
  EXPECT_EQ(Outcome(guard.ApplyStep(run.context(), std::nullopt)), "applied");
  EXPECT_THAT(run.communicator().calls(), ElementsAre(kVote));
}

TEST(NonFiniteGuardTest, UnderLossScalingAnAppliedStepIsUnscaled) {
  HookTestRun run(ParseConfig("trainer { grad_scaler { init_scale: 1024 } }"));
  GradScaler& scaler = run.UseScaler(run.config().trainer().grad_scaler());
  run.Backward();
  const torch::Tensor scaled = run.model().fc->weight.grad().clone();
  NonFiniteGuard guard;
  EXPECT_EQ(Outcome(guard.ApplyStep(run.context(), std::nullopt)), "applied");
  EXPECT_TRUE(torch::allclose(run.model().fc->weight.grad(), scaled / 1024));
  EXPECT_EQ(scaler.scale(), 1024);
}

TEST(NonFiniteGuardTest, UnderLossScalingAnOverflowBacksOffInsteadOfStopping) {
  HookTestRun run(ParseConfig("trainer { on_nonfinite: STOP grad_scaler { init_scale: 1024 } }"));
  GradScaler& scaler = run.UseScaler(run.config().trainer().grad_scaler());
  run.Backward();
  SetGradient(run.model().fc->bias, 0, kInf);
  NonFiniteGuard guard;
  const absl::StatusOr<bool> applied = guard.ApplyStep(run.context(), std::nullopt);
  ASSERT_TRUE(applied.ok()) << applied.status();
  EXPECT_FALSE(*applied);
  EXPECT_EQ(scaler.scale(), 512);
  EXPECT_EQ(run.context().skipped_steps, 1);
  EXPECT_TRUE(AllGradientsZero(run.model()));
  EXPECT_THAT(run.log(), HasSubstr("holds Inf at loss scale 1024; skipped this optimizer step, "
                                   "loss scale now 512 (1 skipped so far)"));
}

TEST(NonFiniteGuardTest, UnderLossScalingATinyScaleMeansDivergence) {
  HookTestRun run(ParseConfig("trainer { grad_scaler { init_scale: 1e-7 } }"));
  run.UseScaler(run.config().trainer().grad_scaler());  // at the tiny scale
  run.Backward();
  SetGradient(run.model().fc->bias, 0, kNaN);
  NonFiniteGuard guard;
  const absl::StatusOr<bool> result = guard.ApplyStep(run.context(), std::nullopt);
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(Message(result), HasSubstr("holds NaN even at loss scale 1e-07; the training has "
                                         "diverged"));
}

}  // namespace
}  // namespace pipeline
