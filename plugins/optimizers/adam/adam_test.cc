#include <cmath>

#include "gtest/gtest.h"
#include "pipeline/interfaces/optimizer.h"
#include "pipeline/testing/plugin_test_util.h"
#include "torch/types.h"

namespace pipeline {
namespace {

TEST(AdamTest, FirstStepsMatchTheUpdateRule) {
  torch::Tensor p = torch::ones({1}, torch::requires_grad());
  auto optimizer = testing::CreatePlugin<Optimizer>(
      R"pb(name: "adam" options { [type.googleapis.com/pipeline.AdamOptions] { lr: 0.1 } })pb",
      OptimizerContext::OneGroup({p}));
  ASSERT_TRUE(optimizer.ok()) << optimizer.status();
  double m = 0, v = 0, expected = 1;
  const double gradients[] = {2.0, -1.0, 0.5};
  for (int t = 1; t <= 3; ++t) {
    const double g = gradients[t - 1];
    p.mutable_grad() = torch::full({1}, g);
    (*optimizer)->step();
    m = 0.9 * m + 0.1 * g;
    v = 0.999 * v + 0.001 * g * g;
    const double m_hat = m / (1 - std::pow(0.9, t));
    const double v_hat = v / (1 - std::pow(0.999, t));
    expected -= 0.1 * m_hat / (std::sqrt(v_hat) + 1e-8);
    EXPECT_NEAR(p.item<double>(), expected, 1e-5) << "step " << t;
  }
}

TEST(AdamTest, RejectsBetaOutsideUnitInterval) {
  auto optimizer = testing::CreatePlugin<Optimizer>(
      R"pb(name: "adam" options { [type.googleapis.com/pipeline.AdamOptions] { beta2: 1 } })pb");
  EXPECT_EQ(optimizer.status().message(), "options: beta1, beta2: 1 is outside [0, 1)");
}

}  // namespace
}  // namespace pipeline
