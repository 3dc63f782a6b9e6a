// The state_dict and logits against torchvision's (widths 1 and 0.5),
// classes and channels from the context, the forward pass and the dropout
// option's range are the model conformance suite's (conformance_test in
// BUILD).

#include <cmath>
#include <cstdint>
#include <memory>
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

absl::StatusOr<std::unique_ptr<Model>> MakeMobileNetV2(const std::string& options,
                                                       const ModelContext& context) {
  return testing::CreatePlugin<Model>(
      absl::StrCat("name: \"mobilenet_v2\" options { "
                   "[type.googleapis.com/pipeline.MobileNetV2Options] { ",
                   options, " } }"),
      context);
}

using testing::ParameterShape;

TEST(MobileNetV2Test, WidthMultiplierRoundsChannelsLikeTorchvision) {
  // 0.5: 32 -> 16 stem channels, 320 -> 160 before the head, which keeps its
  // 1280 (torchvision scales it only by max(1, width_mult)).
  auto half = MakeMobileNetV2("width_multiplier: 0.5", ModelContext{10, 3});
  ASSERT_TRUE(half.ok()) << half.status();
  EXPECT_EQ(ParameterShape(**half, "features.0.0.weight"), (std::vector<int64_t>{16, 3, 3, 3}));
  EXPECT_EQ(ParameterShape(**half, "features.18.0.weight"),
            (std::vector<int64_t>{1280, 160, 1, 1}));

  // 1.4: 32 * 1.4 = 44.8 rounds to 48; the head grows to 1792.
  auto wide = MakeMobileNetV2("width_multiplier: 1.4", ModelContext{10, 3});
  ASSERT_TRUE(wide.ok()) << wide.status();
  EXPECT_EQ(ParameterShape(**wide, "features.0.0.weight"), (std::vector<int64_t>{48, 3, 3, 3}));
  EXPECT_EQ(ParameterShape(**wide, "classifier.1.weight"), (std::vector<int64_t>{10, 1792}));

  // 0.35: 32 * 0.35 = 11.2 rounds down to 8, more than 10% below, so 16;
  // 16 * 0.35 = 5.6 rounds to the minimum, 8.
  auto narrow = MakeMobileNetV2("width_multiplier: 0.35", ModelContext{10, 3});
  ASSERT_TRUE(narrow.ok()) << narrow.status();
  EXPECT_EQ(ParameterShape(**narrow, "features.0.0.weight"), (std::vector<int64_t>{16, 3, 3, 3}));
  EXPECT_EQ(ParameterShape(**narrow, "features.1.conv.1.weight"),
            (std::vector<int64_t>{8, 16, 1, 1}));
}

TEST(MobileNetV2Test, InitialisesLikeTorchvision) {
  auto model = MakeMobileNetV2("", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  auto parameters = (*model)->named_parameters();
  // Kaiming normal, fan_out: 1x1 conv 320 -> 1280 gives std sqrt(2 / 1280)
  // (fan_in would give sqrt(2 / 320)); the depthwise 3x3 conv of 96
  // channels, sqrt(2 / (96 * 9)).
  EXPECT_NEAR(parameters["features.18.0.weight"].std().item<double>(), std::sqrt(2.0 / 1280),
              0.002);
  EXPECT_NEAR(parameters["features.2.conv.1.0.weight"].std().item<double>(),
              std::sqrt(2.0 / (96 * 9)), 0.005);
  EXPECT_NEAR(parameters["classifier.1.weight"].std().item<double>(), 0.01, 0.0005);
  EXPECT_TRUE(parameters["classifier.1.bias"].eq(0).all().item<bool>());
  EXPECT_TRUE(parameters["features.0.1.weight"].eq(1).all().item<bool>());
  EXPECT_TRUE(parameters["features.0.1.bias"].eq(0).all().item<bool>());
}

TEST(MobileNetV2Test, DropoutActsInTrainingOnly) {
  // Dropping every feature leaves only the classifier's bias, which starts
  // at 0.
  auto model = MakeMobileNetV2("dropout: 1", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  torch::NoGradGuard no_grad;
  const torch::Tensor input = torch::randn({2, 3, 64, 64});
  EXPECT_TRUE((*model)->forward(input).eq(0).all().item<bool>());
  (*model)->eval();
  EXPECT_FALSE((*model)->forward(input).eq(0).all().item<bool>());
}

TEST(MobileNetV2Test, RejectsAWidthMultiplierThatIsNotPositive) {
  auto zero = MakeMobileNetV2("width_multiplier: 0", ModelContext{10, 3});
  EXPECT_EQ(zero.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(zero.status().message(),
            "options: width_multiplier: 0 is not a positive factor; set one such as 0.5, 1.0 or "
            "1.4");
  EXPECT_EQ(MakeMobileNetV2("width_multiplier: -0.5", ModelContext{10, 3}).status().message(),
            "options: width_multiplier: -0.5 is not a positive factor; set one such as 0.5, 1.0 "
            "or 1.4");
}

}  // namespace
}  // namespace pipeline
