// The state_dict of every depth against torchvision's, classes and channels
// from the context and the forward pass are the model conformance suite's
// (conformance_test in BUILD).

#include <cmath>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/layers/batch_norm.h"
#include "pipeline/testing/model_test_util.h"
#include "pipeline/testing/parity_fixture.h"
#include "pipeline/testing/plugin_test_util.h"
#include "torch/nn/modules/container/sequential.h"
#include "torch/nn/modules/conv.h"
#include "torch/nn/modules/linear.h"
#include "torch/utils.h"

namespace pipeline {
namespace {

absl::StatusOr<std::unique_ptr<Model>> MakeResNet(const std::string& options,
                                                  const ModelContext& context) {
  return testing::CreatePlugin<Model>(
      absl::StrCat("name: \"resnet\" options { [type.googleapis.com/pipeline.ResNetOptions] { ",
                   options, " } }"),
      context);
}

using testing::DeterministicInput;
using testing::FillDeterministically;
using testing::ParameterShape;
using testing::ReadLogits;

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

// The network applied submodule by submodule, as torchvision's forward
// does, with or without the max-pool; returns the logits and leaves the
// size of layer1's output in *layer1_sizes.
torch::Tensor ForwardByHand(Model& model, torch::Tensor x, bool max_pool,
                            std::vector<int64_t>* layer1_sizes) {
  auto children = model.named_children();
  x = children["bn1"]->as<BatchNorm2d>()->forward(
      children["conv1"]->as<torch::nn::Conv2d>()->forward(x));
  x = x.relu();
  if (max_pool) x = torch::max_pool2d(x, 3, 2, 1);
  x = children["layer1"]->as<torch::nn::Sequential>()->forward(x);
  *layer1_sizes = x.sizes().vec();
  for (const char* layer : {"layer2", "layer3", "layer4"}) {
    x = children[layer]->as<torch::nn::Sequential>()->forward(x);
  }
  return children["fc"]->as<torch::nn::Linear>()->forward(
      torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1));
}

struct StemCase {
  const char* stem;
  std::vector<int64_t> conv1_shape;
  bool max_pool;
  int64_t layer1_size;  // of a 28x28 image
};

// Names the stem in a failure message instead of the struct's bytes.
void PrintTo(const StemCase& stem, std::ostream* os) { *os << stem.stem; }

class ResNetStemTest : public ::testing::TestWithParam<StemCase> {};

TEST_P(ResNetStemTest, KeepsTheResolutionItPromises) {
  const StemCase& stem = GetParam();
  auto model = MakeResNet(absl::StrCat("depth: 18 stem: ", stem.stem), ModelContext{10, 1});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(ParameterShape(**model, "conv1.weight"), stem.conv1_shape);
  (*model)->eval();
  torch::manual_seed(0);
  const torch::Tensor images = torch::randn({2, 1, 28, 28});
  std::vector<int64_t> layer1_sizes;
  const torch::Tensor expected = ForwardByHand(**model, images, stem.max_pool, &layer1_sizes);
  EXPECT_EQ(layer1_sizes, (std::vector<int64_t>{2, 64, stem.layer1_size, stem.layer1_size}));
  EXPECT_TRUE(torch::equal((*model)->forward(images), expected));
}

INSTANTIATE_TEST_SUITE_P(AllStems, ResNetStemTest,
                         ::testing::Values(StemCase{"IMAGENET", {64, 1, 7, 7}, true, 7},
                                           StemCase{"SMALL_IMAGE", {64, 1, 3, 3}, true, 14},
                                           StemCase{"CIFAR", {64, 1, 3, 3}, false, 28}),
                         [](const ::testing::TestParamInfo<StemCase>& info) {
                           return std::string(info.param.stem);
                         });

TEST(ResNetTest, RejectsADepthWithoutAnArchitecture) {
  auto model = MakeResNet("depth: 20", ModelContext{10, 3});
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(model.status().message(),
            "options: depth: 20 is not a ResNet depth; choose 18, 34, 50, 101 or 152");
}

TEST(ResNetTest, RejectsGroupsOrWidthForBasicBlocks) {
  // torchvision's BasicBlock raises for either.
  auto grouped = MakeResNet("depth: 18 groups: 32 width_per_group: 4", ModelContext{10, 3});
  EXPECT_EQ(grouped.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(grouped.status().message(),
            "options: groups: 32 and width_per_group: 4 need a Bottleneck depth (50, 101 or "
            "152); depth: 18 has BasicBlocks, which take only groups: 1 and width_per_group: 64");
  auto wide = MakeResNet("depth: 34 width_per_group: 128", ModelContext{10, 3});
  EXPECT_EQ(wide.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(wide.status().message(),
            "options: groups: 1 and width_per_group: 128 need a Bottleneck depth (50, 101 or "
            "152); depth: 34 has BasicBlocks, which take only groups: 1 and width_per_group: 64");
}

TEST(ResNetTest, RejectsGroupsOrWidthBelowOne) {
  auto groups = MakeResNet("depth: 50 groups: 0", ModelContext{10, 3});
  EXPECT_EQ(groups.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(groups.status().message(),
            "options: groups: 0 is not a number of groups; choose 1 or more (32 or 64 for "
            "ResNeXt)");
  auto width = MakeResNet("depth: 50 width_per_group: -4", ModelContext{10, 3});
  EXPECT_EQ(width.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(width.status().message(),
            "options: width_per_group: -4 is not a channel count; choose 1 or more (64 for "
            "ResNet, 128 for Wide ResNet, 4 or 8 for ResNeXt)");
}

}  // namespace
}  // namespace pipeline
