#include <cmath>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/testing/model_test_util.h"
#include "pipeline/testing/parity_fixture.h"
#include "pipeline/testing/plugin_test_util.h"
#include "pipeline/util/torch_status.h"
#include "torch/utils.h"

namespace pipeline {
namespace {

constexpr char kTestdata[] = "plugins/models/swin/testdata/";

absl::StatusOr<std::unique_ptr<Model>> MakeSwin(const std::string& options,
                                                const ModelContext& context) {
  return testing::CreatePlugin<Model>(testing::PluginText("swin", "SwinOptions", options),
                                      context);
}

using testing::DeterministicInput;
using testing::FillDeterministically;
using testing::ReadLogits;

// A parity fixture: the variant, its input size and the fixture's name.
struct Parity {
  std::string option;
  int64_t input_size;
  std::string fixture;
};

void PrintTo(const Parity& parity, std::ostream* out) {
  *out << parity.option << " at " << parity.input_size;
}

class SwinParityTest : public ::testing::TestWithParam<Parity> {};

TEST_P(SwinParityTest, LogitsMatchTorchvisionForTheSameWeights) {
  auto model = MakeSwin(absl::StrCat("variant: ", GetParam().option), ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  FillDeterministically(**model);
  (*model)->eval();
  const torch::Tensor expected = ReadLogits(absl::StrCat(kTestdata, GetParam().fixture));
  ASSERT_TRUE(expected.defined());
  torch::NoGradGuard no_grad;
  const torch::Tensor logits = (*model)->forward(DeterministicInput(GetParam().input_size));
  ASSERT_EQ(logits.sizes(), expected.sizes());
  // The same kernels run on both sides; the tolerance leaves room for
  // another CPU or thread count.
  const double tolerance = 2e-5 * expected.abs().max().item<double>();
  EXPECT_LE((logits - expected).abs().max().item<double>(), tolerance)
      << "C++:\n"
      << logits << "\ntorchvision:\n"
      << expected;
}

// 64x64 pads the first two stages' maps to whole windows and shifts them;
// 72x72 also pads odd maps before patch merging.
INSTANTIATE_TEST_SUITE_P(
    Fixtures, SwinParityTest,
    ::testing::Values(Parity{"SWIN_T", 64, "torchvision_swin_t_parity_logits.txt"},
                      Parity{"SWIN_V2_T", 64, "torchvision_swin_v2_t_parity_logits.txt"},
                      Parity{"SWIN_T", 72, "torchvision_swin_t_input_72_parity_logits.txt"},
                      Parity{"SWIN_V2_T", 72, "torchvision_swin_v2_t_input_72_parity_logits.txt"}),
    [](const ::testing::TestParamInfo<Parity>& info) {
      return absl::StrCat(info.param.option, "_", info.param.input_size);
    });

TEST(SwinTest, LayerIdsFollowTimmsDepthOrder) {
  auto model = MakeSwin("variant: SWIN_T", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  const Model& swin = **model;
  // The patch embedding, 2 + 2 + 6 + 2 blocks, the norm and head.
  ASSERT_EQ(swin.num_layers(), 14);
  EXPECT_EQ(swin.layer_id("features.0.0.weight"), 0);
  EXPECT_EQ(swin.layer_id("features.0.2.bias"), 0);
  EXPECT_EQ(swin.layer_id("features.1.0.attn.qkv.weight"), 1);
  EXPECT_EQ(swin.layer_id("features.1.1.mlp.3.bias"), 2);
  // A patch merging goes with the first block of the stage it feeds.
  EXPECT_EQ(swin.layer_id("features.2.reduction.weight"), 3);
  EXPECT_EQ(swin.layer_id("features.3.0.norm1.weight"), 3);
  EXPECT_EQ(swin.layer_id("features.5.5.attn.relative_position_bias_table"), 10);
  EXPECT_EQ(swin.layer_id("features.6.norm.weight"), 11);
  EXPECT_EQ(swin.layer_id("features.7.1.mlp.0.weight"), 12);
  EXPECT_EQ(swin.layer_id("norm.weight"), 13);
  EXPECT_EQ(swin.layer_id("head.weight"), 13);

  // In parameter order the ids climb one at a time from 0 to the last.
  int previous = 0;
  for (const auto& parameter : swin.named_parameters()) {
    const int id = swin.layer_id(parameter.key());
    EXPECT_TRUE(id == previous || id == previous + 1) << parameter.key() << " has " << id
                                                      << " after " << previous;
    previous = id;
  }
  EXPECT_EQ(previous, swin.num_layers() - 1);
}

TEST(SwinTest, LayerCountFollowsTheVariantsDepth) {
  auto model = MakeSwin("variant: SWIN_V2_S", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  // 2 + 2 + 18 + 2 blocks.
  EXPECT_EQ((*model)->num_layers(), 26);
  EXPECT_EQ((*model)->layer_id("features.7.1.attn.cpb_mlp.0.weight"), 24);
  EXPECT_EQ((*model)->layer_id("features.6.reduction.weight"), 23);
}

TEST(SwinTest, InitialisesLikeTorchvision) {
  auto model = MakeSwin("variant: SWIN_V2_T", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  auto parameters = (*model)->named_parameters();
  // Every Linear, the MLPs' included: truncated normal, std 0.02, zero bias.
  const torch::Tensor fc = parameters["features.5.0.mlp.0.weight"];
  EXPECT_NEAR(fc.std().item<double>(), 0.02, 0.001);
  EXPECT_TRUE(parameters["features.5.0.mlp.0.bias"].eq(0).all().item<bool>());
  EXPECT_TRUE(parameters["features.1.0.attn.qkv.bias"].eq(0).all().item<bool>());
  EXPECT_NEAR(parameters["head.weight"].std().item<double>(), 0.02, 0.003);
  // v2's logit scale starts at log(10) for every head.
  EXPECT_TRUE(torch::allclose(parameters["features.3.1.attn.logit_scale"],
                              torch::full({6, 1, 1}, std::log(10.0))));
  EXPECT_TRUE(parameters["features.3.1.norm2.weight"].eq(1).all().item<bool>());

  auto v1 = MakeSwin("variant: SWIN_T", ModelContext{10, 3});
  ASSERT_TRUE(v1.ok()) << v1.status();
  const torch::Tensor table =
      (*v1)->named_parameters()["features.5.0.attn.relative_position_bias_table"];
  EXPECT_NEAR(table.std().item<double>(), 0.02, 0.002);
}

TEST(SwinTest, StochasticDepthDropsBranchesInTrainingOnly) {
  torch::manual_seed(0);
  const torch::Tensor input = torch::randn({2, 3, 32, 32});
  torch::NoGradGuard no_grad;
  // Swin has no dropout or BatchNorm: two training passes differ only where
  // stochastic depth drew differently.
  auto dropping = MakeSwin("stochastic_depth_prob: 0.9", ModelContext{10, 3});
  ASSERT_TRUE(dropping.ok()) << dropping.status();
  EXPECT_FALSE(torch::equal((*dropping)->forward(input), (*dropping)->forward(input)));
  (*dropping)->eval();
  EXPECT_TRUE(torch::equal((*dropping)->forward(input), (*dropping)->forward(input)));

  auto keeping = MakeSwin("stochastic_depth_prob: 0", ModelContext{10, 3});
  ASSERT_TRUE(keeping.ok()) << keeping.status();
  EXPECT_TRUE(torch::equal((*keeping)->forward(input), (*keeping)->forward(input)));
}

TEST(SwinTest, ImagesSmallerThanAPatchAreAnErrorSayingWhatWorks) {
  auto model = MakeSwin("", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  (*model)->eval();
  torch::NoGradGuard no_grad;
  absl::StatusOr<torch::Tensor> too_small =
      CallTorch("forward", [&] { return (*model)->forward(torch::randn({1, 3, 3, 8})); });
  ASSERT_FALSE(too_small.ok());
  EXPECT_NE(too_small.status().message().find("swin takes N x C x H x W images of at least 4x4"),
            std::string::npos)
      << too_small.status();
  // One patch is enough, as in torchvision.
  absl::StatusOr<torch::Tensor> one_patch =
      CallTorch("forward", [&] { return (*model)->forward(torch::randn({1, 3, 4, 4})); });
  ASSERT_TRUE(one_patch.ok()) << one_patch.status();
  EXPECT_EQ(one_patch->sizes().vec(), (std::vector<int64_t>{1, 10}));
}

TEST(SwinTest, RejectsAStochasticDepthOutsideZeroToOne) {
  auto model = MakeSwin("stochastic_depth_prob: 1.5", ModelContext{10, 3});
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(model.status().message(),
            "options: stochastic_depth_prob: 1.5 is not a probability; choose a value from 0 "
            "to 1");
}

}  // namespace
}  // namespace pipeline
