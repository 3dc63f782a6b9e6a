// The state_dict and logits against torchvision's, classes and channels
// from the context and the probability options' range are the model
// conformance suite's (conformance_test in BUILD).

#include <cmath>
#include <memory>
#include <ostream>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/layers/batch_norm.h"
#include "pipeline/testing/model_test_util.h"
#include "pipeline/testing/parity_fixture.h"
#include "pipeline/testing/plugin_test_util.h"
#include "torch/nn/modules/container/sequential.h"
#include "torch/nn/modules/dropout.h"
#include "torch/utils.h"

namespace pipeline {
namespace {

constexpr char kTestdata[] = "plugins/models/efficientnet/testdata/";

absl::StatusOr<std::unique_ptr<Model>> MakeEfficientNet(const std::string& options,
                                                        const ModelContext& context) {
  return testing::CreatePlugin<Model>(
      absl::StrCat("name: \"efficientnet\" options { "
                   "[type.googleapis.com/pipeline.EfficientNetOptions] { ",
                   options, " } }"),
      context);
}

using testing::DeterministicInput;
using testing::FillDeterministically;
using testing::ParameterShape;
using testing::ReadLogits;

// One of torchvision's constructors and the settings it passes to
// EfficientNet (torchvision/models/efficientnet.py).
struct Variant {
  const char* name;  // the options' enum value
  double dropout;
  double norm_eps;
  double norm_momentum;
};

// Names the variant in a failure message instead of the struct's bytes.
void PrintTo(const Variant& variant, std::ostream* os) { *os << variant.name; }

// torchvision's constructor name: efficientnet_b1, efficientnet_v2_s.
std::string TorchvisionName(const Variant& variant) {
  return absl::StrCat("efficientnet_", absl::AsciiStrToLower(variant.name));
}

std::string VariantTestName(const ::testing::TestParamInfo<Variant>& info) {
  return info.param.name;
}

// The smallest scaled V1 variant and the smallest V2 have logits fixtures
// too.
constexpr Variant kB1 = {"B1", 0.2, 1e-5, 0.1};
constexpr Variant kV2S = {"V2_S", 0.2, 1e-3, 0.1};
constexpr Variant kVariants[] = {
    {"B0", 0.2, 1e-5, 0.1},
    kB1,
    {"B2", 0.3, 1e-5, 0.1},
    {"B3", 0.3, 1e-5, 0.1},
    {"B4", 0.4, 1e-5, 0.1},
    {"B5", 0.4, 1e-3, 0.01},
    {"B6", 0.5, 1e-3, 0.01},
    {"B7", 0.5, 1e-3, 0.01},
    kV2S,
    {"V2_M", 0.3, 1e-3, 0.1},
    {"V2_L", 0.4, 1e-3, 0.1},
};

class EfficientNetVariantTest : public ::testing::TestWithParam<Variant> {};

TEST_P(EfficientNetVariantTest, TakesTorchvisionsDropoutAndBatchNormSettings) {
  auto model = MakeEfficientNet(absl::StrCat("variant: ", GetParam().name), ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  auto classifier = (*model)->named_children()["classifier"]->as<torch::nn::Sequential>();
  ASSERT_NE(classifier, nullptr);
  EXPECT_EQ(classifier->ptr(0)->as<torch::nn::Dropout>()->options.p(), GetParam().dropout);
  int batch_norms = 0;
  for (const auto& module : (*model)->modules(/*include_self=*/false)) {
    if (const auto* norm = module->as<BatchNorm2d>()) {
      ++batch_norms;
      EXPECT_EQ(norm->options.eps(), GetParam().norm_eps);
      EXPECT_EQ(norm->options.momentum().value(), GetParam().norm_momentum);
    }
  }
  EXPECT_GT(batch_norms, 0);
}

INSTANTIATE_TEST_SUITE_P(AllVariants, EfficientNetVariantTest, ::testing::ValuesIn(kVariants),
                         VariantTestName);

TEST(EfficientNetTest, AnExplicitDropoutOverridesTheVariantsOwn) {
  auto model = MakeEfficientNet("variant: B2 dropout: 0.1", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  auto classifier = (*model)->named_children()["classifier"]->as<torch::nn::Sequential>();
  EXPECT_EQ(classifier->ptr(0)->as<torch::nn::Dropout>()->options.p(), 0.1);
}

// Fills `variant` as torchvision_parity_logits.py does, runs it in eval mode
// in `dtype` on the script's input and expects the script's logits.
void ExpectTorchvisionsLogits(const Variant& variant, torch::Dtype dtype) {
  auto model = MakeEfficientNet(absl::StrCat("variant: ", variant.name), ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  FillDeterministically(**model);
  (*model)->to(dtype);
  (*model)->eval();
  const torch::Tensor expected = ReadLogits(
      absl::StrCat(kTestdata, "torchvision_", TorchvisionName(variant),
                   dtype == torch::kFloat64 ? "_float64" : "", "_parity_logits.txt"));
  ASSERT_TRUE(expected.defined());
  torch::NoGradGuard no_grad;
  const torch::Tensor logits =
      (*model)->forward(DeterministicInput().to(dtype)).to(torch::kFloat32);
  ASSERT_EQ(logits.sizes(), expected.sizes());
  const double tolerance = 2e-5 * expected.abs().max().item<double>();
  EXPECT_LE((logits - expected).abs().max().item<double>(), tolerance)
      << "C++:\n"
      << logits << "\ntorchvision:\n"
      << expected;
}

// The smallest scaled V1 variant (B0's is
// LogitsMatchTorchvisionForTheSameWeights above).
TEST(EfficientNetTest, B1LogitsMatchTorchvisionForTheSameWeights) {
  ExpectTorchvisionsLogits(kB1, torch::kFloat32);
}

// The smallest V2, through FusedMBConv blocks. Under the fixture's fill its
// activations grow to ~1e5 over 40 residual blocks, where float32 rounding
// alone moves the logits by as much (a 1e-6 change of the input moves
// torchvision's by half their size); in float64 that stays below 1e-6 of
// them, so both sides compare there (the script's --float64).
TEST(EfficientNetTest, V2SLogitsMatchTorchvisionForTheSameWeightsInFloat64) {
  ExpectTorchvisionsLogits(kV2S, torch::kFloat64);
}

TEST(EfficientNetTest, InitialisesLikeTorchvision) {
  auto model = MakeEfficientNet("", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  auto parameters = (*model)->named_parameters();
  // Kaiming normal, fan_out: the 1x1 head conv 320 -> 1280 gives std
  // sqrt(2 / 1280) (fan_in would give sqrt(2 / 320)).
  EXPECT_NEAR(parameters["features.8.0.weight"].std().item<double>(), std::sqrt(2.0 / 1280), 0.002);
  EXPECT_TRUE(parameters["features.1.0.block.1.fc1.bias"].eq(0).all().item<bool>());
  // The classifier: uniform in +-1 / sqrt(out_features), so std
  // 1 / sqrt(3 * 10).
  const torch::Tensor classifier = parameters["classifier.1.weight"];
  EXPECT_LE(classifier.abs().max().item<double>(), 1 / std::sqrt(10.0));
  EXPECT_NEAR(classifier.std().item<double>(), 1 / std::sqrt(30.0), 0.005);
  EXPECT_TRUE(parameters["classifier.1.bias"].eq(0).all().item<bool>());
  EXPECT_TRUE(parameters["features.0.1.weight"].eq(1).all().item<bool>());
}

TEST(EfficientNetTest, StochasticDepthDropsResidualBranchesInTrainingOnly) {
  torch::manual_seed(0);
  const torch::Tensor input = torch::randn({2, 3, 64, 64});
  torch::NoGradGuard no_grad;

  // In training (BatchNorm on batch statistics, dropout off) two passes
  // differ only where stochastic depth drew differently.
  auto dropping = MakeEfficientNet("dropout: 0 stochastic_depth_prob: 0.9", ModelContext{10, 3});
  ASSERT_TRUE(dropping.ok()) << dropping.status();
  EXPECT_FALSE(torch::equal((*dropping)->forward(input), (*dropping)->forward(input)));
  (*dropping)->eval();
  EXPECT_TRUE(torch::equal((*dropping)->forward(input), (*dropping)->forward(input)));

  auto keeping = MakeEfficientNet("dropout: 0 stochastic_depth_prob: 0", ModelContext{10, 3});
  ASSERT_TRUE(keeping.ok()) << keeping.status();
  EXPECT_TRUE(torch::equal((*keeping)->forward(input), (*keeping)->forward(input)));
}

TEST(EfficientNetTest, DropoutActsInTrainingOnly) {
  // Dropping every feature leaves only the classifier's bias, which starts
  // at 0.
  auto model = MakeEfficientNet("dropout: 1", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  torch::NoGradGuard no_grad;
  const torch::Tensor input = torch::randn({2, 3, 64, 64});
  EXPECT_TRUE((*model)->forward(input).eq(0).all().item<bool>());
  (*model)->eval();
  EXPECT_FALSE((*model)->forward(input).eq(0).all().item<bool>());
}

TEST(EfficientNetTest, AStochasticDepthProbabilityOutsideZeroToOneSaysWhatToChoose) {
  auto depth = MakeEfficientNet("stochastic_depth_prob: -0.2", ModelContext{10, 3});
  EXPECT_EQ(depth.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(depth.status().message(),
            "options: stochastic_depth_prob: -0.2 is not a probability; choose a value from 0 "
            "to 1");
}

}  // namespace
}  // namespace pipeline
