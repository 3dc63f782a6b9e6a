#include <cmath>

#include "ATen/ops/cross_entropy_loss.h"
#include "gtest/gtest.h"
#include "pipeline/interfaces/loss.h"
#include "pipeline/testing/plugin_test_util.h"
#include "torch/types.h"
#include "torch/utils.h"

namespace pipeline {
namespace {

std::unique_ptr<Loss> CreateSoftTargetCrossEntropy() {
  auto loss = testing::CreatePlugin<Loss>(R"pb(name: "soft_target_cross_entropy")pb");
  EXPECT_TRUE(loss.ok()) << loss.status();
  return loss.ok() ? std::move(*loss) : nullptr;
}

TEST(SoftTargetCrossEntropyTest, EqualsCrossEntropyOnOneHotTargets) {
  torch::manual_seed(0);
  const torch::Tensor logits = torch::randn({8, 5});
  const torch::Tensor labels = torch::randint(5, {8}, torch::kInt64);
  const torch::Tensor one_hot = torch::one_hot(labels, 5).to(torch::kFloat);
  auto loss = CreateSoftTargetCrossEntropy();
  ASSERT_NE(loss, nullptr);
  for (auto reduction : {at::Reduction::Mean, at::Reduction::Sum, at::Reduction::None}) {
    const torch::Tensor expected = at::cross_entropy_loss(logits, labels, {}, reduction);
    EXPECT_TRUE(torch::allclose(loss->Compute(logits, one_hot, reduction), expected)) << reduction;
    EXPECT_TRUE(torch::allclose(loss->Compute(logits, labels, reduction), expected)) << reduction;
  }
}

TEST(SoftTargetCrossEntropyTest, MatchesAHandComputedExample) {
  // Sample 0: softmax [1/4, 3/4], target [1/2, 1/2]: -(ln(1/4) + ln(3/4)) / 2.
  // Sample 1: softmax [1/2, 1/2], target [1, 0]: ln 2.
  const torch::Tensor logits = torch::tensor({0.0, std::log(3.0), 0.0, 0.0}).view({2, 2});
  const torch::Tensor targets = torch::tensor({0.5, 0.5, 1.0, 0.0}).view({2, 2});
  const double first = -(std::log(0.25) + std::log(0.75)) / 2;
  const double second = std::log(2.0);
  auto loss = CreateSoftTargetCrossEntropy();
  ASSERT_NE(loss, nullptr);
  const torch::Tensor per_sample = loss->Compute(logits, targets, at::Reduction::None);
  ASSERT_EQ(per_sample.sizes(), (std::vector<int64_t>{2}));
  EXPECT_NEAR(per_sample[0].item<double>(), first, 1e-6);
  EXPECT_NEAR(per_sample[1].item<double>(), second, 1e-6);
  EXPECT_NEAR(loss->Compute(logits, targets, at::Reduction::Mean).item<double>(),
              (first + second) / 2, 1e-6);
  EXPECT_NEAR(loss->Compute(logits, targets, at::Reduction::Sum).item<double>(), first + second,
              1e-6);
}

TEST(SoftTargetCrossEntropyTest, GradientIsSoftmaxMinusTargetOverBatch) {
  torch::manual_seed(1);
  const torch::Tensor logits = torch::randn({4, 3}, torch::requires_grad());
  const torch::Tensor targets = torch::softmax(torch::randn({4, 3}), 1);
  auto loss = CreateSoftTargetCrossEntropy();
  ASSERT_NE(loss, nullptr);
  loss->Compute(logits, targets, at::Reduction::Mean).backward();
  ASSERT_TRUE(logits.grad().defined());
  EXPECT_TRUE(torch::allclose(logits.grad(), (torch::softmax(logits, 1) - targets) / 4));
}

TEST(SoftTargetCrossEntropyTest, RefusesTargetsOfAnotherWidth) {
  auto loss = CreateSoftTargetCrossEntropy();
  ASSERT_NE(loss, nullptr);
  EXPECT_THROW(loss->Compute(torch::zeros({2, 3}), torch::zeros({2, 4}), at::Reduction::Mean),
               c10::Error);
  EXPECT_THROW(loss->Compute(torch::zeros({2, 3}), torch::tensor({0, 3}, torch::kInt64),
                             at::Reduction::Mean),
               c10::Error);
}

// Each of these would broadcast against 2 x 3 logits.
TEST(SoftTargetCrossEntropyTest, RefusesTargetsOfAnotherShape) {
  auto loss = CreateSoftTargetCrossEntropy();
  ASSERT_NE(loss, nullptr);
  const torch::Tensor logits = torch::zeros({2, 3});
  for (const torch::Tensor& targets : {torch::full({1, 3}, 1.0 / 3), torch::full({3}, 1.0 / 3),
                                       torch::tensor({0, 2}, torch::kInt64).view({2, 1})}) {
    try {
      loss->Compute(logits, targets, at::Reduction::Mean);
      ADD_FAILURE() << "targets of shape " << targets.sizes() << " gave a loss";
    } catch (const c10::Error& e) {
      EXPECT_EQ(e.msg(), "soft_target_cross_entropy: targets of shape " +
                             c10::str(targets.sizes()) +
                             " for logits of shape [2, 3]; class probabilities have the "
                             "logits' shape, class indices one per row");
    }
  }
}

}  // namespace
}  // namespace pipeline
