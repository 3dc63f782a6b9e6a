#include <cmath>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/testing/model_test_util.h"
#include "pipeline/testing/plugin_test_util.h"
#include "pipeline/testing/state_dict_fixture.h"

namespace pipeline {
namespace {

absl::StatusOr<std::unique_ptr<Model>> MakeVgg(const std::string& options,
                                               const ModelContext& context) {
  return testing::CreatePlugin<Model>(
      absl::StrCat("name: \"vgg\" options { [type.googleapis.com/pipeline.VggOptions] { ", options,
                   " } }"),
      context);
}

using testing::ParameterShape;

// depth, batch_norm
class VggVariantTest : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(VggVariantTest, StateDictMatchesTorchvision) {
  const auto [depth, batch_norm] = GetParam();
  auto model = MakeVgg(
      absl::StrCat("depth: ", depth, " batch_norm: ", batch_norm ? "true" : "false"),
      ModelContext{1000, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_TRUE(testing::StateDictMatchesFixture(
      **model, absl::StrCat("plugins/models/vgg/testdata/torchvision_vgg", depth,
                            batch_norm ? "_bn" : "", "_state_dict.txt")));
}

INSTANTIATE_TEST_SUITE_P(AllVariants, VggVariantTest,
                         ::testing::Combine(::testing::Values(11, 13, 16, 19), ::testing::Bool()),
                         [](const ::testing::TestParamInfo<std::tuple<int, bool>>& info) {
                           return absl::StrCat("Vgg", std::get<0>(info.param),
                                               std::get<1>(info.param) ? "Bn" : "");
                         });

TEST(VggTest, TakesClassesAndChannelsFromTheContext) {
  auto model = MakeVgg("depth: 11", ModelContext{/*num_classes=*/2, /*input_channels=*/3});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(ParameterShape(**model, "classifier.6.weight"), (std::vector<int64_t>{2, 4096}));
  EXPECT_EQ(ParameterShape(**model, "features.0.weight"), (std::vector<int64_t>{64, 3, 3, 3}));
}

TEST(VggTest, ForwardGivesOneLogitPerClassAtTheSmallestInput) {
  for (const char* options : {"depth: 11", "depth: 11 batch_norm: true"}) {
    SCOPED_TRACE(options);
    auto model = MakeVgg(options, ModelContext{/*num_classes=*/10, /*input_channels=*/3});
    ASSERT_TRUE(model.ok()) << model.status();
    // 32x32 is the smallest size the five max pools accept.
    const torch::Tensor logits = (*model)->forward(torch::randn({2, 3, 32, 32}));
    EXPECT_EQ(logits.sizes().vec(), (std::vector<int64_t>{2, 10}));
    EXPECT_TRUE(logits.isfinite().all().item<bool>());
  }
}

TEST(VggTest, InitialisesAsTorchvision) {
  auto model = MakeVgg("depth: 11", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  auto parameters = (*model)->named_parameters();
  // 64 -> 128 channels, 3x3: fan_out gives std sqrt(2 / (128 * 9)) = 0.0417,
  // fan_in would give 0.0589.
  EXPECT_NEAR(parameters["features.3.weight"].std().item<double>(), std::sqrt(2.0 / (128 * 9)),
              0.001);
  EXPECT_TRUE(parameters["features.3.bias"].eq(0).all().item<bool>());
  EXPECT_NEAR(parameters["classifier.3.weight"].std().item<double>(), 0.01, 0.0005);
  EXPECT_TRUE(parameters["classifier.3.bias"].eq(0).all().item<bool>());
}

TEST(VggTest, RejectsADepthWithoutAnArchitecture) {
  auto model = MakeVgg("depth: 12", ModelContext{10, 3});
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(model.status().message(),
            "options: depth: 12 is not a VGG depth; choose 11, 13, 16 or 19");
}

TEST(VggTest, RejectsADropoutThatIsNotAProbability) {
  auto model = MakeVgg("dropout: 1.5", ModelContext{10, 3});
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(model.status().message(),
            "options: dropout: 1.5 is not a probability from 0 to 1 (torch.nn.Dropout's range); "
            "set 0 to disable dropout");
}

}  // namespace
}  // namespace pipeline
