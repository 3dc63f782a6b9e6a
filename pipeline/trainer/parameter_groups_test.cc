#include "pipeline/trainer/parameter_groups.h"

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "pipeline/layers/batch_norm.h"
#include "pipeline/testing/tiny_models.h"
#include "torch/nn/modules/container/sequential.h"
#include "torch/nn/modules/linear.h"
#include "torch/nn/modules/normalization.h"
#include "torch/types.h"

namespace pipeline {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

ParamGroupsConfig Config(const std::string& text) {
  ParamGroupsConfig config;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &config)) << text;
  return config;
}

// A model with a depth order, laid out as a small vision transformer: a
// stem (layer 0, with the class token and position embedding and the
// core's BatchNorm), two blocks (layers 1 and 2) and a final norm and head
// (layer 3).
class DepthNet : public Model {
 public:
  DepthNet() {
    class_token = register_parameter("class_token", torch::zeros({1, 1, 4}));
    pos_embedding = register_parameter("pos_embedding", torch::zeros({1, 2, 4}));
    stem = register_module("stem", torch::nn::Linear(4, 4));
    stem_bn = register_module("stem_bn", BatchNorm2d(4));
    blocks = register_module("blocks", torch::nn::Sequential(torch::nn::Linear(4, 4),
                                                             torch::nn::Linear(4, 4)));
    norm = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({4})));
    head = register_module("head", torch::nn::Linear(4, 3));
  }
  torch::Tensor forward(const torch::Tensor& images) override {
    return head(norm(blocks->forward(stem(images.flatten(1)))));
  }
  int num_layers() const override { return 4; }
  int layer_id(const std::string& name) const override {
    if (name.rfind("blocks.0.", 0) == 0) return 1;
    if (name.rfind("blocks.1.", 0) == 0) return 2;
    if (name.rfind("norm.", 0) == 0 || name.rfind("head.", 0) == 0) return 3;
    return 0;
  }

  torch::Tensor class_token, pos_embedding;
  torch::nn::Linear stem{nullptr};
  BatchNorm2d stem_bn{nullptr};
  torch::nn::Sequential blocks{nullptr};
  torch::nn::LayerNorm norm{nullptr};
  torch::nn::Linear head{nullptr};
};

// Each group as "lr_scale/weight_decay: name name ...", the names found by
// tensor identity in `model`.
std::vector<std::string> Layout(const OptimizerContext& context, Model& model) {
  std::vector<std::string> layout;
  for (const OptimizerParameterGroup& group : context.groups) {
    std::string line = absl::StrCat(group.lr_scale, "/",
                                    group.weight_decay ? absl::StrCat(*group.weight_decay) : "-",
                                    ":");
    for (const torch::Tensor& p : group.parameters) {
      for (const auto& item : model.named_parameters()) {
        if (item.value().is_same(p)) absl::StrAppend(&line, " ", item.key());
      }
    }
    layout.push_back(line);
  }
  return layout;
}

TEST(GroupParametersTest, WithoutAConfigEveryTrainableParameterIsInOneGroup) {
  DepthNet model;
  model.stem->weight.set_requires_grad(false);
  auto context = GroupParameters(ParamGroupsConfig(), model);
  ASSERT_TRUE(context.ok()) << context.status();
  ASSERT_EQ(context->groups.size(), 1u);
  EXPECT_EQ(context->groups[0].lr_scale, 1);
  EXPECT_FALSE(context->groups[0].weight_decay.has_value());
  EXPECT_EQ(context->groups[0].parameters.size(), model.parameters().size() - 1)
      << "a frozen parameter is not the optimizer's";
}

TEST(GroupParametersTest, BiasesThenEmbeddingsThenNormsAsTorchvisionsSetWeightDecay) {
  DepthNet model;
  auto context = GroupParameters(
      Config("bias_weight_decay: 0.5 embedding_weight_decay: 0.25 norm_weight_decay: 0"), model);
  ASSERT_TRUE(context.ok()) << context.status();
  // A norm's bias is a bias first (torchvision's custom keys come before
  // the norm classes); the core's BatchNorm and LayerNorm are both norms.
  EXPECT_THAT(Layout(*context, model),
              ElementsAre("1/0.25: class_token pos_embedding",
                          "1/-: stem.weight blocks.0.weight blocks.1.weight head.weight",
                          "1/0.5: stem.bias stem_bn.bias blocks.0.bias blocks.1.bias norm.bias "
                          "head.bias",
                          "1/0: stem_bn.weight norm.weight"));
}

