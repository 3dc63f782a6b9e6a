#include <cmath>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pipeline/interfaces/optimizer.h"
#include "pipeline/testing/plugin_test_util.h"
#include "pipeline/util/torch_version.h"
#include "plugins/optimizers/common/multi_tensor_adam.h"
#include "torch/types.h"

namespace pipeline {
namespace {

TEST(AdamWTest, DecaysWeightsDecoupledFromTheGradient) {
  torch::Tensor p = torch::ones({1}, torch::requires_grad());
  auto optimizer = testing::CreatePlugin<Optimizer>(
      R"pb(name: "adamw"
           options { [type.googleapis.com/pipeline.AdamWOptions] { lr: 0.1 weight_decay: 0.5 } })pb",
      OptimizerContext::OneGroup({p}));
  ASSERT_TRUE(optimizer.ok()) << optimizer.status();
  p.mutable_grad() = torch::full({1}, 2.0);
  (*optimizer)->step();
  // p = 1 * (1 - 0.1 * 0.5) - 0.1 * m_hat / (sqrt(v_hat) + eps), with m_hat = 2, v_hat = 4.
  EXPECT_NEAR(p.item<double>(), 0.95 - 0.1 * 2.0 / (2.0 + 1e-8), 1e-6);
}

TEST(AdamWTest, RejectsNegativeWeightDecay) {
  auto optimizer = testing::CreatePlugin<Optimizer>(
      R"pb(name: "adamw"
           options { [type.googleapis.com/pipeline.AdamWOptions] { weight_decay: -1 } })pb");
  EXPECT_EQ(optimizer.status().message(), "options: weight_decay: -1; must be >= 0");
}

TEST(AdamWTest, FusedNeedsALibTorchWithTheKernel) {
  auto optimizer = testing::CreatePlugin<Optimizer>(
      R"pb(name: "adamw"
           options { [type.googleapis.com/pipeline.AdamWOptions] { implementation: FUSED } })pb",
      OptimizerContext::OneGroup({torch::ones({1}, torch::requires_grad())}));
  if (HasFusedAdam()) {
    EXPECT_TRUE(optimizer.ok()) << optimizer.status();
  } else {
    EXPECT_EQ(optimizer.status().message(),
              absl::StrCat("options: implementation: FUSED needs LibTorch 2.4 or later (its fused "
                           "Adam kernels); this build has ",
                           kLibTorchVersion, ": use FOREACH (multi-tensor kernels) or AUTO"));
  }
}

}  // namespace
}  // namespace pipeline
