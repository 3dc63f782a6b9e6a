// Classes and channels from the context, the forward pass and the dropout
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
#include "pipeline/testing/state_dict_fixture.h"
#include "torch/nn/modules/container/sequential.h"

namespace pipeline {
namespace {

using testing::StateDictEntry;

absl::StatusOr<std::unique_ptr<Model>> MakeMobileNetV1(const std::string& options,
                                                       const ModelContext& context) {
  return testing::CreatePlugin<Model>(
      absl::StrCat("name: \"mobilenet_v1\" options { "
                   "[type.googleapis.com/pipeline.MobileNetV1Options] { ",
                   options, " } }"),
      context);
}

using testing::ParameterShape;

int64_t ParameterCount(const Model& model) {
  int64_t count = 0;
  for (const torch::Tensor& parameter : model.parameters()) count += parameter.numel();
  return count;
}

TEST(MobileNetV1Test, ParameterCountMatchesThePaper) {
  auto model = MakeMobileNetV1("", ModelContext{1000, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  const int64_t count = ParameterCount(**model);
  // Table 1 / Table 8 of Howard et al.: 4.2 million parameters.
  EXPECT_NEAR(count, 4.2e6, 0.02 * 4.2e6);
  // 864 (stem) + 44,640 (depthwise) + 3,139,584 (pointwise) + 21,888
  // (BatchNorm) + 1,025,000 (classifier).
  EXPECT_EQ(count, 4231976);
}

TEST(MobileNetV1Test, WidthMultiplierScalesEveryLayer) {
  auto model = MakeMobileNetV1("width_multiplier: 0.5", ModelContext{1000, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  // The paper's Table 6 gives 1.3 million for 0.5 MobileNet-224.
  EXPECT_EQ(ParameterCount(**model), 1331592);
  EXPECT_EQ(ParameterShape(**model, "features.0.conv.weight"), (std::vector<int64_t>{16, 3, 3, 3}));
  EXPECT_EQ(ParameterShape(**model, "classifier.weight"), (std::vector<int64_t>{1000, 512}));
}

TEST(MobileNetV1Test, RoundsChannelsToMultiplesOfEightAndAtLeastEight) {
  // 32 * 0.3 = 9.6 rounds to 8, more than 10% low, so 16; 64 * 0.3 = 19.2
  // rounds to 16, also too low, so 24.
  auto model = MakeMobileNetV1("width_multiplier: 0.3", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(ParameterShape(**model, "features.0.conv.weight"), (std::vector<int64_t>{16, 3, 3, 3}));
  EXPECT_EQ(ParameterShape(**model, "features.1.pointwise.weight"),
            (std::vector<int64_t>{24, 16, 1, 1}));

  auto narrow = MakeMobileNetV1("width_multiplier: 0.1", ModelContext{10, 3});
  ASSERT_TRUE(narrow.ok()) << narrow.status();
  EXPECT_EQ(ParameterShape(**narrow, "features.0.conv.weight"), (std::vector<int64_t>{8, 3, 3, 3}));
  EXPECT_EQ(ParameterShape(**narrow, "features.1.depthwise.weight"),
            (std::vector<int64_t>{8, 1, 3, 3}));
}

TEST(MobileNetV1Test, StateDictHasTheDocumentedKeys) {
  auto model = MakeMobileNetV1("", ModelContext{1000, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  const std::vector<StateDictEntry> entries = testing::StateDictEntries(**model);
  // Stem and 13 blocks with 1 and 2 BatchNorms of 5 entries each, classifier.
  ASSERT_EQ(entries.size(), size_t{6 + 13 * 12 + 2});
  const std::vector<StateDictEntry> first = {
      {"features.0.conv.weight", "32x3x3x3"},
      {"features.0.bn.weight", "32"},
      {"features.0.bn.bias", "32"},
      {"features.0.bn.running_mean", "32"},
      {"features.0.bn.running_var", "32"},
      {"features.0.bn.num_batches_tracked", "scalar"},
      {"features.1.depthwise.weight", "32x1x3x3"},
      {"features.1.depthwise_bn.weight", "32"},
      {"features.1.depthwise_bn.bias", "32"},
      {"features.1.depthwise_bn.running_mean", "32"},
      {"features.1.depthwise_bn.running_var", "32"},
      {"features.1.depthwise_bn.num_batches_tracked", "scalar"},
      {"features.1.pointwise.weight", "64x32x1x1"},
      {"features.1.pointwise_bn.weight", "64"},
  };
  EXPECT_TRUE(testing::StateDictEntriesMatch(
      std::vector<StateDictEntry>(entries.begin(), entries.begin() + first.size()), first));
  const std::vector<StateDictEntry> last = {
      {"features.13.pointwise.weight", "1024x1024x1x1"},
      {"features.13.pointwise_bn.weight", "1024"},
      {"features.13.pointwise_bn.bias", "1024"},
      {"features.13.pointwise_bn.running_mean", "1024"},
      {"features.13.pointwise_bn.running_var", "1024"},
      {"features.13.pointwise_bn.num_batches_tracked", "scalar"},
      {"classifier.weight", "1000x1024"},
      {"classifier.bias", "1000"},
  };
  EXPECT_TRUE(testing::StateDictEntriesMatch(
      std::vector<StateDictEntry>(entries.end() - last.size(), entries.end()), last));
}

TEST(MobileNetV1Test, StridesFollowTableOne) {
  auto model = MakeMobileNetV1("", ModelContext{/*num_classes=*/10, /*input_channels=*/3});
  ASSERT_TRUE(model.ok()) << model.status();
  // Five stride-2 layers: 224 -> 7 before the global pool.
  auto sequential =
      std::dynamic_pointer_cast<torch::nn::SequentialImpl>((*model)->named_children()["features"]);
  ASSERT_NE(sequential, nullptr);
  (*model)->eval();
  const torch::Tensor maps = sequential->forward(torch::randn({1, 3, 224, 224}));
  EXPECT_EQ(maps.sizes().vec(), (std::vector<int64_t>{1, 1024, 7, 7}));
}

TEST(MobileNetV1Test, InitialisesConvolutionsKaimingNormalFanOut) {
  auto model = MakeMobileNetV1("", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  auto parameters = (*model)->named_parameters();
  // 512 -> 512 channels, 1x1: fan_out gives std sqrt(2 / 512).
  EXPECT_NEAR(parameters["features.7.pointwise.weight"].std().item<double>(), std::sqrt(2.0 / 512),
              0.002);
  EXPECT_TRUE(parameters["classifier.bias"].eq(0).all().item<bool>());
}

TEST(MobileNetV1Test, RejectsAWidthMultiplierOutsideZeroToFour) {
  EXPECT_EQ(MakeMobileNetV1("width_multiplier: 0", ModelContext{10, 3}).status().message(),
            "options: width_multiplier: 0 is not in (0, 4]; the paper uses 1, 0.75, 0.5 or 0.25");
  EXPECT_EQ(MakeMobileNetV1("width_multiplier: 5", ModelContext{10, 3}).status().message(),
            "options: width_multiplier: 5 is not in (0, 4]; the paper uses 1, 0.75, 0.5 or 0.25");
}

}  // namespace
}  // namespace pipeline
