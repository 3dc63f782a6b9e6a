// The state_dict and logits against torchvision's, classes and channels
// from the context and the probability options' range are the model
// conformance suite's (conformance_test in BUILD).

#include <cmath>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/testing/plugin_test_util.h"
#include "torch/utils.h"

namespace pipeline {
namespace {

absl::StatusOr<std::unique_ptr<Model>> MakeEfficientNet(const std::string& options,
                                                        const ModelContext& context) {
  return testing::CreatePlugin<Model>(
      absl::StrCat("name: \"efficientnet\" options { "
                   "[type.googleapis.com/pipeline.EfficientNetOptions] { ",
                   options, " } }"),
      context);
}

TEST(EfficientNetTest, InitialisesLikeTorchvision) {
  auto model = MakeEfficientNet("", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  auto parameters = (*model)->named_parameters();
  // Kaiming normal, fan_out: the 1x1 head conv 320 -> 1280 gives std
  // sqrt(2 / 1280) (fan_in would give sqrt(2 / 320)).
  EXPECT_NEAR(parameters["features.8.0.weight"].std().item<double>(), std::sqrt(2.0 / 1280), 0.002);
  EXPECT_TRUE(parameters["features.1.0.block.1.fc1.bias"].eq(0).all().item<bool>());
  // The classifier: uniform in +-1 / sqrt(out_features), so std
  // 1 / sqrt(3 * 10).
  const torch::Tensor classifier = parameters["classifier.1.weight"];
  EXPECT_LE(classifier.abs().max().item<double>(), 1 / std::sqrt(10.0));
  EXPECT_NEAR(classifier.std().item<double>(), 1 / std::sqrt(30.0), 0.005);
  EXPECT_TRUE(parameters["classifier.1.bias"].eq(0).all().item<bool>());
  EXPECT_TRUE(parameters["features.0.1.weight"].eq(1).all().item<bool>());
}

TEST(EfficientNetTest, StochasticDepthDropsResidualBranchesInTrainingOnly) {
  torch::manual_seed(0);
  const torch::Tensor input = torch::randn({2, 3, 64, 64});
  torch::NoGradGuard no_grad;

  // In training (BatchNorm on batch statistics, dropout off) two passes
  // differ only where stochastic depth drew differently.
  auto dropping = MakeEfficientNet("dropout: 0 stochastic_depth_prob: 0.9", ModelContext{10, 3});
  ASSERT_TRUE(dropping.ok()) << dropping.status();
  EXPECT_FALSE(torch::equal((*dropping)->forward(input), (*dropping)->forward(input)));
  (*dropping)->eval();
  EXPECT_TRUE(torch::equal((*dropping)->forward(input), (*dropping)->forward(input)));

  auto keeping = MakeEfficientNet("dropout: 0 stochastic_depth_prob: 0", ModelContext{10, 3});
  ASSERT_TRUE(keeping.ok()) << keeping.status();
  EXPECT_TRUE(torch::equal((*keeping)->forward(input), (*keeping)->forward(input)));
}

TEST(EfficientNetTest, DropoutActsInTrainingOnly) {
  // Dropping every feature leaves only the classifier's bias, which starts
  // at 0.
  auto model = MakeEfficientNet("dropout: 1", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  torch::NoGradGuard no_grad;
  const torch::Tensor input = torch::randn({2, 3, 64, 64});
  EXPECT_TRUE((*model)->forward(input).eq(0).all().item<bool>());
  (*model)->eval();
  EXPECT_FALSE((*model)->forward(input).eq(0).all().item<bool>());
}

TEST(EfficientNetTest, AStochasticDepthProbabilityOutsideZeroToOneSaysWhatToChoose) {
  auto depth = MakeEfficientNet("stochastic_depth_prob: -0.2", ModelContext{10, 3});
  EXPECT_EQ(depth.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(depth.status().message(),
            "options: stochastic_depth_prob: -0.2 is not a probability; choose a value from 0 "
            "to 1");
}

}  // namespace
}  // namespace pipeline
