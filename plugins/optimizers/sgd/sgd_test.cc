#include <cmath>

#include "gtest/gtest.h"
#include "pipeline/interfaces/optimizer.h"
#include "pipeline/testing/plugin_test_util.h"
#include "torch/types.h"

namespace pipeline {
namespace {

// One parameter at 1.0 whose gradient is always 2.0; returns its value after
// `steps` optimizer steps.
double AfterSteps(const std::string& config, int steps) {
  torch::Tensor p = torch::ones({1}, torch::requires_grad());
  auto optimizer = testing::CreatePlugin<Optimizer>(config, OptimizerContext::OneGroup({p}));
  EXPECT_TRUE(optimizer.ok()) << optimizer.status();
  for (int i = 0; i < steps; ++i) {
    p.mutable_grad() = torch::full({1}, 2.0);
    (*optimizer)->step();
  }
  return p.item<double>();
}

TEST(SgdTest, MomentumMatchesTheUpdateRule) {
  // buf1 = g = 2, p1 = 1 - 0.1*2 = 0.8; buf2 = 0.9*2 + 2 = 3.8, p2 = 0.8 - 0.38 = 0.42.
  const char* config = R"pb(name: "sgd"
                            options {
                              [type.googleapis.com/pipeline.SgdOptions] {
                                lr: 0.1 momentum: 0.9 weight_decay: 0
                              }
                            })pb";
  EXPECT_NEAR(AfterSteps(config, 1), 0.8, 1e-6);
  EXPECT_NEAR(AfterSteps(config, 2), 0.42, 1e-6);
}

TEST(SgdTest, NesterovAndWeightDecay) {
  // g = 2 + 0.5*1 = 2.5; buf = 2.5; nesterov step = g + 0.9*buf = 4.75; p = 1 - 0.475.
  EXPECT_NEAR(AfterSteps(R"pb(name: "sgd"
                              options {
                                [type.googleapis.com/pipeline.SgdOptions] {
                                  lr: 0.1 momentum: 0.9 weight_decay: 0.5 nesterov: true
                                }
                              })pb",
                         1),
              0.525, 1e-6);
}

TEST(SgdTest, RejectsBadOptions) {
  auto bad_lr = testing::CreatePlugin<Optimizer>(
      R"pb(name: "sgd" options { [type.googleapis.com/pipeline.SgdOptions] { lr: 0 } })pb");
  EXPECT_EQ(bad_lr.status().message(), "options: lr: 0; must be > 0");
  auto bad_nesterov = testing::CreatePlugin<Optimizer>(
      R"pb(name: "sgd"
           options { [type.googleapis.com/pipeline.SgdOptions] { momentum: 0 nesterov: true } })pb");
  EXPECT_EQ(bad_nesterov.status().message(),
            "options: nesterov: needs momentum > 0 and dampening 0 (as torch.optim.SGD)");
  auto fused = testing::CreatePlugin<Optimizer>(
      R"pb(name: "sgd"
           options { [type.googleapis.com/pipeline.SgdOptions] { implementation: FUSED } })pb");
  EXPECT_EQ(fused.status().message(),
            "options: implementation: FUSED; sgd has no fused kernel: use FOREACH (multi-tensor "
            "kernels) or AUTO");
}

TEST(SgdTest, ForeachTakesTheSameSteps) {
  const char* config = R"pb(name: "sgd"
                            options {
                              [type.googleapis.com/pipeline.SgdOptions] {
                                lr: 0.1 momentum: 0.9 weight_decay: 0 implementation: FOREACH
                              }
                            })pb";
  EXPECT_NEAR(AfterSteps(config, 2), 0.42, 1e-6);
}

}  // namespace
}  // namespace pipeline
