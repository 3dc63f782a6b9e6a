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
#include "pipeline/testing/state_dict_fixture.h"
#include "torch/utils.h"

namespace pipeline {
namespace {

using ::testing::HasSubstr;

constexpr char kTestdata[] = "plugins/models/googlenet/testdata/";

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

// Options, the fixture torchvision_state_dict_keys.py writes for the same
// constructor arguments, and torchvision's parameter count.
struct Variant {
  std::string options;
  std::string fixture;
  int64_t parameters;
};

void PrintTo(const Variant& variant, std::ostream* out) { *out << variant.options; }

class GoogLeNetVariantTest : public ::testing::TestWithParam<Variant> {};

TEST_P(GoogLeNetVariantTest, StateDictMatchesTorchvision) {
  auto model = MakeGoogLeNet(GetParam().options, ModelContext{1000, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_TRUE(
      testing::StateDictMatchesFixture(**model, absl::StrCat(kTestdata, GetParam().fixture)));
  int64_t parameters = 0;
  for (const torch::Tensor& parameter : (*model)->parameters()) parameters += parameter.numel();
  EXPECT_EQ(parameters, GetParam().parameters);
}

INSTANTIATE_TEST_SUITE_P(
    AuxLogitsOnAndOff, GoogLeNetVariantTest,
    ::testing::Values(Variant{"aux_logits: true", "torchvision_googlenet_state_dict.txt", 13004888},
                      Variant{"aux_logits: false",
                              "torchvision_googlenet_aux_logits_False_state_dict.txt", 6624904}),
    [](const ::testing::TestParamInfo<Variant>& info) {
      return info.param.options == "aux_logits: true" ? "WithAuxLogits" : "WithoutAuxLogits";
    });

TEST(GoogLeNetTest, LogitsMatchTorchvisionForTheSameWeights) {
  auto model = MakeGoogLeNet("", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  FillDeterministically(**model);
  (*model)->eval();
  const torch::Tensor expected =
      ReadLogits(absl::StrCat(kTestdata, "torchvision_googlenet_parity_logits.txt"));
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
