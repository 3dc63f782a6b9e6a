#include "plugins/models/common/layer_norm.h"

#include "gtest/gtest.h"
#include "pipeline/trainer/autocast.h"
#include "torch/nn/functional/normalization.h"
#include "torch/types.h"

namespace pipeline {
namespace {

TEST(AutocastLayerNormTest, InFloat32ItIsTorchsLayerNorm) {
  torch::manual_seed(0);
  AutocastLayerNorm norm(torch::nn::LayerNormOptions({8}).eps(1e-6));
  torch::NoGradGuard no_grad;
  norm->weight.uniform_(0.5, 1.5);
  norm->bias.uniform_(-0.5, 0.5);
  const torch::Tensor x = torch::randn({3, 5, 8});
  const torch::Tensor expected = torch::layer_norm(x, {8}, norm->weight, norm->bias, /*eps=*/1e-6);
  EXPECT_TRUE(torch::equal(norm(x), expected));
  // The same type as torch's, which parameter groups look for.
  EXPECT_NE(dynamic_cast<torch::nn::LayerNormImpl*>(norm.get()), nullptr);
}

TEST(AutocastLayerNormTest, NormalisesABfloat16InputInItsWeightsDtype) {
  torch::manual_seed(0);
  AutocastLayerNorm norm(torch::nn::LayerNormOptions({8}));
  const torch::Tensor x = torch::randn({4, 8}).to(torch::kBFloat16);
  torch::Tensor y;
  {
    AutocastScope autocast(TrainerConfig::BF16_AUTOCAST);
    y = norm(x);
  }
  EXPECT_EQ(y.scalar_type(), torch::kFloat);
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(
      torch::equal(y, torch::layer_norm(x.to(torch::kFloat), {8}, norm->weight, norm->bias, 1e-5)));
}

TEST(AutocastLayerNormTest, GradientsReachTheFloat32WeightsUnderAutocast) {
  torch::manual_seed(0);
  AutocastLayerNorm norm(torch::nn::LayerNormOptions({8}));
  {
    AutocastScope autocast(TrainerConfig::BF16_AUTOCAST);
    const torch::Tensor x = torch::randn({4, 8}).to(torch::kBFloat16);
    (norm(x) * torch::randn({4, 8})).sum().backward();
  }
  ASSERT_TRUE(norm->weight.grad().defined());
  EXPECT_EQ(norm->weight.grad().scalar_type(), torch::kFloat);
  EXPECT_TRUE(norm->weight.grad().abs().sum().item<float>() > 0);
  EXPECT_TRUE(norm->bias.grad().abs().sum().item<float>() > 0);
}

TEST(AutocastLayerNorm2dTest, NormalisesEachPixelOverTheChannelsAsTorchvision) {
  torch::manual_seed(0);
  AutocastLayerNorm2d norm(6, 1e-6);
  torch::NoGradGuard no_grad;
  norm->weight.uniform_(0.5, 1.5);
  norm->bias.uniform_(-0.5, 0.5);
  const torch::Tensor x = torch::randn({2, 6, 3, 4});
  // torchvision: F.layer_norm(x.permute(0, 2, 3, 1), ..., eps=1e-6).permute(0,
  // 3, 1, 2).
  const torch::Tensor expected =
      torch::layer_norm(x.permute({0, 2, 3, 1}), {6}, norm->weight, norm->bias, 1e-6)
          .permute({0, 3, 1, 2});
  EXPECT_TRUE(torch::equal(norm(x), expected));
  EXPECT_EQ(norm->named_parameters().keys(), (std::vector<std::string>{"weight", "bias"}));
}

}  // namespace
}  // namespace pipeline