TEST(GroupParametersTest, NoWeightDecayOnOneDimensionalParametersAsTimm) {
  DepthNet model;
  auto context = GroupParameters(Config("no_weight_decay_1d: true"), model);
  ASSERT_TRUE(context.ok()) << context.status();
  EXPECT_THAT(Layout(*context, model),
              ElementsAre("1/-: class_token pos_embedding stem.weight blocks.0.weight "
                          "blocks.1.weight head.weight",
                          "1/0: stem.bias stem_bn.weight stem_bn.bias blocks.0.bias "
                          "blocks.1.bias norm.weight norm.bias head.bias"));
}

TEST(GroupParametersTest, TheFirstMatchingPatternGivesTheLearningRateScale) {
  DepthNet model;
  auto context = GroupParameters(
      Config(R"pb(lr_scales { pattern: "head.*" lr_scale: 10 }
                  lr_scales { pattern: "blocks.?.*" lr_scale: 2 }
                  lr_scales { pattern: "*" lr_scale: 3 })pb"),
      model);
  ASSERT_TRUE(context.ok()) << context.status();
  EXPECT_THAT(Layout(*context, model),
              ElementsAre("3/-: class_token pos_embedding stem.weight stem.bias stem_bn.weight "
                          "stem_bn.bias norm.weight norm.bias",
                          "2/-: blocks.0.weight blocks.0.bias blocks.1.weight blocks.1.bias",
                          "10/-: head.weight head.bias"));
}

TEST(GroupParametersTest, LayerDecayScalesByDepthAndMultipliesThePatternScale) {
  DepthNet model;
  auto context = GroupParameters(
      Config(R"pb(layer_decay: 0.5 lr_scales { pattern: "head.*" lr_scale: 10 })pb"), model);
  ASSERT_TRUE(context.ok()) << context.status();
  // decay^(num_layers - 1 - layer): 0.125 for the stem, 1 for the norm.
  EXPECT_THAT(Layout(*context, model),
              ElementsAre("0.125/-: class_token pos_embedding stem.weight stem.bias "
                          "stem_bn.weight stem_bn.bias",
                          "0.25/-: blocks.0.weight blocks.0.bias",
                          "0.5/-: blocks.1.weight blocks.1.bias", "1/-: norm.weight norm.bias",
                          "10/-: head.weight head.bias"));
}

TEST(GroupParametersTest, APatternThatMatchesNothingIsAnErrorNamingIt) {
  testing::TinyConvNet model(3);
  auto context = GroupParameters(
      Config(R"pb(lr_scales { pattern: "fc.*" lr_scale: 10 }
                  lr_scales { pattern: "classifier.*" lr_scale: 10 })pb"),
      model);
  ASSERT_FALSE(context.ok());
  EXPECT_EQ(context.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(context.status().message(),
            "optimizer.param_groups.lr_scales[1].pattern: \"classifier.*\" matches no trainable "
            "parameter of the model (a glob over the whole name; the 6 trainable parameters are "
            "named like conv.weight, conv.bias, bn.weight, fc.bias)");
}

TEST(GroupParametersTest, LayerDecayWithoutADepthOrderIsAnError) {
  testing::TinyConvNet model(3);
  auto context = GroupParameters(Config("layer_decay: 0.75"), model);
  ASSERT_FALSE(context.ok());
  EXPECT_THAT(context.status().message(),
              HasSubstr("optimizer.param_groups.layer_decay: 0.75; this model has no depth order "
                        "(Model::num_layers() is 0), and only models with a depth order support "
                        "layer-wise learning-rate decay"));
}

TEST(DescribeParameterGroupsTest, CountsTensorsAndValues) {
  testing::TinyConvNet model(3);
  auto context = GroupParameters(Config("norm_weight_decay: 0"), model);
  ASSERT_TRUE(context.ok()) << context.status();
  // conv 4x1x3x3 + 4, fc 3x4 + 3; bn 4 + 4.
  EXPECT_THAT(DescribeParameterGroups(*context),
              ElementsAre("param group 0: 4 tensors (55 values), lr x1, weight_decay the "
                          "optimizer's",
                          "param group 1: 2 tensors (8 values), lr x1, weight_decay 0"));
}

}  // namespace
}  // namespace pipeline
