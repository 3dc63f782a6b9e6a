#include <algorithm>
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
#include "pipeline/testing/parity_fixture.h"
#include "pipeline/testing/plugin_test_util.h"
#include "pipeline/testing/state_dict_fixture.h"
#include "torch/utils.h"

namespace pipeline {
namespace {

constexpr char kTestdata[] = "plugins/models/mobilenet_v2/testdata/";

absl::StatusOr<std::unique_ptr<Model>> MakeMobileNetV2(const std::string& options,
                                                       const ModelContext& context) {
  return testing::CreatePlugin<Model>(
      absl::StrCat("name: \"mobilenet_v2\" options { "
                   "[type.googleapis.com/pipeline.MobileNetV2Options] { ",
                   options, " } }"),
      context);
}

using testing::DeterministicInput;
using testing::FillDeterministically;
using testing::ParameterShape;
using testing::ReadLogits;

TEST(MobileNetV2Test, StateDictMatchesTorchvision) {
  auto model = MakeMobileNetV2("", ModelContext{1000, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_TRUE(testing::StateDictMatchesFixture(
      **model, absl::StrCat(kTestdata, "torchvision_mobilenet_v2_state_dict.txt")));
}

struct ParityCase {
  std::string options;
  std::string fixture;
};

// Names the case in failure messages, rather than dumping its bytes.
void PrintTo(const ParityCase& parity_case, std::ostream* out) { *out << parity_case.fixture; }

class MobileNetV2ParityTest : public ::testing::TestWithParam<ParityCase> {};

TEST_P(MobileNetV2ParityTest, LogitsMatchTorchvisionForTheSameWeights) {
  auto model = MakeMobileNetV2(GetParam().options, ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  FillDeterministically(**model);
  (*model)->eval();
  const torch::Tensor expected = ReadLogits(absl::StrCat(kTestdata, GetParam().fixture));
  ASSERT_TRUE(expected.defined());
  torch::NoGradGuard no_grad;
  const torch::Tensor logits = (*model)->forward(DeterministicInput());
  ASSERT_EQ(logits.sizes(), expected.sizes());
  // The same kernels run on both sides, so the logits agree to the last bit
  // here; the tolerance leaves room for another CPU or thread count.
  const double tolerance = 2e-5 * expected.abs().max().item<double>();
  EXPECT_LE((logits - expected).abs().max().item<double>(), tolerance)
      << "C++:\n"
      << logits << "\ntorchvision:\n"
      << expected;
}

INSTANTIATE_TEST_SUITE_P(
    Widths, MobileNetV2ParityTest,
    ::testing::Values(ParityCase{"", "torchvision_mobilenet_v2_parity_logits.txt"},
                      ParityCase{"width_multiplier: 0.5",
                                 "torchvision_mobilenet_v2_width_mult_0.5_parity_logits.txt"}),
    [](const ::testing::TestParamInfo<ParityCase>& info) {
      return info.index == 0 ? std::string("Width1") : std::string("Width0_5");
    });

TEST(MobileNetV2Test, TakesClassesAndChannelsFromTheContext) {
  auto model = MakeMobileNetV2("", ModelContext{/*num_classes=*/2, /*input_channels=*/3});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(ParameterShape(**model, "classifier.1.weight"), (std::vector<int64_t>{2, 1280}));
  EXPECT_EQ(ParameterShape(**model, "features.0.0.weight"), (std::vector<int64_t>{32, 3, 3, 3}));
}

TEST(MobileNetV2Test, ForwardGivesOneLogitPerClass) {
  auto model = MakeMobileNetV2("", ModelContext{/*num_classes=*/10, /*input_channels=*/3});
  ASSERT_TRUE(model.ok()) << model.status();
  const torch::Tensor logits = (*model)->forward(torch::randn({2, 3, 64, 64}));
  EXPECT_EQ(logits.sizes().vec(), (std::vector<int64_t>{2, 10}));
  EXPECT_TRUE(logits.isfinite().all().item<bool>());
}

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

TEST(MobileNetV2Test, RejectsADropoutThatIsNotAProbability) {
  auto model = MakeMobileNetV2("dropout: 1.5", ModelContext{10, 3});
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(model.status().message(),
            "options: dropout: 1.5 is not a probability from 0 to 1 (torch.nn.Dropout's range); "
            "set 0 to disable dropout");
  EXPECT_EQ(MakeMobileNetV2("dropout: -0.1", ModelContext{10, 3}).status().message(),
            "options: dropout: -0.1 is not a probability from 0 to 1 (torch.nn.Dropout's range); "
            "set 0 to disable dropout");
}

}  // namespace
}  // namespace pipeline
