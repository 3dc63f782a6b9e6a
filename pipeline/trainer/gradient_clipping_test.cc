#include "pipeline/trainer/gradient_clipping.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "pipeline/testing/hook_test_util.h"
#include "torch/torch.h"

namespace pipeline {
namespace {

using testing::TinyModel;

GradientClippingConfig Clip(double max_norm, double norm_type, double max_value) {
  GradientClippingConfig config;
  config.set_max_norm(max_norm);
  config.set_norm_type(norm_type);
  config.set_max_value(max_value);
  return config;
}

// fc.weight's gradient 3x4 of 0.5 (norm sqrt(12)/2), fc.bias's (3, -4, 0).
void SetGradients(TinyModel& model) {
  torch::NoGradGuard no_grad;
  model.fc->weight.mutable_grad() = torch::full({3, 4}, 0.5f);
  model.fc->bias.mutable_grad() = torch::tensor({3.0f, -4.0f, 0.0f});
}

double Norm(const std::vector<torch::Tensor>& tensors, double p) {
  double total = 0;
  for (const torch::Tensor& t : tensors) total += t.abs().pow(p).sum().item<double>();
  return std::pow(total, 1.0 / p);
}

// clip_grad_norm_: the total norm over all gradients as one vector; each
// scaled by max_norm / (total + 1e-6).
TEST(GradientClippingTest, NormClippingScalesEveryGradientByTheTotalNorm) {
  TinyModel model;
  SetGradients(model);
  const double total = std::sqrt(12 * 0.25 + 9 + 16);
  const double norm = ClipGradients(model, Clip(1.0, 2, 0));
  EXPECT_NEAR(norm, total, 1e-6);
  const double coefficient = 1.0 / (total + 1e-6);
  EXPECT_NEAR(model.fc->weight.grad()[0][0].item<double>(), 0.5 * coefficient, 1e-7);
  EXPECT_NEAR(model.fc->bias.grad()[1].item<double>(), -4 * coefficient, 1e-7);
  EXPECT_NEAR(Norm({model.fc->weight.grad(), model.fc->bias.grad()}, 2), 1.0, 1e-6);
}

TEST(GradientClippingTest, GradientsWithinTheBoundStayAsTheyAre) {
  TinyModel model;
  SetGradients(model);
  ClipGradients(model, Clip(100, 2, 0));
  EXPECT_EQ(model.fc->weight.grad()[0][0].item<float>(), 0.5f);
  EXPECT_EQ(model.fc->bias.grad()[1].item<float>(), -4.0f);
}

TEST(GradientClippingTest, OtherNorms) {
  TinyModel model;
  SetGradients(model);
  EXPECT_NEAR(ClipGradients(model, Clip(100, 1, 0)), 12 * 0.5 + 7, 1e-5);
  SetGradients(model);
  EXPECT_NEAR(ClipGradients(model, Clip(100, 3, 0)), std::cbrt(12 * 0.125 + 27 + 64), 1e-5);
  // norm_type 0: the largest absolute value (PyTorch's inf).
  SetGradients(model);
  EXPECT_EQ(ClipGradients(model, Clip(2, 0, 0)), 4.0);
  EXPECT_NEAR(model.fc->bias.grad()[1].item<double>(), -4 * 2 / (4 + 1e-6), 1e-6);
}

TEST(GradientClippingTest, ValueClippingClampsEachElement) {
  TinyModel model;
  SetGradients(model);
  EXPECT_TRUE(std::isnan(ClipGradients(model, Clip(0, 2, 1.0))));
  EXPECT_EQ(model.fc->weight.grad()[0][0].item<float>(), 0.5f);
  EXPECT_EQ(model.fc->bias.grad()[0].item<float>(), 1.0f);
  EXPECT_EQ(model.fc->bias.grad()[1].item<float>(), -1.0f);
}

// Value clipping first, then the norm of what is left.
TEST(GradientClippingTest, ValueThenNorm) {
  TinyModel model;
  SetGradients(model);
  EXPECT_NEAR(ClipGradients(model, Clip(100, 2, 1.0)), std::sqrt(12 * 0.25 + 2), 1e-6);
}

// A frozen parameter has no gradient and takes no part.
TEST(GradientClippingTest, ParametersWithoutGradientsAreLeftOut) {
  TinyModel model;
  SetGradients(model);
  model.fc->weight.mutable_grad() = torch::Tensor();
  EXPECT_NEAR(ClipGradients(model, Clip(1, 2, 0)), 5.0, 1e-6);
  EXPECT_FALSE(model.fc->weight.grad().defined());
}

}  // namespace
}  // namespace pipeline
