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

absl::StatusOr<std::unique_ptr<Model>> MakeDenseNet(const std::string& options,
                                                    const ModelContext& context) {
  return testing::CreatePlugin<Model>(testing::PluginText("densenet", "DenseNetOptions", options),
                                      context);
}

TEST(DenseNetTest, InitialisesLikeTorchvision) {
  auto model = MakeDenseNet("", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  auto parameters = (*model)->named_parameters();
  // Kaiming normal with torch's defaults (fan_in): the last dense layer's
  // 1x1 conv takes 992 channels, so std sqrt(2 / 992); fan_out would give
  // sqrt(2 / 128).
  EXPECT_NEAR(parameters["features.denseblock4.denselayer16.conv1.weight"].std().item<double>(),
              std::sqrt(2.0 / 992), 0.001);
  EXPECT_TRUE(parameters["features.norm5.weight"].eq(1).all().item<bool>());
  EXPECT_TRUE(parameters["features.norm5.bias"].eq(0).all().item<bool>());
  // torch's Linear weight (uniform in +-1 / sqrt(in_features)), a zero bias.
  EXPECT_LE(parameters["classifier.weight"].abs().max().item<double>(), 1 / std::sqrt(1024.0));
  EXPECT_TRUE(parameters["classifier.bias"].eq(0).all().item<bool>());
}

TEST(DenseNetTest, DropRateActsInTrainingOnly) {
  torch::manual_seed(0);
  const torch::Tensor input = torch::randn({2, 3, 32, 32});
  torch::NoGradGuard no_grad;
  auto dropping = MakeDenseNet("drop_rate: 0.5", ModelContext{10, 3});
  ASSERT_TRUE(dropping.ok()) << dropping.status();
  auto keeping = MakeDenseNet("drop_rate: 0", ModelContext{10, 3});
  ASSERT_TRUE(keeping.ok()) << keeping.status();
  testing::CopyParameters(**dropping, **keeping);

  // In eval the rate changes nothing. (First, while both hold the same
  // fresh running statistics.)
  (*dropping)->eval();
  (*keeping)->eval();
  EXPECT_TRUE(torch::equal((*dropping)->forward(input), (*keeping)->forward(input)));
  // In training (BatchNorm on batch statistics) two passes differ only
  // where dropout drew differently.
  (*dropping)->train();
  (*keeping)->train();
  EXPECT_FALSE(torch::equal((*dropping)->forward(input), (*dropping)->forward(input)));
  EXPECT_TRUE(torch::equal((*keeping)->forward(input), (*keeping)->forward(input)));
}

TEST(DenseNetTest, RejectsADropRateOutsideZeroToOne) {
  auto model = MakeDenseNet("drop_rate: 1.5", ModelContext{10, 3});
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(model.status().message(),
            "options: drop_rate: 1.5 is not a probability from 0 to 1 (torch.nn.Dropout's "
            "range); set 0 to disable dropout");
}

}  // namespace
}  // namespace pipeline
