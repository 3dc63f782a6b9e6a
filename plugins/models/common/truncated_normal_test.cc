#include "plugins/models/common/truncated_normal.h"

#include <cmath>

#include "gtest/gtest.h"
#include "torch/types.h"
#include "torch/utils.h"

namespace pipeline {
namespace {

TEST(TruncatedNormalTest, DrawsWhatPyTorchDrawsFromTheSameSeed) {
  torch::manual_seed(0);
  torch::Tensor values = torch::empty({6});
  TruncatedNormal_(values, /*mean=*/0.2, /*std=*/1.0, /*a=*/-0.5, /*b=*/1.0);
  // torch.manual_seed(0); t = torch.empty(6)
  // torch.nn.init.trunc_normal_(t, 0.2, 1.0, -0.5, 1.0)
  const torch::Tensor pytorch =
      torch::tensor({0.2326159, 0.6167019, -0.3525426, -0.284329, -0.02787389, 0.4231365});
  EXPECT_TRUE(torch::allclose(values, pytorch, 1e-5, 1e-6)) << values;
}

TEST(TruncatedNormalTest, StaysWithinTheBoundsWithTheCutDistributionsSpread) {
  torch::manual_seed(1);
  torch::Tensor values = torch::empty({200000}, torch::kFloat64);
  TruncatedNormal_(values, /*mean=*/0, /*std=*/1, /*a=*/-1, /*b=*/1);
  EXPECT_GE(values.min().item<double>(), -1);
  EXPECT_LE(values.max().item<double>(), 1);
  // N(0, 1) cut to [-1, 1]: variance 1 - 2 phi(1) / (Phi(1) - Phi(-1)).
  const double phi = std::exp(-0.5) / std::sqrt(2 * M_PI);
  const double mass = std::erf(1 / std::sqrt(2.0));
  EXPECT_NEAR(values.std().item<double>(), std::sqrt(1 - 2 * phi / mass), 0.005);
  EXPECT_NEAR(values.mean().item<double>(), 0, 0.005);
}

}  // namespace
}  // namespace pipeline
