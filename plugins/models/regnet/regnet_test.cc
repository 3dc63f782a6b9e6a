#include <cmath>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/testing/model_test_util.h"
#include "pipeline/testing/plugin_test_util.h"
#include "torch/utils.h"

namespace pipeline {
namespace {

absl::StatusOr<std::unique_ptr<Model>> MakeRegNet(const std::string& variant,
                                                  const ModelContext& context) {
  return testing::CreatePlugin<Model>(
      absl::StrCat("name: \"regnet\" options { [type.googleapis.com/pipeline.RegNetOptions] { "
                   "variant: ",
                   variant, " } }"),
      context);
}

TEST(RegNetTest, InitialisesLikeTorchvision) {
  auto model = MakeRegNet("REGNET_Y_400MF", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  auto parameters = (*model)->named_parameters();
  // N(0, 2 / fan_out), fan_out = output channels x kernel area whatever the
  // groups: the stem's 3x3 conv to 32 channels gives sqrt(2 / 288) (fan_in
  // would give sqrt(2 / 27)), and block1-0's grouped 3x3 conv to 48
  // channels sqrt(2 / 432).
  EXPECT_NEAR(parameters["stem.0.weight"].std().item<double>(), std::sqrt(2.0 / 288), 0.01);
  const torch::Tensor grouped = parameters["trunk_output.block1.block1-0.f.b.0.weight"];
  ASSERT_EQ(grouped.size(0), 48);
  EXPECT_NEAR(grouped.std().item<double>(), std::sqrt(2.0 / 432), 0.01);
  // The squeeze-and-excitation convs keep PyTorch's default bias init,
  // uniform in +-1 / sqrt(fan_in), which torchvision does not override.
  const torch::Tensor se_bias = parameters["trunk_output.block1.block1-0.f.se.fc1.bias"];
  EXPECT_FALSE(se_bias.eq(0).all().item<bool>());
  EXPECT_LE(se_bias.abs().max().item<double>(), 1 / std::sqrt(48.0));
  // The classifier: N(0, 0.01), bias 0; BatchNorm: weight 1.
  EXPECT_NEAR(parameters["fc.weight"].std().item<double>(), 0.01, 0.001);
  EXPECT_TRUE(parameters["fc.bias"].eq(0).all().item<bool>());
  EXPECT_TRUE(parameters["stem.1.weight"].eq(1).all().item<bool>());
}

}  // namespace
}  // namespace pipeline
