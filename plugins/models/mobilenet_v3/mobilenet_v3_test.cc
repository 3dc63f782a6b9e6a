// The state_dict and logits of both variants against torchvision's, classes
// and channels from the context, the forward pass and the dropout option's
// range are the model conformance suite's (conformance_test in BUILD).

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/layers/batch_norm.h"
#include "pipeline/testing/model_test_util.h"
#include "pipeline/testing/plugin_test_util.h"
#include "torch/nn/modules/batchnorm.h"
#include "torch/utils.h"

namespace pipeline {
namespace {

absl::StatusOr<std::unique_ptr<Model>> MakeMobileNetV3(const std::string& options,
                                                       const ModelContext& context) {
  return testing::CreatePlugin<Model>(
      absl::StrCat("name: \"mobilenet_v3\" options { "
                   "[type.googleapis.com/pipeline.MobileNetV3Options] { ",
                   options, " } }"),
      context);
}

using testing::ParameterShape;

TEST(MobileNetV3Test, DefaultsToLarge) {
  auto model = MakeMobileNetV3("", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(ParameterShape(**model, "classifier.0.weight"), (std::vector<int64_t>{1280, 960}));
  EXPECT_EQ(ParameterShape(**model, "features.16.0.weight"),
            (std::vector<int64_t>{960, 160, 1, 1}));
}

TEST(MobileNetV3Test, WidthMultiplierScalesEveryLayerAndTheClassifier) {
  // 0.75: 16 -> 16 stem channels (12 rounds up to 16), 160 -> 120 at the
  // end of the blocks, 960 -> 720 hidden, 1280 -> 960 in the classifier.
  auto model = MakeMobileNetV3("width_multiplier: 0.75", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(ParameterShape(**model, "features.0.0.weight"), (std::vector<int64_t>{16, 3, 3, 3}));
  EXPECT_EQ(ParameterShape(**model, "features.16.0.weight"),
            (std::vector<int64_t>{720, 120, 1, 1}));
  EXPECT_EQ(ParameterShape(**model, "classifier.0.weight"), (std::vector<int64_t>{960, 720}));
  // Squeeze-and-excitation of block 4 (72 -> 56 expanded channels):
  // 56 / 4 = 14 rounds to 16.
  EXPECT_EQ(ParameterShape(**model, "features.4.block.2.fc1.weight"),
            (std::vector<int64_t>{16, 56, 1, 1}));
}

TEST(MobileNetV3Test, InitialisesLikeTorchvision) {
  auto model = MakeMobileNetV3("", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  auto parameters = (*model)->named_parameters();
  // Kaiming normal, fan_out: the 1x1 head conv 160 -> 960 gives std
  // sqrt(2 / 960) (fan_in would give sqrt(2 / 160)).
  EXPECT_NEAR(parameters["features.16.0.weight"].std().item<double>(), std::sqrt(2.0 / 960), 0.002);
  EXPECT_TRUE(parameters["features.4.block.2.fc1.bias"].eq(0).all().item<bool>());
  EXPECT_NEAR(parameters["classifier.0.weight"].std().item<double>(), 0.01, 0.0005);
  EXPECT_NEAR(parameters["classifier.3.weight"].std().item<double>(), 0.01, 0.001);
  EXPECT_TRUE(parameters["classifier.3.bias"].eq(0).all().item<bool>());
  EXPECT_TRUE(parameters["features.0.1.weight"].eq(1).all().item<bool>());
}

TEST(MobileNetV3Test, BatchNormUsesTorchvisionsEpsAndMomentum) {
  auto model = MakeMobileNetV3("variant: SMALL", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  int batch_norms = 0;
  for (const auto& module : (*model)->modules(/*include_self=*/false)) {
    if (auto* batch_norm = module->as<BatchNorm2d>()) {
      ++batch_norms;
      EXPECT_EQ(batch_norm->options.eps(), 0.001);
      EXPECT_EQ(batch_norm->options.momentum().value(), 0.01);
    }
  }
  EXPECT_GT(batch_norms, 0);
}

TEST(MobileNetV3Test, DropoutActsInTrainingOnly) {
  // Dropping every hidden unit leaves only the last layer's bias, which
  // starts at 0.
  auto model = MakeMobileNetV3("variant: SMALL dropout: 1", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  torch::NoGradGuard no_grad;
  const torch::Tensor input = torch::randn({2, 3, 64, 64});
  EXPECT_TRUE((*model)->forward(input).eq(0).all().item<bool>());
  (*model)->eval();
  EXPECT_FALSE((*model)->forward(input).eq(0).all().item<bool>());
}

TEST(MobileNetV3Test, RejectsAWidthMultiplierThatIsNotPositive) {
  auto model = MakeMobileNetV3("width_multiplier: 0", ModelContext{10, 3});
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(model.status().message(),
            "options: width_multiplier: 0 is not a positive factor; set one such as 0.75, 1.0 "
            "or 1.25");
}

}  // namespace
}  // namespace pipeline
