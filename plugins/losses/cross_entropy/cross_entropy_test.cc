#include "ATen/ops/cross_entropy_loss.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pipeline/interfaces/loss.h"
#include "pipeline/testing/plugin_test_util.h"
#include "torch/types.h"
#include "torch/utils.h"

namespace pipeline {
namespace {

std::unique_ptr<Loss> CreateCrossEntropy(const std::string& options) {
  auto loss = testing::CreatePlugin<Loss>(
      "name: \"cross_entropy\" options { [type.googleapis.com/pipeline.CrossEntropyOptions] { " +
      options + " } }");
  EXPECT_TRUE(loss.ok()) << loss.status();
  return loss.ok() ? std::move(*loss) : nullptr;
}

TEST(CrossEntropyTest, ClassIndicesGiveBitwiseTheTrainersFormerCall) {
  torch::manual_seed(0);
  const torch::Tensor logits = torch::randn({16, 5});
  const torch::Tensor labels = torch::randint(5, {16}, torch::kInt64);
  for (float smoothing : {0.0f, 0.1f}) {
    auto loss = CreateCrossEntropy(absl::StrCat("label_smoothing: ", smoothing));
    ASSERT_NE(loss, nullptr);
    for (auto reduction : {at::Reduction::Mean, at::Reduction::Sum, at::Reduction::None}) {
      EXPECT_TRUE(
          torch::equal(loss->Compute(logits, labels, reduction),
                       at::cross_entropy_loss(logits, labels, {}, reduction, -100, smoothing)))
          << "label_smoothing " << smoothing << ", reduction " << reduction;
    }
  }
}

TEST(CrossEntropyTest, ProbabilityTargetsAreSmoothedTowardsUniform) {
  torch::manual_seed(1);
  const torch::Tensor logits = torch::randn({4, 3});
  const torch::Tensor targets = torch::softmax(torch::randn({4, 3}), 1);
  auto loss = CreateCrossEntropy("label_smoothing: 0.3");
  ASSERT_NE(loss, nullptr);
  // PyTorch: the target becomes (1 - 0.3) * p + 0.3 / classes.
  const torch::Tensor smoothed = targets * 0.7 + 0.1;
  const torch::Tensor expected = -(smoothed * torch::log_softmax(logits, 1)).sum(1);
  EXPECT_TRUE(torch::allclose(loss->Compute(logits, targets, at::Reduction::None), expected));
  EXPECT_TRUE(
      torch::allclose(loss->Compute(logits, targets, at::Reduction::Mean), expected.mean()));
  EXPECT_TRUE(torch::allclose(loss->Compute(logits, targets, at::Reduction::Sum), expected.sum()));
}

TEST(CrossEntropyTest, OneHotProbabilitiesEqualClassIndices) {
  torch::manual_seed(2);
  const torch::Tensor logits = torch::randn({8, 4});
  const torch::Tensor labels = torch::randint(4, {8}, torch::kInt64);
  auto loss = CreateCrossEntropy("label_smoothing: 0.2");
  ASSERT_NE(loss, nullptr);
  EXPECT_TRUE(torch::allclose(
      loss->Compute(logits, torch::one_hot(labels, 4).to(torch::kFloat), at::Reduction::Mean),
      loss->Compute(logits, labels, at::Reduction::Mean)));
}

TEST(CrossEntropyTest, IsTheDefaultLoss) {
  EXPECT_EQ(Registry<Loss>::Global().DefaultFor("loss"), "cross_entropy");
  auto loss = testing::CreatePlugin<Loss>(R"pb(name: "cross_entropy")pb");
  EXPECT_TRUE(loss.ok()) << loss.status();
}

TEST(CrossEntropyTest, RejectsLabelSmoothingOutsideZeroToOne) {
  for (const char* value : {"1.5", "1", "-0.1", "nan"}) {
    auto loss = testing::CreatePlugin<Loss>(
        absl::StrCat("name: \"cross_entropy\" options { "
                     "[type.googleapis.com/pipeline.CrossEntropyOptions] { label_smoothing: ",
                     value, " } }"));
    EXPECT_EQ(loss.status().message(),
              absl::StrCat("options: label_smoothing: ", value, "; must be in [0, 1)"));
  }
}

}  // namespace
}  // namespace pipeline
