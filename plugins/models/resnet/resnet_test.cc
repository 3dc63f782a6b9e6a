#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/testing/model_test_util.h"
#include "pipeline/testing/plugin_test_util.h"
#include "pipeline/testing/state_dict_fixture.h"

namespace pipeline {
namespace {

// Written by tools/fixtures/torchvision_state_dict_keys.py; the path is
// relative to the runfiles root, the test's working directory.
std::string FixturePath(const std::string& model_name) {
  return absl::StrCat("plugins/models/resnet/testdata/torchvision_", model_name, "_state_dict.txt");
}

absl::StatusOr<std::unique_ptr<Model>> MakeResNet(const std::string& options,
                                                  const ModelContext& context) {
  return testing::CreatePlugin<Model>(
      absl::StrCat("name: \"resnet\" options { [type.googleapis.com/pipeline.ResNetOptions] { ",
                   options, " } }"),
      context);
}

using testing::ParameterShape;

class ResNetDepthTest : public ::testing::TestWithParam<int> {};

TEST_P(ResNetDepthTest, StateDictMatchesTorchvision) {
  auto model = MakeResNet(absl::StrCat("depth: ", GetParam()), ModelContext{1000, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_TRUE(
      testing::StateDictMatchesFixture(**model, FixturePath(absl::StrCat("resnet", GetParam()))));
}

INSTANTIATE_TEST_SUITE_P(AllDepths, ResNetDepthTest, ::testing::Values(18, 34, 50, 101),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return absl::StrCat("ResNet", info.param);
                         });

TEST(ResNetTest, TakesClassesAndChannelsFromTheContext) {
  auto model = MakeResNet("", ModelContext{/*num_classes=*/2, /*input_channels=*/3});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(ParameterShape(**model, "fc.weight"), (std::vector<int64_t>{2, 512}));
  EXPECT_EQ(ParameterShape(**model, "conv1.weight"), (std::vector<int64_t>{64, 3, 7, 7}));
}

TEST(ResNetTest, ForwardGivesOneLogitPerClass) {
  auto model = MakeResNet("depth: 18", ModelContext{/*num_classes=*/10, /*input_channels=*/3});
  ASSERT_TRUE(model.ok()) << model.status();
  const torch::Tensor logits = (*model)->forward(torch::randn({2, 3, 64, 64}));
  EXPECT_EQ(logits.sizes().vec(), (std::vector<int64_t>{2, 10}));
  EXPECT_TRUE(logits.isfinite().all().item<bool>());
}

TEST(ResNetTest, ConvolutionsUseKaimingNormalFanOut) {
  auto model = MakeResNet("depth: 18", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  // 256 -> 512 channels, 3x3: fan_out gives std sqrt(2 / (512 * 9)) = 0.0208,
  // fan_in would give 0.0295.
  const double stddev = (*model)->named_parameters()["layer4.0.conv1.weight"].std().item<double>();
  EXPECT_NEAR(stddev, std::sqrt(2.0 / (512 * 9)), 0.001);
}

TEST(ResNetTest, ZeroInitResidualZeroesTheLastBatchNormOfEachBlock) {
  auto basic = MakeResNet("depth: 18 zero_init_residual: true", ModelContext{10, 3});
  ASSERT_TRUE(basic.ok()) << basic.status();
  auto basic_parameters = (*basic)->named_parameters();
  EXPECT_TRUE(basic_parameters["layer1.0.bn2.weight"].eq(0).all().item<bool>());
  EXPECT_TRUE(basic_parameters["layer1.0.bn1.weight"].eq(1).all().item<bool>());

  auto bottleneck = MakeResNet("depth: 50 zero_init_residual: true", ModelContext{10, 3});
  ASSERT_TRUE(bottleneck.ok()) << bottleneck.status();
  auto bottleneck_parameters = (*bottleneck)->named_parameters();
  EXPECT_TRUE(bottleneck_parameters["layer4.2.bn3.weight"].eq(0).all().item<bool>());
  EXPECT_TRUE(bottleneck_parameters["layer4.2.bn2.weight"].eq(1).all().item<bool>());

  auto plain = MakeResNet("depth: 18", ModelContext{10, 3});
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_TRUE((*plain)->named_parameters()["layer1.0.bn2.weight"].eq(1).all().item<bool>());
}

TEST(ResNetTest, RejectsADepthWithoutAnArchitecture) {
  auto model = MakeResNet("depth: 20", ModelContext{10, 3});
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(model.status().message(),
            "options: depth: 20 is not a ResNet depth; choose 18, 34, 50 or 101");
}

}  // namespace
}  // namespace pipeline
