#include <algorithm>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/testing/parity_fixture.h"
#include "pipeline/testing/plugin_test_util.h"
#include "torch/utils.h"

namespace pipeline {
namespace {

std::string ConvNeXtText(const std::string& options) {
  return testing::PluginText("convnext", "ConvNeXtOptions", options);
}

absl::StatusOr<std::unique_ptr<Model>> MakeConvNeXt(const std::string& options,
                                                    const ModelContext& context) {
  return testing::CreatePlugin<Model>(ConvNeXtText(options), context);
}

TEST(ConvNeXtTest, InitialisesLikeTorchvision) {
  auto model = MakeConvNeXt("variant: TINY", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  auto parameters = (*model)->named_parameters();
  // Convolutions and linear layers: truncated normal of std 0.02 (its
  // bounds, +-2, are 100 std away), zero biases.
  EXPECT_NEAR(parameters["features.1.0.block.3.weight"].std().item<double>(), 0.02, 0.0005);
  EXPECT_NEAR(parameters["features.6.1.weight"].std().item<double>(), 0.02, 0.0005);
  EXPECT_TRUE(parameters["features.1.0.block.3.bias"].eq(0).all().item<bool>());
  EXPECT_TRUE(parameters["classifier.2.bias"].eq(0).all().item<bool>());
  // Every block's branch starts scaled down to layer_scale.
  EXPECT_TRUE(parameters["features.5.8.layer_scale"].eq(1e-6f).all().item<bool>());
  EXPECT_TRUE(parameters["features.0.1.weight"].eq(1).all().item<bool>());
}

TEST(ConvNeXtTest, StochasticDepthDropsResidualBranchesInTrainingOnly) {
  torch::manual_seed(0);
  const torch::Tensor input = torch::randn({2, 3, 32, 32});
  torch::NoGradGuard no_grad;
  // layer_scale 1, so that a dropped branch changes the logits visibly.
  auto dropping =
      MakeConvNeXt("stochastic_depth_prob: 0.9 layer_scale: 1", ModelContext{10, 3});
  ASSERT_TRUE(dropping.ok()) << dropping.status();
  EXPECT_FALSE(torch::equal((*dropping)->forward(input), (*dropping)->forward(input)));
  (*dropping)->eval();
  EXPECT_TRUE(torch::equal((*dropping)->forward(input), (*dropping)->forward(input)));
  // No BatchNorm: without stochastic depth, training is deterministic too.
  auto keeping = MakeConvNeXt("stochastic_depth_prob: 0 layer_scale: 1", ModelContext{10, 3});
  ASSERT_TRUE(keeping.ok()) << keeping.status();
  EXPECT_TRUE(torch::equal((*keeping)->forward(input), (*keeping)->forward(input)));
}

// Layer-wise lr decay as timm groups a ConvNeXt: the stem, then every block
// in network order (a downsampling with the first block of the stage it
// leads into), then the classifier with its norm.
TEST(ConvNeXtTest, LayerIdsFollowTheBlocks) {
  auto model = MakeConvNeXt("variant: TINY", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  const Model& convnext = **model;
  EXPECT_EQ(convnext.num_layers(), 20);  // 3 + 3 + 9 + 3 blocks
  EXPECT_EQ(convnext.layer_id("features.0.0.weight"), 0);
  EXPECT_EQ(convnext.layer_id("features.0.1.bias"), 0);
  EXPECT_EQ(convnext.layer_id("features.1.0.layer_scale"), 1);
  EXPECT_EQ(convnext.layer_id("features.1.2.block.5.bias"), 3);
  EXPECT_EQ(convnext.layer_id("features.2.0.weight"), 4);  // into stage 2
  EXPECT_EQ(convnext.layer_id("features.3.0.block.0.weight"), 4);
  EXPECT_EQ(convnext.layer_id("features.5.8.block.2.weight"), 15);
  EXPECT_EQ(convnext.layer_id("features.6.1.weight"), 16);
  EXPECT_EQ(convnext.layer_id("features.7.2.layer_scale"), 18);
  EXPECT_EQ(convnext.layer_id("classifier.0.weight"), 19);
  EXPECT_EQ(convnext.layer_id("classifier.2.weight"), 19);
  // Every parameter in range, in the order the network runs, every layer
  // used.
  std::vector<bool> used(convnext.num_layers(), false);
  int previous = 0;
  for (const auto& item : convnext.named_parameters()) {
    const int id = convnext.layer_id(item.key());
    EXPECT_GE(id, previous) << item.key();
    ASSERT_LT(id, convnext.num_layers()) << item.key();
    used[id] = true;
    previous = id;
  }
  EXPECT_EQ(std::count(used.begin(), used.end(), false), 0);
}

TEST(ConvNeXtTest, RejectsOptionsOutsideTheirRange) {
  EXPECT_EQ(testing::ValidationMessage<Model>(ConvNeXtText("stochastic_depth_prob: 1.5")),
            "options: stochastic_depth_prob: 1.5 is not a probability; choose a value from 0 "
            "to 1");
  EXPECT_EQ(testing::ValidationMessage<Model>(ConvNeXtText("layer_scale: 0")),
            "options: layer_scale: 0 would start every residual branch at 0 or reversed; choose "
            "a positive scale (torchvision's is 1e-6)");
}

}  // namespace
}  // namespace pipeline
