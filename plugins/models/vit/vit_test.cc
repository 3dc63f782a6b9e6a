#include <cmath>
#include <cstdint>
#include <memory>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/testing/parity_fixture.h"
#include "pipeline/testing/plugin_test_util.h"
#include "pipeline/util/torch_status.h"
#include "pipeline/weights/pretrained.h"
#include "torch/utils.h"

namespace pipeline {
namespace {

constexpr char kTestdata[] = "plugins/models/vit/testdata/";

std::string VitText(const std::string& options) {
  return testing::PluginText("vit", "VisionTransformerOptions", options);
}

absl::StatusOr<std::unique_ptr<Model>> MakeVit(const std::string& options,
                                               const ModelContext& context) {
  return testing::CreatePlugin<Model>(VitText(options), context);
}

// A ViT small enough to build in milliseconds: patches of 4, hidden_dim 8.
std::string TinyVit(int image_size, const std::string& more = "") {
  return absl::StrCat("patch_size: 4 num_layers: 2 num_heads: 2 hidden_dim: 8 mlp_dim: 16 ",
                      "image_size: ", image_size, " ", more);
}

using testing::ReadLogits;

TEST(VitTest, LogitsMatchTorchvisionForTheSameWeights) {
  auto model = MakeVit("variant: B_32", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  testing::FillDeterministically(**model);
  (*model)->eval();
  const torch::Tensor expected =
      ReadLogits(absl::StrCat(kTestdata, "torchvision_vit_b_32_input_224_parity_logits.txt"));
  ASSERT_TRUE(expected.defined());
  torch::NoGradGuard no_grad;
  const torch::Tensor logits = (*model)->forward(testing::DeterministicInput(224));
  ASSERT_EQ(logits.sizes(), expected.sizes());
  // torch's eval-mode attention takes a fused path in Python, so the sums
  // run in another order than here: the logits agree to float rounding.
  const double tolerance = 1e-4 * expected.abs().max().item<double>();
  EXPECT_LE((logits - expected).abs().max().item<double>(), tolerance)
      << "C++:\n"
      << logits << "\ntorchvision:\n"
      << expected;
}

TEST(VitTest, InitialisesLikeTorchvision) {
  auto model = MakeVit(
      "patch_size: 16 num_layers: 1 num_heads: 4 hidden_dim: 256 mlp_dim: 512 image_size: 32",
      ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  auto parameters = (*model)->named_parameters();
  // The patch embedding: truncated normal of std sqrt(1 / fan_in).
  const torch::Tensor conv = parameters["conv_proj.weight"];
  EXPECT_NEAR(conv.std().item<double>(), std::sqrt(1.0 / (3 * 16 * 16)), 0.001);
  EXPECT_TRUE(parameters["conv_proj.bias"].eq(0).all().item<bool>());
  EXPECT_TRUE(parameters["class_token"].eq(0).all().item<bool>());
  EXPECT_NEAR(parameters["encoder.pos_embedding"].std().item<double>(), 0.02, 0.002);
  // The MLP: Xavier uniform, so std sqrt(2 / (fan_in + fan_out)), and
  // biases of std 1e-6.
  const std::string mlp = "encoder.layers.encoder_layer_0.mlp.";
  EXPECT_NEAR(parameters[mlp + "0.weight"].std().item<double>(), std::sqrt(2.0 / (256 + 512)),
              0.001);
  EXPECT_LT(parameters[mlp + "3.bias"].abs().max().item<double>(), 1e-5);
  EXPECT_GT(parameters[mlp + "3.bias"].abs().max().item<double>(), 0);
  // The head starts at zero, so every class starts equally likely.
  EXPECT_TRUE(parameters["heads.head.weight"].eq(0).all().item<bool>());
  EXPECT_TRUE(parameters["heads.head.bias"].eq(0).all().item<bool>());
}

// Layer-wise lr decay as timm groups a ViT: embeddings, then the encoder
// layers in order, then the final norm with the head.
TEST(VitTest, LayerIdsFollowTheEncoderLayers) {
  auto model = MakeVit(TinyVit(16), ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  const Model& vit = **model;
  EXPECT_EQ(vit.num_layers(), 4);  // 2 encoder layers
  EXPECT_EQ(vit.layer_id("class_token"), 0);
  EXPECT_EQ(vit.layer_id("conv_proj.weight"), 0);
  EXPECT_EQ(vit.layer_id("encoder.pos_embedding"), 0);
  EXPECT_EQ(vit.layer_id("encoder.layers.encoder_layer_0.ln_1.weight"), 1);
  EXPECT_EQ(vit.layer_id("encoder.layers.encoder_layer_0.self_attention.in_proj_weight"), 1);
  EXPECT_EQ(vit.layer_id("encoder.layers.encoder_layer_1.mlp.3.bias"), 2);
  EXPECT_EQ(vit.layer_id("encoder.ln.weight"), 3);
  EXPECT_EQ(vit.layer_id("heads.head.weight"), 3);
  // Every parameter in range, in the order the network runs.
  int previous = 0;
  for (const auto& item : vit.named_parameters()) {
    const int id = vit.layer_id(item.key());
    EXPECT_GE(id, previous) << item.key();
    EXPECT_LT(id, vit.num_layers()) << item.key();
    previous = id;
  }
}

// The tiny ViT's state for image size `image_size`, its position
// embeddings set as tools/fixtures/torchvision_vit_interpolate_embeddings.py
// sets them.
NamedTensors TinyVitWeights(int image_size) {
  auto model = MakeVit(TinyVit(image_size), ModelContext{10, 3});
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return {};
  testing::FillDeterministically(**model);
  return StateDictOf(**model);
}

TEST(VitTest, PositionEmbeddingsForAnotherImageSizeAreResampledAsTorchvision) {
  const NamedTensors weights = TinyVitWeights(16);  // a 4x4 grid
  auto model = MakeVit(TinyVit(28, "interpolate_position_embeddings: true"), ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  std::ostringstream log;
  const absl::Status loaded = LoadStateDict(**model, weights, "vit16.pt", &log);
  ASSERT_TRUE(loaded.ok()) << loaded;
  EXPECT_EQ(log.str(),
            "weights: loaded 32 of 32 tensors from vit16.pt\n"
            "weights: converted encoder.pos_embedding (file 1x17x8, model 1x50x8) to the "
            "model's shape, as its options ask\n");
  const torch::Tensor expected =
      ReadLogits(absl::StrCat(kTestdata, "torchvision_vit_interpolate_embeddings.txt"));
  ASSERT_TRUE(expected.defined());
  const torch::Tensor actual = (*model)->named_parameters()["encoder.pos_embedding"];
  ASSERT_EQ(actual.sizes(), (std::vector<int64_t>{1, 50, 8}));
  EXPECT_LE((actual[0] - expected).abs().max().item<double>(), 1e-6) << actual[0] << expected;
  // The rest is copied as it is.
  for (const auto& [name, tensor] : weights) {
    if (name == "conv_proj.weight") {
      EXPECT_TRUE((*model)->named_parameters()[name].equal(tensor));
    }
  }
}

TEST(VitTest, PositionEmbeddingsForAnotherImageSizeNeedTheOption) {
  const NamedTensors weights = TinyVitWeights(16);
  auto model = MakeVit(TinyVit(28), ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(LoadStateDict(**model, weights, "vit16.pt", nullptr).message(),
            "weights: vit16.pt does not fit this model (another architecture, depth or width?); "
            "encoder.pos_embedding: the file's (1x17x8) are for a 4x4 grid of patches "
            "(image_size 16 at patch size 4), this model's for 7x7 (image_size 28); set "
            "interpolate_position_embeddings: true in the vit options to resample them (bicubic, "
            "as torchvision's interpolate_embeddings), or image_size: 16 to match the file");
}

TEST(VitTest, ImagesOfAnotherSizeAreAnErrorThatSaysWhatToSet) {
  auto model = MakeVit(TinyVit(16), ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  (*model)->eval();
  EXPECT_TRUE(CallTorch("forward", [&] { return (*model)->forward(torch::zeros({1, 3, 16, 16})); })
                  .ok());
  const auto logits =
      CallTorch("forward", [&] { return (*model)->forward(torch::zeros({1, 3, 32, 24})); });
  EXPECT_EQ(logits.status().message(),
            "forward: vit: the images are 32x24 but this model takes 16x16 (its image_size): "
            "resize or crop them to that (a transform), or set image_size in the vit options to "
            "their size, a multiple of the patch size 4");
}

TEST(VitTest, RejectsOptionsThatDescribeNoViT) {
  EXPECT_EQ(testing::ValidationMessage<Model>(VitText("variant: B_32 image_size: 100")),
            "options: image_size: 100 is not a positive multiple of the patch size 32; choose "
            "one, such as 96 or 128");
  EXPECT_EQ(testing::ValidationMessage<Model>(VitText("hidden_dim: 100")),
            "options: hidden_dim: 100 does not split into num_heads: 12 heads; choose a "
            "multiple of 12");
  EXPECT_EQ(testing::ValidationMessage<Model>(VitText("num_layers: -1")),
            "options: num_layers: -1 is negative; set a positive count, or 0 for the variant's");
  EXPECT_EQ(testing::ValidationMessage<Model>(VitText("dropout: 2")),
            "options: dropout: 2 is not a probability from 0 to 1 (torch.nn.Dropout's range); "
            "set 0 to disable dropout");
  EXPECT_EQ(testing::ValidationMessage<Model>(VitText("attention_dropout: -0.5")),
            "options: attention_dropout: -0.5 is not a probability; choose a value from 0 to 1");
}

}  // namespace
}  // namespace pipeline
