#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "pipeline/interfaces/batch_transform.h"
#include "pipeline/testing/plugin_test_util.h"
#include "torch/torch.h"

namespace pipeline {
namespace {

absl::StatusOr<std::unique_ptr<BatchTransform>> MakeCutmix(const std::string& options,
                                                           int64_t classes) {
  return testing::CreatePlugin<BatchTransform>(
      "name: \"cutmix\" options { [type.googleapis.com/pipeline.CutmixOptions] { " + options +
          " } }",
      BatchTransformContext{classes});
}

// Every pixel is its own image's or its mirror's, never a blend.
TEST(CutmixPluginTest, PastesWithoutBlending) {
  auto cutmix = MakeCutmix("label_smoothing: 0", 2);
  ASSERT_TRUE(cutmix.ok()) << cutmix.status();
  for (uint64_t seed = 0; seed < 10; ++seed) {
    torch::Tensor images = torch::stack({torch::zeros({3, 8, 8}), torch::ones({3, 8, 8})});
    torch::Tensor targets = torch::tensor({0, 1}, torch::kLong);
    SampleRandom random(seed, 0, 0);
    ASSERT_TRUE((*cutmix)->Apply(images, targets, random).ok());
    EXPECT_TRUE(images.eq(0).logical_or(images.eq(1)).all().item<bool>());
    EXPECT_NEAR(targets[0][1].item<double>(), images[0].mean().item<double>(), 1e-6);
  }
}

TEST(CutmixPluginTest, BadOptionsNameTheFieldAndRange) {
  EXPECT_EQ(MakeCutmix("alpha: 0", 3).status().message(),
            "options: alpha: 0; must be > 0 (timm's cutmix default is 1.0)");
  EXPECT_EQ(MakeCutmix("prob: -0.1", 3).status().message(),
            "options: prob: -0.1; must be in [0, 1]");
  EXPECT_EQ(MakeCutmix("", 1).status().message(),
            "batch_transform \"cutmix\": mixing needs at least 2 classes, and the training data "
            "has 1");
}

}  // namespace
}  // namespace pipeline
