#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/optimizers/common/multi_tensor_adam.h"
#include "plugins/optimizers/common/multi_tensor_sgd.h"
#include "plugins/optimizers/common/multi_tensor_step.h"
#include "torch/torch.h"

namespace pipeline {
namespace {

using Groups = std::vector<torch::optim::OptimizerParamGroup>;
using MakeOptimizer =
    std::function<std::unique_ptr<torch::optim::Optimizer>(std::vector<torch::Tensor>, bool)>;

// A weight, a bias, a channels-last conv kernel and a parameter that gets
// its first gradient only at step 3 (so its step count lags the others').
std::vector<torch::Tensor> MakeParameters() {
  torch::manual_seed(7);
  return {torch::randn({5, 4}), torch::randn({4}),
          torch::randn({3, 2, 3, 3}).contiguous(at::MemoryFormat::ChannelsLast),
          torch::randn({6})};
}

std::vector<torch::Tensor> Copies(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> copies;
  for (const auto& p : params) copies.push_back(p.detach().clone().set_requires_grad(true));
  return copies;
}

// The first two parameters in one group, the rest in a second with half the
// learning rate (the optimizer's own options type carries it).
template <typename Options>
Groups TwoGroups(const std::vector<torch::Tensor>& params, const Options& defaults) {
  auto slower = std::make_unique<Options>(defaults);
  slower->lr(defaults.lr() * 0.5);
  Groups groups;
  groups.emplace_back(std::vector<torch::Tensor>{params[0], params[1]},
                      std::make_unique<Options>(defaults));
  groups.emplace_back(std::vector<torch::Tensor>{params[2], params[3]}, std::move(slower));
  return groups;
}

void SetGradients(const std::vector<torch::Tensor>& params, int step) {
  torch::manual_seed(100 + step);
  for (size_t i = 0; i < params.size(); ++i) {
    torch::Tensor grad = torch::randn(params[i].sizes()).contiguous(params[i].suggest_memory_format());
    params[i].mutable_grad() = (i == 3 && step < 3) ? torch::Tensor() : grad;
  }
}

// `steps` steps of the loop and of the multi-tensor optimizer over copies of
// the same parameters with the same gradients; every parameter compared.
void ExpectSameSteps(const MakeOptimizer& make, int steps, bool bitwise) {
  const std::vector<torch::Tensor> start = MakeParameters();
  std::vector<torch::Tensor> loop_params = Copies(start), multi_params = Copies(start);
  auto loop = make(loop_params, /*multi_tensor=*/false);
  auto multi = make(multi_params, /*multi_tensor=*/true);
  for (int step = 0; step < steps; ++step) {
    SetGradients(loop_params, step);
    SetGradients(multi_params, step);
    loop->step();
    multi->step();
    for (size_t i = 0; i < start.size(); ++i) {
      SCOPED_TRACE("step " + std::to_string(step) + ", parameter " + std::to_string(i));
      if (bitwise) {
        EXPECT_TRUE(torch::equal(loop_params[i], multi_params[i]));
      } else {
        EXPECT_TRUE(torch::allclose(loop_params[i], multi_params[i], 1e-5, 1e-6));
      }
      EXPECT_FALSE(torch::equal(multi_params[i], start[i]) && step >= 3);
    }
  }
}

MakeOptimizer Sgd(torch::optim::SGDOptions options, OptimizerImplementation::Value multi) {
  return [=](std::vector<torch::Tensor> params, bool multi_tensor) {
    return std::make_unique<MultiTensorSgd>(
        TwoGroups(params, options), options,
        multi_tensor ? multi : OptimizerImplementation::FOR_LOOP);
  };
}

template <typename Optimizer, typename Options>
MakeOptimizer AdamFamily(Options options, OptimizerImplementation::Value multi) {
  return [=](std::vector<torch::Tensor> params, bool multi_tensor) {
    return std::make_unique<Optimizer>(TwoGroups(params, options), options,
                                       multi_tensor ? multi : OptimizerImplementation::FOR_LOOP);
  };
}

TEST(MultiTensorSgdTest, ForeachIsBitwiseTheLoopOnTheCpu) {
  const auto foreach = OptimizerImplementation::FOREACH;
  ExpectSameSteps(Sgd(torch::optim::SGDOptions(0.1).momentum(0.9).weight_decay(1e-3), foreach), 5,
                  true);
  ExpectSameSteps(
      Sgd(torch::optim::SGDOptions(0.1).momentum(0.9).nesterov(true).weight_decay(5e-4), foreach),
      5, true);
  ExpectSameSteps(Sgd(torch::optim::SGDOptions(0.05).momentum(0.5).dampening(0.1), foreach), 5,
                  true);
  ExpectSameSteps(Sgd(torch::optim::SGDOptions(0.1), foreach), 5, true);
}

TEST(MultiTensorAdamTest, ForeachIsBitwiseTheLoopOnTheCpu) {
  const auto foreach = OptimizerImplementation::FOREACH;
  for (bool amsgrad : {false, true}) {
    SCOPED_TRACE(amsgrad ? "amsgrad" : "adam");
    ExpectSameSteps(AdamFamily<MultiTensorAdam>(
                        torch::optim::AdamOptions(1e-2).weight_decay(0.01).amsgrad(amsgrad), foreach),
                    5, true);
    ExpectSameSteps(
        AdamFamily<MultiTensorAdamW>(
            torch::optim::AdamWOptions(1e-2).betas({0.8, 0.99}).weight_decay(0.05).amsgrad(amsgrad),
            foreach),
        5, true);
  }
}

TEST(MultiTensorAdamTest, FusedEqualsTheLoopWithinRounding) {
  if (!HasFusedAdam()) GTEST_SKIP() << "this LibTorch has no fused Adam kernels (2.4 and later)";
  const auto fused = OptimizerImplementation::FUSED;
  for (bool amsgrad : {false, true}) {
    SCOPED_TRACE(amsgrad ? "amsgrad" : "adam");
    ExpectSameSteps(AdamFamily<MultiTensorAdam>(
                        torch::optim::AdamOptions(1e-2).weight_decay(0.01).amsgrad(amsgrad), fused),
                    5, false);
    ExpectSameSteps(AdamFamily<MultiTensorAdamW>(
                        torch::optim::AdamWOptions(1e-2).weight_decay(0.05).amsgrad(amsgrad), fused),
                    5, false);
  }
}

// A fused optimizer restored from saved state counts on from the saved
// step, as the loop does: its device-side step counts follow the state.
TEST(MultiTensorAdamTest, FusedResumesFromSavedState) {
  if (!HasFusedAdam()) GTEST_SKIP() << "this LibTorch has no fused Adam kernels (2.4 and later)";
  const auto options = torch::optim::AdamWOptions(1e-2).weight_decay(0.05);
  const std::vector<torch::Tensor> start = MakeParameters();
  std::vector<torch::Tensor> through = Copies(start);
  MultiTensorAdamW uninterrupted(TwoGroups(through, options), options,
                                 OptimizerImplementation::FUSED);
  std::vector<torch::Tensor> resumed = Copies(start);
  auto first = std::make_unique<MultiTensorAdamW>(TwoGroups(resumed, options), options,
                                                  OptimizerImplementation::FUSED);
  for (int step = 0; step < 6; ++step) {
    SetGradients(through, step);
    uninterrupted.step();
    if (step == 3) {
      torch::serialize::OutputArchive archive;
      first->save(archive);
      std::ostringstream bytes;
      archive.save_to(bytes);
      first = std::make_unique<MultiTensorAdamW>(TwoGroups(resumed, options), options,
                                                 OptimizerImplementation::FUSED);
      torch::serialize::InputArchive loaded;
      std::istringstream in(bytes.str());
      loaded.load_from(in);
      first->load(loaded);
    }
    SetGradients(resumed, step);
    first->step();
  }
  for (size_t i = 0; i < start.size(); ++i) EXPECT_TRUE(torch::equal(through[i], resumed[i]));
}

TEST(OptimizerImplementationTest, AutoLoopsOnTheCpuAndExplicitChoicesStand) {
  std::vector<torch::Tensor> params = Copies(MakeParameters());
  Groups groups = TwoGroups(params, torch::optim::SGDOptions(0.1));
  EXPECT_TRUE(RunsForLoop(OptimizerImplementation::AUTO, groups));
  EXPECT_TRUE(RunsForLoop(OptimizerImplementation::FOR_LOOP, groups));
  EXPECT_FALSE(RunsForLoop(OptimizerImplementation::FOREACH, groups));
  EXPECT_FALSE(RunsForLoop(OptimizerImplementation::FUSED, groups));
}

}  // namespace
}  // namespace pipeline
