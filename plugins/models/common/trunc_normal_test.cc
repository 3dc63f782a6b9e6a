#include "plugins/models/common/trunc_normal.h"

#include "gtest/gtest.h"
#include "torch/types.h"
#include "torch/utils.h"

namespace pipeline {
namespace {

TEST(TruncNormalTest, DrawsWhatTorchDrawsForTheSameSeed) {
  // torch.manual_seed(0); t = torch.empty(6)
  // torch.nn.init.trunc_normal_(t, std=0.02)
  const torch::Tensor expected = torch::tensor(
      {-0.000187669502, 0.014660066, -0.0270038117, -0.0223368816, -0.0100633744, 0.0068535083},
      torch::kFloat);
  torch::manual_seed(0);
  torch::Tensor t = torch::empty({6});
  TruncNormal_(t, 0.0, 0.02);
  EXPECT_TRUE(torch::allclose(t, expected, /*rtol=*/1e-5, /*atol=*/1e-9)) << t;
}

TEST(TruncNormalTest, StaysWithinTheBoundsWithTheTruncatedSpread) {
  torch::manual_seed(1);
  torch::Tensor t = torch::empty({100000});
  TruncNormal_(t, 0.0, 1.0, -1.0, 1.0);
  EXPECT_GE(t.min().item<double>(), -1.0);
  EXPECT_LE(t.max().item<double>(), 1.0);
  // N(0, 1) cut to [-1, 1] has variance 1 - 2 phi(1) / (Phi(1) - Phi(-1))
  // = 0.2911, so a standard deviation of 0.5396.
  EXPECT_NEAR(t.std().item<double>(), 0.5396, 0.005);
  EXPECT_NEAR(t.mean().item<double>(), 0.0, 0.01);
}

}  // namespace
}  // namespace pipeline
