#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/testing/parity_fixture.h"
#include "pipeline/testing/plugin_test_util.h"
#include "pipeline/util/torch_status.h"
#include "torch/utils.h"

namespace pipeline {
namespace {

constexpr char kTestdata[] = "plugins/models/maxvit/testdata/";

absl::StatusOr<std::unique_ptr<Model>> MakeMaxVit(const std::string& options,
                                                  const ModelContext& context) {
  return testing::CreatePlugin<Model>(testing::PluginText("maxvit", "MaxVitOptions", options),
                                      context);
}

using testing::DeterministicInput;
using testing::FillDeterministically;
using testing::ReadLogits;

TEST(MaxVitTest, LogitsMatchTorchvisionForTheSameWeights) {
  auto model = MakeMaxVit("", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  FillDeterministically(**model);
  // In float64 on both sides: under the fill's weights the late
  // squeeze-excitation layers see activations in the thousands, and their
  // sigmoids amplify float32 rounding to 1e-3 in the logits (torchvision's
  // own float32 and float64 logits differ that much), past any tolerance
  // that would still catch a wrong layer.
  testing::ToFloat64(**model);
  (*model)->eval();
  const torch::Tensor expected = ReadLogits(
      absl::StrCat(kTestdata, "torchvision_maxvit_t_input_224_float64_parity_logits.txt"));
  ASSERT_TRUE(expected.defined());
  torch::NoGradGuard no_grad;
  const torch::Tensor logits =
      (*model)->forward(DeterministicInput(224).to(torch::kFloat64)).to(torch::kFloat32);
  ASSERT_EQ(logits.sizes(), expected.sizes());
  const double tolerance = 2e-5 * expected.abs().max().item<double>();
  EXPECT_LE((logits - expected).abs().max().item<double>(), tolerance)
      << "C++:\n"
      << logits << "\ntorchvision:\n"
      << expected;
}

TEST(MaxVitTest, LayerIdsFollowTimmsDepthOrder) {
  auto model = MakeMaxVit("", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  const Model& maxvit = **model;
  // The stem, 4 blocks, the classifier.
  ASSERT_EQ(maxvit.num_layers(), 6);
  EXPECT_EQ(maxvit.layer_id("stem.0.0.weight"), 0);
  EXPECT_EQ(maxvit.layer_id("stem.1.0.bias"), 0);
  EXPECT_EQ(maxvit.layer_id("blocks.0.layers.0.layers.MBconv.proj.1.weight"), 1);
  EXPECT_EQ(maxvit.layer_id("blocks.0.layers.1.layers.grid_attention.mlp_layer.3.bias"), 1);
  EXPECT_EQ(
      maxvit.layer_id("blocks.2.layers.4.layers.window_attention.attn_layer.1.to_qkv.weight"), 3);
  EXPECT_EQ(maxvit.layer_id("blocks.3.layers.1.layers.MBconv.layers.conv_c.bias"), 4);
  EXPECT_EQ(maxvit.layer_id("classifier.2.weight"), 5);
  EXPECT_EQ(maxvit.layer_id("classifier.5.weight"), 5);

  // In parameter order the ids climb one at a time from 0 to the last.
  int previous = 0;
  for (const auto& parameter : maxvit.named_parameters()) {
    const int id = maxvit.layer_id(parameter.key());
    EXPECT_TRUE(id == previous || id == previous + 1) << parameter.key() << " has " << id
                                                      << " after " << previous;
    previous = id;
  }
  EXPECT_EQ(previous, maxvit.num_layers() - 1);
}

TEST(MaxVitTest, ImagesItsPartitionsDoNotDivideAreAnErrorSayingWhatWorks) {
  auto model = MakeMaxVit("", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  (*model)->eval();
  torch::NoGradGuard no_grad;
  auto forward = [&](int64_t height, int64_t width) {
    return CallTorch("forward",
                     [&] { return (*model)->forward(torch::randn({1, 3, height, width})); });
  };
  absl::StatusOr<torch::Tensor> small = forward(64, 64);
  ASSERT_FALSE(small.ok());
  EXPECT_EQ(small.status().message(),
            "forward: maxvit takes square images whose side is a multiple of 224 (224x224, "
            "448x448, ...), so that each block's map divides into 7x7 partitions; 64x64 images "
            "give its blocks 16x16, 8x8, 4x4, 2x2 maps");
  absl::StatusOr<torch::Tensor> oblong = forward(224, 448);
  ASSERT_FALSE(oblong.ok());
  EXPECT_NE(oblong.status().message().find("224x448 images give its blocks 56x112, 28x56, "
                                           "14x28, 7x14 maps"),
            std::string::npos)
      << oblong.status();
  // The weights do not depend on the size: twice the side works too.
  absl::StatusOr<torch::Tensor> larger = forward(448, 448);
  ASSERT_TRUE(larger.ok()) << larger.status();
  EXPECT_EQ(larger->sizes().vec(), (std::vector<int64_t>{1, 10}));
}

TEST(MaxVitTest, StochasticDepthDropsBranchesInTrainingOnly) {
  torch::manual_seed(0);
  const torch::Tensor input = torch::randn({2, 3, 224, 224});
  torch::NoGradGuard no_grad;
  // MaxViT has no dropout (torchvision's default 0): in training, with
  // BatchNorm on batch statistics, two passes differ only where stochastic
  // depth drew differently.
  auto dropping = MakeMaxVit("stochastic_depth_prob: 0.9", ModelContext{10, 3});
  ASSERT_TRUE(dropping.ok()) << dropping.status();
  EXPECT_FALSE(torch::equal((*dropping)->forward(input), (*dropping)->forward(input)));

  auto keeping = MakeMaxVit("stochastic_depth_prob: 0", ModelContext{10, 3});
  ASSERT_TRUE(keeping.ok()) << keeping.status();
  EXPECT_TRUE(torch::equal((*keeping)->forward(input), (*keeping)->forward(input)));
}

TEST(MaxVitTest, InitialisesLikeTorchvision) {
  auto model = MakeMaxVit("", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  auto parameters = (*model)->named_parameters();
  const std::string layer = "blocks.2.layers.0.layers.";
  // Convolutions and Linears: N(0, 0.02), zero biases.
  EXPECT_NEAR(parameters[layer + "MBconv.layers.conv_a.0.weight"].std().item<double>(), 0.02,
              0.001);
  EXPECT_TRUE(parameters[layer + "MBconv.layers.conv_c.bias"].eq(0).all().item<bool>());
  EXPECT_NEAR(parameters[layer + "window_attention.attn_layer.1.to_qkv.weight"].std().item<double>(),
              0.02, 0.001);
  EXPECT_TRUE(
      parameters[layer + "grid_attention.mlp_layer.1.bias"].eq(0).all().item<bool>());
  // The bias tables: truncated normal, std 0.02.
  EXPECT_NEAR(parameters[layer + "grid_attention.attn_layer.1.relative_position_bias_table"]
                  .std()
                  .item<double>(),
              0.02, 0.003);
  EXPECT_TRUE(parameters[layer + "MBconv.layers.pre_norm.weight"].eq(1).all().item<bool>());
}

TEST(MaxVitTest, RejectsAStochasticDepthOutsideZeroToOne) {
  auto model = MakeMaxVit("stochastic_depth_prob: -0.1", ModelContext{10, 3});
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(model.status().message(),
            "options: stochastic_depth_prob: -0.1 is not a probability; choose a value from 0 "
            "to 1");
}

}  // namespace
}  // namespace pipeline
