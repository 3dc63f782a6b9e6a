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

constexpr char kTestdata[] = "plugins/models/regnet/testdata/";

absl::StatusOr<std::unique_ptr<Model>> MakeRegNet(const std::string& variant,
                                                  const ModelContext& context) {
  return testing::CreatePlugin<Model>(
      absl::StrCat("name: \"regnet\" options { [type.googleapis.com/pipeline.RegNetOptions] { "
                   "variant: ",
                   variant, " } }"),
      context);
}

// An options enum value and torchvision's constructor.
struct Variant {
  const char* name;
  const char* torchvision_name;
};

// Names the variant in a failure message instead of the struct's bytes.
void PrintTo(const Variant& variant, std::ostream* os) { *os << variant.name; }

std::string VariantTestName(const ::testing::TestParamInfo<Variant>& info) {
  return info.param.name;
}

// Written by the tools/fixtures scripts; `kind` is state_dict or
// parity_logits.
std::string FixturePath(const Variant& variant, const std::string& kind) {
  return absl::StrCat(kTestdata, "torchvision_", variant.torchvision_name, "_", kind, ".txt");
}

constexpr Variant kX400mf = {"REGNET_X_400MF", "regnet_x_400mf"};
constexpr Variant kY400mf = {"REGNET_Y_400MF", "regnet_y_400mf"};

using testing::DeterministicInput;
using testing::FillDeterministically;
using testing::ReadLogits;

class RegNetVariantTest : public ::testing::TestWithParam<Variant> {};

// REGNET_Y_128GF (about 645 million parameters) is built here and nowhere
// else in the tests.
TEST_P(RegNetVariantTest, StateDictMatchesTorchvision) {
  auto model = MakeRegNet(GetParam().name, ModelContext{1000, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_TRUE(testing::StateDictMatchesFixture(**model, FixturePath(GetParam(), "state_dict")));
}

INSTANTIATE_TEST_SUITE_P(AllVariants, RegNetVariantTest,
                         ::testing::Values(kY400mf, Variant{"REGNET_Y_800MF", "regnet_y_800mf"},
                                           Variant{"REGNET_Y_1600MF", "regnet_y_1_6gf"},
                                           Variant{"REGNET_Y_3200MF", "regnet_y_3_2gf"},
                                           Variant{"REGNET_Y_8GF", "regnet_y_8gf"},
                                           Variant{"REGNET_Y_16GF", "regnet_y_16gf"},
                                           Variant{"REGNET_Y_32GF", "regnet_y_32gf"},
                                           Variant{"REGNET_Y_128GF", "regnet_y_128gf"}, kX400mf,
                                           Variant{"REGNET_X_800MF", "regnet_x_800mf"},
                                           Variant{"REGNET_X_1600MF", "regnet_x_1_6gf"},
                                           Variant{"REGNET_X_3200MF", "regnet_x_3_2gf"},
                                           Variant{"REGNET_X_8GF", "regnet_x_8gf"},
                                           Variant{"REGNET_X_16GF", "regnet_x_16gf"},
                                           Variant{"REGNET_X_32GF", "regnet_x_32gf"}),
                         VariantTestName);

class RegNetParityTest : public ::testing::TestWithParam<Variant> {};

TEST_P(RegNetParityTest, LogitsMatchTorchvisionForTheSameWeights) {
  auto model = MakeRegNet(GetParam().name, ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  FillDeterministically(**model);
  (*model)->eval();
  const torch::Tensor expected = ReadLogits(FixturePath(GetParam(), "parity_logits"));
  ASSERT_TRUE(expected.defined());
  torch::NoGradGuard no_grad;
  const torch::Tensor logits = (*model)->forward(DeterministicInput());
  ASSERT_EQ(logits.sizes(), expected.sizes());
  // The same kernels run on both sides; the tolerance leaves room for
  // another CPU or thread count.
  const double tolerance = 2e-5 * expected.abs().max().item<double>();
  EXPECT_LE((logits - expected).abs().max().item<double>(), tolerance)
      << "C++:\n"
      << logits << "\ntorchvision:\n"
      << expected;
}

// The smallest of each kind: without squeeze-and-excitation and with it.
INSTANTIATE_TEST_SUITE_P(SmallestOfEachKind, RegNetParityTest, ::testing::Values(kX400mf, kY400mf),
                         VariantTestName);

TEST(RegNetTest, InitialisesLikeTorchvision) {
  auto model = MakeRegNet("REGNET_Y_400MF", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  auto parameters = (*model)->named_parameters();
  // N(0, 2 / fan_out), fan_out = output channels x kernel area whatever the
  // groups: the stem's 3x3 conv to 32 channels gives sqrt(2 / 288) (fan_in
  // would give sqrt(2 / 27)), and block1-0's grouped 3x3 conv to 48
  // channels sqrt(2 / 432).
  EXPECT_NEAR(parameters["stem.0.weight"].std().item<double>(), std::sqrt(2.0 / 288), 0.01);
  const torch::Tensor grouped = parameters["trunk_output.block1.block1-0.f.b.0.weight"];
  ASSERT_EQ(grouped.size(0), 48);
  EXPECT_NEAR(grouped.std().item<double>(), std::sqrt(2.0 / 432), 0.01);
  // The squeeze-and-excitation convs keep PyTorch's default bias init,
  // uniform in +-1 / sqrt(fan_in), which torchvision does not override.
  const torch::Tensor se_bias = parameters["trunk_output.block1.block1-0.f.se.fc1.bias"];
  EXPECT_FALSE(se_bias.eq(0).all().item<bool>());
  EXPECT_LE(se_bias.abs().max().item<double>(), 1 / std::sqrt(48.0));
  // The classifier: N(0, 0.01), bias 0; BatchNorm: weight 1.
  EXPECT_NEAR(parameters["fc.weight"].std().item<double>(), 0.01, 0.001);
  EXPECT_TRUE(parameters["fc.bias"].eq(0).all().item<bool>());
  EXPECT_TRUE(parameters["stem.1.weight"].eq(1).all().item<bool>());
}

}  // namespace
}  // namespace pipeline
