#include "pipeline/trainer/grad_scaler.h"

#include <cmath>
#include <limits>
#include <vector>

#include "gtest/gtest.h"

namespace pipeline {
namespace {

GradScalerConfig Config(double init_scale, int growth_interval) {
  GradScalerConfig config;
  config.set_init_scale(init_scale);
  config.set_growth_interval(growth_interval);
  return config;
}

TEST(GradScalerTest, StartsAtPyTorchsDefaultScale) {
  GradScaler scaler{GradScalerConfig()};
  EXPECT_EQ(scaler.scale(), 65536.0);
  EXPECT_EQ(scaler.state().growth_tracker, 0);
}

TEST(GradScalerTest, ScalesTheLossAndUnscalesGradientsExactly) {
  GradScaler scaler(Config(1024, 2000));
  torch::Tensor weight = torch::tensor({0.5f, -2.0f, 3.0f}).requires_grad_();
  torch::Tensor unused = torch::zeros({2}).requires_grad_();  // grad stays undefined
  const torch::Tensor loss = (weight * torch::tensor({1.0f, 2.0f, 3.0f})).sum();
  const torch::Tensor scaled = scaler.Scale(loss);
  EXPECT_FLOAT_EQ(scaled.item<float>(), loss.item<float>() * 1024);
  scaled.backward();
  EXPECT_TRUE(torch::equal(weight.grad(), torch::tensor({1024.0f, 2048.0f, 3072.0f})));
  scaler.Unscale({weight, unused});
  EXPECT_TRUE(torch::equal(weight.grad(), torch::tensor({1.0f, 2.0f, 3.0f})));
  EXPECT_FALSE(unused.grad().defined());
}

// What scaling is for: a float16 gradient below float16's smallest
// subnormal (6e-8) flushes to zero unless the loss was scaled up first.
TEST(GradScalerTest, KeepsSmallFloat16GradientsFromFlushingToZero) {
  GradScaler scaler{GradScalerConfig()};
  const torch::Tensor tiny = torch::full({4}, 1e-8f);
  EXPECT_EQ(tiny.to(torch::kHalf).to(torch::kFloat).abs().sum().item<float>(), 0.0f);
  const torch::Tensor scaled = scaler.Scale(tiny).to(torch::kHalf).to(torch::kFloat);
  EXPECT_NEAR(scaled[0].item<float>() / scaler.scale(), 1e-8, 1e-10);
}

// torch._amp_update_scale_: backoff on an Inf/NaN step, growth after
// growth_interval finite steps in a row, a skipped step resets the count.
TEST(GradScalerTest, UpdatesTheScaleAsTorchAmpGradScaler) {
  GradScaler scaler(Config(65536, 3));
  scaler.Update(/*found_inf=*/true);
  EXPECT_EQ(scaler.scale(), 32768.0);
  scaler.Update(true);
  EXPECT_EQ(scaler.scale(), 16384.0);
  scaler.Update(false);
  scaler.Update(false);
  EXPECT_EQ(scaler.scale(), 16384.0);
  EXPECT_EQ(scaler.state().growth_tracker, 2);
  scaler.Update(true);  // resets the run of finite steps
  EXPECT_EQ(scaler.scale(), 8192.0);
  EXPECT_EQ(scaler.state().growth_tracker, 0);
  for (int i = 0; i < 3; ++i) scaler.Update(false);
  EXPECT_EQ(scaler.scale(), 16384.0);
  EXPECT_EQ(scaler.state().growth_tracker, 0);
  for (int i = 0; i < 6; ++i) scaler.Update(false);
  EXPECT_EQ(scaler.scale(), 65536.0);
}

TEST(GradScalerTest, DoesNotGrowPastFloat32) {
  GradScaler scaler(Config(std::ldexp(1.0, 127), 1));
  scaler.Update(false);
  EXPECT_EQ(scaler.scale(), std::ldexp(1.0, 127));
  EXPECT_TRUE(std::isfinite(scaler.scale()));
}

TEST(GradScalerTest, RestoresItsState) {
  GradScaler scaler(Config(65536, 3));
  scaler.Update(true);
  scaler.Update(false);
  GradScaler resumed(Config(65536, 3));
  resumed.Restore(scaler.state());
  scaler.Update(false);
  scaler.Update(false);
  resumed.Update(false);
  resumed.Update(false);
  EXPECT_EQ(resumed.scale(), scaler.scale());
  EXPECT_EQ(resumed.scale(), 65536.0);
}

}  // namespace
}  // namespace pipeline
