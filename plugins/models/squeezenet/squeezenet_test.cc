#include <cmath>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/testing/model_test_util.h"
#include "pipeline/testing/plugin_test_util.h"
#include "torch/utils.h"

namespace pipeline {
namespace {

absl::StatusOr<std::unique_ptr<Model>> MakeSqueezeNet(const std::string& options,
                                                      const ModelContext& context) {
  return testing::CreatePlugin<Model>(
      testing::PluginText("squeezenet", "SqueezeNetOptions", options), context);
}

TEST(SqueezeNetTest, InitialisesLikeTorchvision) {
  auto model = MakeSqueezeNet("variant: SQUEEZENET1_1", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  auto parameters = (*model)->named_parameters();
  // Kaiming uniform with torch's defaults (fan_in, gain sqrt(2)): the last
  // Fire's 3x3 expand conv takes 64 x 9 inputs, so values within
  // +-sqrt(6 / 576) and std sqrt(2 / 576).
  const torch::Tensor expand = parameters["features.12.expand3x3.weight"];
  EXPECT_LE(expand.abs().max().item<double>(), std::sqrt(6.0 / 576));
  EXPECT_NEAR(expand.std().item<double>(), std::sqrt(2.0 / 576), 0.002);
  EXPECT_TRUE(parameters["features.12.expand3x3.bias"].eq(0).all().item<bool>());
  // The final convolution: normal, std 0.01.
  EXPECT_NEAR(parameters["classifier.1.weight"].std().item<double>(), 0.01, 0.0005);
  EXPECT_TRUE(parameters["classifier.1.bias"].eq(0).all().item<bool>());
}

TEST(SqueezeNetTest, DropoutActsInTrainingOnly) {
  // Dropping every feature leaves only the final convolution's bias, which
  // starts at 0.
  auto model = MakeSqueezeNet("variant: SQUEEZENET1_1 dropout: 1", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  torch::NoGradGuard no_grad;
  torch::manual_seed(0);
  const torch::Tensor input = torch::randn({2, 3, 32, 32});
  EXPECT_TRUE((*model)->forward(input).eq(0).all().item<bool>());
  (*model)->eval();
  EXPECT_FALSE((*model)->forward(input).eq(0).all().item<bool>());
}

}  // namespace
}  // namespace pipeline
