#include "plugins/models/common/stochastic_depth.h"

#include "gtest/gtest.h"
#include "torch/utils.h"

namespace pipeline {
namespace {

TEST(StochasticDepthTest, OutsideTrainingOrAtZeroTheBranchPassesUnchanged) {
  const torch::Tensor x = torch::randn({4, 3, 2, 2});
  EXPECT_TRUE(StochasticDepth(x, 0.9, /*training=*/false).equal(x));
  EXPECT_TRUE(StochasticDepth(x, 0.0, /*training=*/true).equal(x));
}

TEST(StochasticDepthTest, InTrainingEachImageIsDroppedWholeOrScaledUp) {
  torch::manual_seed(0);
  const int64_t images = 4000;
  const torch::Tensor x = torch::ones({images, 3, 2, 2});
  const torch::Tensor y = StochasticDepth(x, 0.25, /*training=*/true);
  // Per image: every value 0, or every value 1 / (1 - 0.25).
  const torch::Tensor first = y.flatten(1).select(1, 0);
  EXPECT_TRUE(y.flatten(1).eq(first.unsqueeze(1)).all().item<bool>());
  const torch::Tensor dropped = first.eq(0);
  EXPECT_TRUE((dropped | first.eq(1 / 0.75)).all().item<bool>());
  EXPECT_NEAR(dropped.to(torch::kDouble).mean().item<double>(), 0.25, 0.03);
  // Everything dropped at p = 1.
  EXPECT_TRUE(StochasticDepth(x, 1.0, /*training=*/true).eq(0).all().item<bool>());
}

TEST(StochasticDepthTest, TheSameSeedDropsTheSameImages) {
  const torch::Tensor x = torch::ones({64, 8});
  torch::manual_seed(3);
  const torch::Tensor first = StochasticDepth(x, 0.5, /*training=*/true);
  torch::manual_seed(3);
  EXPECT_TRUE(StochasticDepth(x, 0.5, /*training=*/true).equal(first));
}

}  // namespace
}  // namespace pipeline
