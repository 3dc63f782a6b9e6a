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

constexpr char kTestdata[] = "plugins/models/inception_v3/testdata/";

absl::StatusOr<std::unique_ptr<Model>> MakeInceptionV3(const std::string& options,
                                                       const ModelContext& context) {
  return testing::CreatePlugin<Model>(
      absl::StrCat("name: \"inception_v3\" options { "
                   "[type.googleapis.com/pipeline.InceptionV3Options] { ",
                   options, " } }"),
      context);
}

using testing::DeterministicInput;
using testing::FillDeterministically;
using testing::ReadLogits;

TEST(InceptionV3Test, LogitsMatchTorchvisionForTheSameWeights) {
  auto model = MakeInceptionV3("", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  FillDeterministically(**model);
  (*model)->eval();
  const torch::Tensor expected =
      ReadLogits(absl::StrCat(kTestdata, "torchvision_inception_v3_input_75_parity_logits.txt"));
  ASSERT_TRUE(expected.defined());
  torch::NoGradGuard no_grad;
  // Written with --input_size 75, Inception v3's smallest.
  const torch::Tensor logits = (*model)->forward(DeterministicInput(75));
  ASSERT_EQ(logits.sizes(), expected.sizes());
  // The same kernels run on both sides, so the logits agree to the last bit
  // here; the tolerance leaves room for another CPU or thread count.
  const double tolerance = 2e-5 * expected.abs().max().item<double>();
  EXPECT_LE((logits - expected).abs().max().item<double>(), tolerance)
      << "C++:\n"
      << logits << "\ntorchvision:\n"
      << expected;
}

// The auxiliary classifier needs 299x299 images in training (as in
// torchvision), the one case here at that size.
TEST(InceptionV3Test, AuxiliaryClassifierRunsInTrainingWithItsLossWeight) {
  torch::manual_seed(0);
  auto model = MakeInceptionV3("aux_loss_weight: 0.25", ModelContext{7, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  torch::NoGradGuard no_grad;
  (*model)->forward(torch::randn({2, 3, 299, 299}));
  const std::vector<AuxiliaryLogits> auxiliary = (*model)->auxiliary_logits();
  ASSERT_EQ(auxiliary.size(), 1u);
  EXPECT_EQ(auxiliary[0].logits.sizes().vec(), (std::vector<int64_t>{2, 7}));
  EXPECT_TRUE(auxiliary[0].logits.isfinite().all().item<bool>());
  EXPECT_EQ(auxiliary[0].loss_weight, 0.25);

  (*model)->eval();
  (*model)->forward(torch::randn({1, 3, 75, 75}));
  EXPECT_TRUE((*model)->auxiliary_logits().empty());
}

TEST(InceptionV3Test, WithoutAuxLogitsTrainingHasNoAuxiliaryClassifier) {
  auto model = MakeInceptionV3("aux_logits: false", ModelContext{7, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  torch::NoGradGuard no_grad;
  (*model)->forward(torch::randn({2, 3, 75, 75}));
  EXPECT_TRUE((*model)->auxiliary_logits().empty());
  EXPECT_EQ((*model)->head_prefixes(), (std::vector<std::string>{"fc."}));
}

TEST(InceptionV3Test, TransformInputRescalesImageNetNormalisedImages) {
  auto plain = MakeInceptionV3("", ModelContext{10, 3});
  auto transforming = MakeInceptionV3("transform_input: true", ModelContext{10, 3});
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_TRUE(transforming.ok()) << transforming.status();
  testing::CopyParameters(**plain, **transforming);
  (*plain)->eval();
  (*transforming)->eval();
  torch::NoGradGuard no_grad;
  const torch::Tensor images = DeterministicInput(75);
  // torchvision's _transform_input: x * (std / 0.5) + (mean - 0.5) / 0.5
  // per channel, with ImageNet's mean and std.
  const torch::Tensor scale = torch::tensor({0.229, 0.224, 0.225}).view({1, 3, 1, 1}) / 0.5;
  const torch::Tensor shift = (torch::tensor({0.485, 0.456, 0.406}).view({1, 3, 1, 1}) - 0.5) / 0.5;
  EXPECT_TRUE(torch::allclose((*transforming)->forward(images),
                              (*plain)->forward(images * scale + shift), 1e-4, 1e-6));
}

TEST(InceptionV3Test, InitialisesLikeTorchvision) {
  torch::manual_seed(0);
  auto model = MakeInceptionV3("", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  auto parameters = (*model)->named_parameters();
  // Truncated normal with std 0.1, cut at +-2 (so barely cut at all); the
  // auxiliary classifier's conv1 too, as torchvision's loop computes.
  for (const char* name :
       {"Mixed_7c.branch_pool.conv.weight", "AuxLogits.conv1.conv.weight", "fc.weight"}) {
    EXPECT_NEAR(parameters[name].std().item<double>(), 0.1, 0.005) << name;
    EXPECT_NEAR(parameters[name].mean().item<double>(), 0, 0.005) << name;
  }
  // The auxiliary classifier's fc: std 0.001.
  EXPECT_NEAR(parameters["AuxLogits.fc.weight"].std().item<double>(), 0.001, 0.0001);
  EXPECT_TRUE(parameters["Conv2d_1a_3x3.bn.weight"].eq(1).all().item<bool>());
  EXPECT_TRUE(parameters["Conv2d_1a_3x3.bn.bias"].eq(0).all().item<bool>());
}

TEST(InceptionV3Test, RejectsBadOptionsNamingTheField) {
  auto dropout = MakeInceptionV3("dropout: 1.5", ModelContext{10, 3});
  EXPECT_EQ(dropout.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(dropout.status().message(),
            "options: dropout: 1.5 is not a probability from 0 to 1 (torch.nn.Dropout's "
            "range); set 0 to disable dropout");
  auto weight = MakeInceptionV3("aux_loss_weight: -0.3", ModelContext{10, 3});
  EXPECT_EQ(weight.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(weight.status().message(),
            "options: aux_loss_weight: -0.3 is not a loss weight; choose 0 or more (0.4 is "
            "PyTorch's fine-tuning recipe's)");
  auto gray = MakeInceptionV3("transform_input: true", ModelContext{10, 1});
  EXPECT_EQ(gray.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(gray.status().message(), HasSubstr("transform_input: true rescales the 3 channels"));
}

}  // namespace
}  // namespace pipeline
