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

constexpr char kTestdata[] = "plugins/models/shufflenet_v2/testdata/";

absl::StatusOr<std::unique_ptr<Model>> MakeShuffleNetV2(const std::string& options,
                                                        const ModelContext& context) {
  return testing::CreatePlugin<Model>(
      absl::StrCat("name: \"shufflenet_v2\" options { "
                   "[type.googleapis.com/pipeline.ShuffleNetV2Options] { ",
                   options, " } }"),
      context);
}

using testing::DeterministicInput;
using testing::FillDeterministically;
using testing::ParameterShape;
using testing::ReadLogits;

// A variant as the options name it, torchvision's constructor for it and
// its parameter count (torchvision's num_params).
struct Variant {
  std::string option;
  std::string torchvision_name;
  int64_t parameters;
};

void PrintTo(const Variant& variant, std::ostream* out) { *out << variant.option; }

class ShuffleNetV2VariantTest : public ::testing::TestWithParam<Variant> {};

TEST_P(ShuffleNetV2VariantTest, StateDictMatchesTorchvision) {
  auto model =
      MakeShuffleNetV2(absl::StrCat("variant: ", GetParam().option), ModelContext{1000, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_TRUE(testing::StateDictMatchesFixture(
      **model,
      absl::StrCat(kTestdata, "torchvision_", GetParam().torchvision_name, "_state_dict.txt")));
  int64_t parameters = 0;
  for (const torch::Tensor& parameter : (*model)->parameters()) parameters += parameter.numel();
  EXPECT_EQ(parameters, GetParam().parameters);
}

INSTANTIATE_TEST_SUITE_P(Variants, ShuffleNetV2VariantTest,
                         ::testing::Values(Variant{"X0_5", "shufflenet_v2_x0_5", 1366792},
                                           Variant{"X1_0", "shufflenet_v2_x1_0", 2278604},
                                           Variant{"X1_5", "shufflenet_v2_x1_5", 3503624},
                                           Variant{"X2_0", "shufflenet_v2_x2_0", 7393996}),
                         [](const ::testing::TestParamInfo<Variant>& info) {
                           return info.param.option;
                         });

TEST(ShuffleNetV2Test, LogitsMatchTorchvisionForTheSameWeights) {
  auto model = MakeShuffleNetV2("variant: X0_5", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  FillDeterministically(**model);
  (*model)->eval();
  const torch::Tensor expected =
      ReadLogits(absl::StrCat(kTestdata, "torchvision_shufflenet_v2_x0_5_parity_logits.txt"));
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

TEST(ShuffleNetV2Test, DefaultsToX1_0) {
  auto model = MakeShuffleNetV2("", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(ParameterShape(**model, "stage2.0.branch1.2.weight"),
            (std::vector<int64_t>{58, 24, 1, 1}));
  EXPECT_EQ(ParameterShape(**model, "fc.weight"), (std::vector<int64_t>{10, 1024}));
}

}  // namespace
}  // namespace pipeline
