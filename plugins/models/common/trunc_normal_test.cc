#include "plugins/models/common/trunc_normal.h"

#include "gtest/gtest.h"
#include "torch/utils.h"

namespace pipeline {
namespace {

TEST(TruncNormalTest, StaysWithinTheBoundsWithTheTruncatedDistributionsSpread) {
  torch::manual_seed(0);
  torch::Tensor values = torch::empty({200000});
  TruncNormal(values, /*std=*/2.0, /*low=*/-2.0, /*high=*/2.0);
  EXPECT_GE(values.min().item<double>(), -2.0);
  EXPECT_LE(values.max().item<double>(), 2.0);
  EXPECT_NEAR(values.mean().item<double>(), 0.0, 0.01);
  // A normal of std 2 cut at +-1 std: variance 4 * (1 - 2 phi(1) / (Phi(1) -
  // Phi(-1))) = 4 * 0.29112, std 1.0791 (the untruncated 2, were the bounds
  // ignored; 1.1547, a uniform's, were the shape lost).
  EXPECT_NEAR(values.std().item<double>(), 1.0791, 0.01);
}

TEST(TruncNormalTest, WideBoundsLeaveANormalOfTheGivenStd) {
  torch::manual_seed(0);
  torch::Tensor values = torch::empty({200000});
  TruncNormal(values, /*std=*/0.02);  // torch's default bounds, 100 std away
  EXPECT_NEAR(values.std().item<double>(), 0.02, 0.0003);
  EXPECT_GT(values.abs().max().item<double>(), 0.06);  // tails beyond 3 std remain
}

TEST(TruncNormalTest, TheSameSeedGivesTheSameValues) {
  torch::Tensor first = torch::empty({1000});
  torch::Tensor second = torch::empty({1000});
  torch::manual_seed(5);
  TruncNormal(first, /*std=*/1.0, /*low=*/-0.5, /*high=*/0.5);
  torch::manual_seed(5);
  TruncNormal(second, /*std=*/1.0, /*low=*/-0.5, /*high=*/0.5);
  EXPECT_TRUE(first.equal(second));
}

}  // namespace
}  // namespace pipeline
