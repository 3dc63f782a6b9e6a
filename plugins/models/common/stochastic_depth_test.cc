#include "plugins/models/common/stochastic_depth.h"

#include <cmath>

#include "gtest/gtest.h"
#include "torch/types.h"
#include "torch/utils.h"

namespace pipeline {
namespace {

TEST(StochasticDepthTest, IsTheIdentityOutsideTrainingAndAtZero) {
  const torch::Tensor x = torch::randn({4, 3, 5});
  EXPECT_TRUE(StochasticDepth(x, 0.7, /*training=*/false).equal(x));
  EXPECT_TRUE(StochasticDepth(x, 0.0, /*training=*/true).equal(x));
}

TEST(StochasticDepthTest, DropsWholeRowsAndScalesTheSurvivors) {
  torch::manual_seed(3);
  const torch::Tensor x = torch::ones({2000, 3, 2});
  const torch::Tensor y = StochasticDepth(x, 0.25, /*training=*/true);
  // Each row is all 0 or all 1 / (1 - p).
  const torch::Tensor rows = y.reshape({2000, -1});
  const torch::Tensor first = rows.select(1, 0);
  EXPECT_TRUE(first.unsqueeze(1).expand_as(rows).equal(rows));
  EXPECT_TRUE((first.eq(0) | first.eq(1.0f / 0.75f)).all().item<bool>());
  const torch::Tensor kept = first != 0;
  // About 1 - p of the rows survive (2000 draws: the standard deviation of
  // the fraction is about 0.01).
  EXPECT_NEAR(kept.to(torch::kDouble).mean().item<double>(), 0.75, 0.05);
}

TEST(StochasticDepthTest, DropsEveryRowAtOne) {
  const torch::Tensor x = torch::randn({8, 4});
  EXPECT_TRUE(StochasticDepth(x, 1.0, /*training=*/true).eq(0).all().item<bool>());
}

// torchvision's stochastic_depth takes 0 <= p <= 1.
TEST(ValidateStochasticDepthProbTest, AcceptsZeroToOneAndRejectsTheRest) {
  EXPECT_TRUE(ValidateStochasticDepthProb(0).ok());
  EXPECT_TRUE(ValidateStochasticDepthProb(1).ok());
  EXPECT_EQ(ValidateStochasticDepthProb(-0.2).message(),
            "stochastic_depth_prob: -0.2 is not a probability; choose a value from 0 to 1");
  EXPECT_FALSE(ValidateStochasticDepthProb(std::nan("")).ok());
}

}  // namespace
}  // namespace pipeline
