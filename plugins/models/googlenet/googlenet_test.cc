#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/testing/model_test_util.h"
#include "pipeline/testing/parity_fixture.h"
#include "pipeline/testing/plugin_test_util.h"
#include "torch/utils.h"

namespace pipeline {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<std::unique_ptr<Model>> MakeGoogLeNet(const std::string& options,
                                                     const ModelContext& context) {
  return testing::CreatePlugin<Model>(
      absl::StrCat("name: \"googlenet\" options { "
                   "[type.googleapis.com/pipeline.GoogLeNetOptions] { ",
                   options, " } }"),
      context);
}

using testing::DeterministicInput;
using testing::FillDeterministically;
using testing::ReadLogits;

TEST(GoogLeNetTest, AuxiliaryClassifiersRunInTrainingWithTheirLossWeight) {
  torch::manual_seed(0);
  auto model = MakeGoogLeNet("aux_loss_weight: 0.25", ModelContext{7, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  const torch::Tensor images = torch::randn({2, 3, 32, 32});
  torch::NoGradGuard no_grad;
  (*model)->forward(images);
  const std::vector<AuxiliaryLogits> auxiliary = (*model)->auxiliary_logits();
  ASSERT_EQ(auxiliary.size(), 2u);
  for (const AuxiliaryLogits& head : auxiliary) {
    EXPECT_EQ(head.logits.sizes().vec(), (std::vector<int64_t>{2, 7}));
    EXPECT_EQ(head.loss_weight, 0.25);
  }
  // aux1 and aux2 see different features.
  EXPECT_FALSE(torch::allclose(auxiliary[0].logits, auxiliary[1].logits));

  (*model)->eval();
  (*model)->forward(images);
  EXPECT_TRUE((*model)->auxiliary_logits().empty());
}

TEST(GoogLeNetTest, WithoutAuxLogitsTrainingHasNoAuxiliaryClassifiers) {
  auto model = MakeGoogLeNet("aux_logits: false", ModelContext{7, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  torch::NoGradGuard no_grad;
  (*model)->forward(torch::randn({2, 3, 32, 32}));
  EXPECT_TRUE((*model)->auxiliary_logits().empty());
  EXPECT_EQ((*model)->head_prefixes(), (std::vector<std::string>{"fc."}));
}

TEST(GoogLeNetTest, TransformInputRescalesImageNetNormalisedImages) {
  auto plain = MakeGoogLeNet("", ModelContext{10, 3});
  auto transforming = MakeGoogLeNet("transform_input: true", ModelContext{10, 3});
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_TRUE(transforming.ok()) << transforming.status();
  testing::CopyParameters(**plain, **transforming);
  (*plain)->eval();
  (*transforming)->eval();
  torch::NoGradGuard no_grad;
  const torch::Tensor images = DeterministicInput(32);
  // torchvision's _transform_input: x * (std / 0.5) + (mean - 0.5) / 0.5
  // per channel, with ImageNet's mean and std.
  const torch::Tensor scale = torch::tensor({0.229, 0.224, 0.225}).view({1, 3, 1, 1}) / 0.5;
  const torch::Tensor shift = (torch::tensor({0.485, 0.456, 0.406}).view({1, 3, 1, 1}) - 0.5) / 0.5;
  EXPECT_TRUE(torch::allclose((*transforming)->forward(images),
                              (*plain)->forward(images * scale + shift), 1e-4, 1e-6));
}

TEST(GoogLeNetTest, InitialisesLikeTorchvision) {
  torch::manual_seed(0);
  auto model = MakeGoogLeNet("", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  auto parameters = (*model)->named_parameters();
  // Truncated normal with std 0.01, cut at +-2 (so barely cut at all).
  for (const char* name : {"inception4e.branch2.1.conv.weight", "aux1.fc1.weight"}) {
    EXPECT_NEAR(parameters[name].std().item<double>(), 0.01, 0.0005) << name;
    EXPECT_NEAR(parameters[name].mean().item<double>(), 0, 0.0005) << name;
  }
  EXPECT_TRUE(parameters["conv1.bn.weight"].eq(1).all().item<bool>());
  EXPECT_TRUE(parameters["conv1.bn.bias"].eq(0).all().item<bool>());
}

TEST(GoogLeNetTest, RejectsBadOptionsNamingTheField) {
  auto dropout = MakeGoogLeNet("dropout_aux: 1.5", ModelContext{10, 3});
  EXPECT_EQ(dropout.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(dropout.status().message(),
            "options: dropout_aux: 1.5 is not a probability from 0 to 1 (torch.nn.Dropout's "
            "range); set 0 to disable dropout");
  auto weight = MakeGoogLeNet("aux_loss_weight: -0.3", ModelContext{10, 3});
  EXPECT_EQ(weight.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(weight.status().message(),
            "options: aux_loss_weight: -0.3 is not a loss weight; choose 0 or more (0.3 is the "
            "GoogLeNet paper's)");
  auto gray = MakeGoogLeNet("transform_input: true", ModelContext{10, 1});
  EXPECT_EQ(gray.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(gray.status().message(), HasSubstr("transform_input: true rescales the 3 channels"));
}

}  // namespace
}  // namespace pipeline
