#include <cmath>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/testing/model_test_util.h"
#include "pipeline/testing/parity_fixture.h"
#include "pipeline/testing/plugin_test_util.h"
#include "pipeline/testing/state_dict_fixture.h"
#include "torch/utils.h"

namespace pipeline {
namespace {

constexpr char kTestdata[] = "plugins/models/squeezenet/testdata/";

absl::StatusOr<std::unique_ptr<Model>> MakeSqueezeNet(const std::string& options,
                                                      const ModelContext& context) {
  return testing::CreatePlugin<Model>(
      testing::PluginText("squeezenet", "SqueezeNetOptions", options), context);
}

using testing::DeterministicInput;
using testing::FillDeterministically;
using testing::ReadLogits;

int64_t ParameterCount(const Model& model) {
  int64_t count = 0;
  for (const torch::Tensor& parameter : model.parameters()) count += parameter.numel();
  return count;
}

// One of torchvision's constructors and the variant that builds it.
struct TorchvisionVariant {
  const char* constructor;  // torchvision.models.<constructor>
  const char* variant;
  // Of its 1000-class model: the num_params of its ImageNet weights' meta.
  int64_t parameters;
};

// Names the variant in a failure message instead of the struct's bytes.
void PrintTo(const TorchvisionVariant& variant, std::ostream* os) { *os << variant.constructor; }

class SqueezeNetVariantTest : public ::testing::TestWithParam<TorchvisionVariant> {};

TEST_P(SqueezeNetVariantTest, StateDictMatchesTorchvision) {
  const TorchvisionVariant& variant = GetParam();
  auto model = MakeSqueezeNet(absl::StrCat("variant: ", variant.variant), ModelContext{1000, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_TRUE(testing::StateDictMatchesFixture(
      **model, absl::StrCat(kTestdata, "torchvision_", variant.constructor, "_state_dict.txt")));
  EXPECT_EQ(ParameterCount(**model), variant.parameters);
}

INSTANTIATE_TEST_SUITE_P(
    AllVariants, SqueezeNetVariantTest,
    ::testing::Values(TorchvisionVariant{"squeezenet1_0", "SQUEEZENET1_0", 1248424},
                      TorchvisionVariant{"squeezenet1_1", "SQUEEZENET1_1", 1235496}),
    [](const ::testing::TestParamInfo<TorchvisionVariant>& info) {
      return std::string(info.param.constructor);
    });

TEST(SqueezeNetTest, LogitsMatchTorchvisionForTheSameWeights) {
  auto model = MakeSqueezeNet("variant: SQUEEZENET1_1", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  FillDeterministically(**model);
  (*model)->eval();
  const torch::Tensor expected =
      ReadLogits(absl::StrCat(kTestdata, "torchvision_squeezenet1_1_parity_logits.txt"));
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

TEST(SqueezeNetTest, InitialisesLikeTorchvision) {
  auto model = MakeSqueezeNet("variant: SQUEEZENET1_1", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  auto parameters = (*model)->named_parameters();
  // Kaiming uniform with torch's defaults (fan_in, gain sqrt(2)): the last
  // Fire's 3x3 expand conv takes 64 x 9 inputs, so values within
  // +-sqrt(6 / 576) and std sqrt(2 / 576).
  const torch::Tensor expand = parameters["features.12.expand3x3.weight"];
  EXPECT_LE(expand.abs().max().item<double>(), std::sqrt(6.0 / 576));
  EXPECT_NEAR(expand.std().item<double>(), std::sqrt(2.0 / 576), 0.002);
  EXPECT_TRUE(parameters["features.12.expand3x3.bias"].eq(0).all().item<bool>());
  // The final convolution: normal, std 0.01.
  EXPECT_NEAR(parameters["classifier.1.weight"].std().item<double>(), 0.01, 0.0005);
  EXPECT_TRUE(parameters["classifier.1.bias"].eq(0).all().item<bool>());
}

TEST(SqueezeNetTest, DropoutActsInTrainingOnly) {
  // Dropping every feature leaves only the final convolution's bias, which
  // starts at 0.
  auto model = MakeSqueezeNet("variant: SQUEEZENET1_1 dropout: 1", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  torch::NoGradGuard no_grad;
  torch::manual_seed(0);
  const torch::Tensor input = torch::randn({2, 3, 32, 32});
  EXPECT_TRUE((*model)->forward(input).eq(0).all().item<bool>());
  (*model)->eval();
  EXPECT_FALSE((*model)->forward(input).eq(0).all().item<bool>());
}

TEST(SqueezeNetTest, RejectsADropoutOutsideZeroToOne) {
  auto model = MakeSqueezeNet("dropout: -0.1", ModelContext{10, 3});
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(model.status().message(),
            "options: dropout: -0.1 is not a probability from 0 to 1 (torch.nn.Dropout's range); "
            "set 0 to disable dropout");
}

}  // namespace
}  // namespace pipeline
