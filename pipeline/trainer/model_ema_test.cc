#include "pipeline/trainer/model_ema.h"

#include <cmath>

#include "gtest/gtest.h"
#include "pipeline/testing/hook_test_util.h"
#include "torch/nn/modules/batchnorm.h"
#include "torch/nn/modules/linear.h"

namespace pipeline {
namespace {

using testing::HookTestRun;
using testing::ParseConfig;

// A layer and a BatchNorm: float parameters and buffers, and an integer
// buffer (num_batches_tracked).
class NormedModel : public Model {
 public:
  NormedModel() {
    fc = register_module("fc", torch::nn::Linear(2, 2));
    bn = register_module("bn", torch::nn::BatchNorm1d(2));
  }
  torch::Tensor forward(const torch::Tensor& x) override { return bn(fc(x)); }
  torch::nn::Linear fc{nullptr};
  torch::nn::BatchNorm1d bn{nullptr};
};

EmaConfig Ema(double decay, bool warmup = false, int every_steps = 1) {
  EmaConfig config;
  config.set_decay(decay);
  config.set_warmup(warmup);
  config.set_every_steps(every_steps);
  return config;
}

const torch::Tensor& ValueOf(const ModelEma& ema, const std::string& name) {
  for (const auto& [key, tensor] : ema.values()) {
    if (key == name) return tensor;
  }
  ADD_FAILURE() << "no " << name;
  static const torch::Tensor none;
  return none;
}

// timm's ModelEmaV3.get_decay(step): 0 at the first step, then the decay,
// or under warm-up 1 - (1 + (step - 1) / gamma)^-power, at most the decay.
TEST(ModelEmaTest, DecayIsTimmsGetDecay) {
  EXPECT_EQ(ModelEma::Decay(Ema(0.99), 1), 0.0);
  EXPECT_EQ(ModelEma::Decay(Ema(0.99), 2), 0.99);
  EXPECT_NEAR(ModelEma::Decay(Ema(0.99, true), 2), 1 - std::pow(2.0, -2.0 / 3), 1e-15);
  EXPECT_NEAR(ModelEma::Decay(Ema(0.99, true), 11), 1 - std::pow(11.0, -2.0 / 3), 1e-15);
  EXPECT_EQ(ModelEma::Decay(Ema(0.99, true), 1000000), 0.99);
}

TEST(ModelEmaTest, AveragesFloatTensorsAndCopiesIntegerOnes) {
  NormedModel model;
  ModelEma ema(Ema(0.75), model);
  torch::NoGradGuard no_grad;
  const torch::Tensor start = model.fc->weight.clone();
  model.fc->weight.add_(1.0);
  model.bn->running_mean.fill_(2.0);
  model.bn->num_batches_tracked.fill_(5);
  ema.Update(model, 1);  // the first update copies (decay 0)
  EXPECT_TRUE(ValueOf(ema, "fc.weight").equal(model.fc->weight));
  model.fc->weight.add_(1.0);
  model.bn->running_mean.fill_(6.0);
  model.bn->num_batches_tracked.fill_(9);
  const torch::Tensor weights = model.fc->weight.clone();
  ema.Update(model, 2);
  EXPECT_TRUE(ValueOf(ema, "fc.weight").allclose(start + 1.0 + 0.25, 1e-6, 1e-6));
  EXPECT_TRUE(ValueOf(ema, "bn.running_mean").allclose(torch::full({2}, 0.75 * 2 + 0.25 * 6)));
  EXPECT_EQ(ValueOf(ema, "bn.num_batches_tracked").item<int64_t>(), 9);
  // The model's own weights are untouched by the average.
  EXPECT_TRUE(model.fc->weight.equal(weights));
}

TEST(ModelEmaTest, UpdatesEveryNSteps) {
  NormedModel model;
  ModelEma ema(Ema(0.5, false, 2), model);
  const torch::Tensor start = model.fc->weight.clone();
  {
    torch::NoGradGuard no_grad;
    model.fc->weight.add_(1.0);
  }
  ema.Update(model, 1);
  EXPECT_TRUE(ValueOf(ema, "fc.weight").equal(start));
  ema.Update(model, 2);
  EXPECT_TRUE(ValueOf(ema, "fc.weight").allclose(start + 0.5));
}

TEST(ModelEmaTest, SwappingTwiceRestoresBoth) {
  NormedModel model;
  ModelEma ema(Ema(0.5), model);
  const torch::Tensor start = model.fc->weight.clone();
  {
    torch::NoGradGuard no_grad;
    model.fc->weight.add_(3.0);
  }
  ema.SwapWith(model);
  EXPECT_TRUE(model.fc->weight.equal(start));
  EXPECT_TRUE(ValueOf(ema, "fc.weight").equal(start + 3.0));
  ema.SwapWith(model);
  EXPECT_TRUE(model.fc->weight.equal(start + 3.0));
  EXPECT_TRUE(ValueOf(ema, "fc.weight").equal(start));
}

TEST(ModelEmaTest, RestoreTakesAMatchingAverageAndRefusesAnother) {
  NormedModel model, other;
  ModelEma ema(Ema(0.5), model);
  ModelEma saved(Ema(0.5), other);
  ASSERT_TRUE(ema.Restore(saved.values()).ok());
  EXPECT_TRUE(ValueOf(ema, "fc.weight").equal(other.fc->weight));
  NamedTensors wrong = saved.values();
  wrong[0].second = torch::zeros({3, 3});
  const absl::Status status = ema.Restore(wrong);
  EXPECT_EQ(status.message(),
            "its EMA weight fc.weight (3x3) does not match the model's fc.weight (2x2)");
  EXPECT_FALSE(ema.Restore({}).ok());
}

// The hook updates after applied steps only, at the loop's step count.
TEST(EmaHookTest, UpdatesAfterAppliedStepsOnly) {
  HookTestRun run(ParseConfig("trainer { ema { decay: 0.5 } }"));
  ModelEma ema(run.config().trainer().ema(), run.model());
  EmaHook hook(ema, nullptr);
  HOOK_TEST_ASSERT_OK(hook.OnRunStart(run.context()));
  const torch::Tensor start = run.model().fc->weight.clone();
  {
    torch::NoGradGuard no_grad;
    run.model().fc->weight.add_(1.0);
  }
  run.position().step = 2;
  StepReport skipped;
  skipped.applied = false;
  HOOK_TEST_ASSERT_OK(hook.OnStepEnd(run.context(), skipped));
  EXPECT_TRUE(ValueOf(ema, "fc.weight").equal(start));
  StepReport applied;
  applied.applied = true;
  HOOK_TEST_ASSERT_OK(hook.OnStepEnd(run.context(), applied));
  EXPECT_TRUE(ValueOf(ema, "fc.weight").allclose(start + 0.5));
}

TEST(EmaHookTest, ARunResumesTheCheckpointsAverage) {
  HookTestRun run(ParseConfig("trainer { ema { decay: 0.5 } }"));
  ModelEma ema(run.config().trainer().ema(), run.model());
  NamedTensors saved = ema.values();
  for (auto& [name, tensor] : saved) tensor = torch::full_like(tensor, 7.0);
  EmaHook hook(ema, &saved);
  HOOK_TEST_ASSERT_OK(hook.OnRunStart(run.context()));
  EXPECT_EQ(ValueOf(ema, "fc.bias")[0].item<float>(), 7.0f);
  saved.pop_back();
  const absl::Status refused = EmaHook(ema, &saved).OnRunStart(run.context());
  EXPECT_EQ(refused.message(),
            "the checkpoint resumed from: its EMA weights hold 1 tensors and the model has 2");
}

}  // namespace
}  // namespace pipeline
