#include "pipeline/reporting/multiply_adds.h"

#include <string>

#include "ATen/ops/randn.h"
#include "gtest/gtest.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/testing/plugin_test_util.h"
#include "torch/csrc/autograd/grad_mode.h"
#include "torch/nn/modules/conv.h"
#include "torch/nn/modules/linear.h"

namespace pipeline {
namespace {

TEST(MultiplyAddsTest, ConvolutionAndLinearByHand) {
  torch::NoGradGuard no_grad;
  // 3 -> 8 channels, 3x3, stride 2, padding 1 on 2 x 3 x 32 x 32: 16 x 16
  // outputs of 8 channels, each 3*3*3 multiply-adds, for each of 2 images.
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(3, 8, 3).stride(2).padding(1));
  const at::Tensor images = at::randn({2, 3, 32, 32});
  EXPECT_EQ(CountMultiplyAdds([&] { conv->forward(images); }), 2 * 16 * 16 * 8 * 27);
  // Depthwise: groups = channels, one input channel per output.
  torch::nn::Conv2d depthwise(torch::nn::Conv2dOptions(8, 8, 3).padding(1).groups(8));
  const at::Tensor features = at::randn({1, 8, 10, 10});
  EXPECT_EQ(CountMultiplyAdds([&] { depthwise->forward(features); }), 10 * 10 * 8 * 9);
  torch::nn::Linear linear(100, 10);
  const at::Tensor rows = at::randn({4, 100});
  EXPECT_EQ(CountMultiplyAdds([&] { linear->forward(rows); }), 4 * 100 * 10);
}

int64_t ForwardMultiplyAdds(const std::string& config) {
  auto model = testing::CreatePlugin<Model>(config, {1000, 3});
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return 0;
  (*model)->eval();
  torch::NoGradGuard no_grad;
  const at::Tensor image = at::randn({1, 3, 224, 224});
  return CountMultiplyAdds([&] { (*model)->forward(image); });
}

// torchvision's model table (docs, "GFLOPS" at 224 x 224), to its two
// decimals.
TEST(MultiplyAddsTest, MatchesTorchvisionsPublishedTable) {
  struct Case {
    const char* config;
    double published_g;
  };
  for (const Case& c : {
           Case{R"pb(name: "resnet")pb", 1.81},
           Case{R"pb(name: "resnet" options { [type.googleapis.com/pipeline.ResNetOptions] { depth: 50 } })pb", 4.09},
           Case{R"pb(name: "mobilenet_v2")pb", 0.30},
           Case{R"pb(name: "mobilenet_v3")pb", 0.22},
           Case{R"pb(name: "alexnet")pb", 0.71},
       }) {
    const double g = ForwardMultiplyAdds(c.config) / 1e9;
    EXPECT_NEAR(g, c.published_g, 0.005 + 1e-9) << c.config;
  }
}

}  // namespace
}  // namespace pipeline
