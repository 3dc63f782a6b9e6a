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

constexpr char kTestdata[] = "plugins/models/mnasnet/testdata/";

absl::StatusOr<std::unique_ptr<Model>> MakeMnasNet(const std::string& options,
                                                   const ModelContext& context) {
  return testing::CreatePlugin<Model>(
      absl::StrCat("name: \"mnasnet\" options { "
                   "[type.googleapis.com/pipeline.MnasNetOptions] { ",
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

class MnasNetVariantTest : public ::testing::TestWithParam<Variant> {};

TEST_P(MnasNetVariantTest, StateDictMatchesTorchvision) {
  auto model = MakeMnasNet(absl::StrCat("variant: ", GetParam().option), ModelContext{1000, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_TRUE(testing::StateDictMatchesFixture(
      **model,
      absl::StrCat(kTestdata, "torchvision_", GetParam().torchvision_name, "_state_dict.txt")));
  int64_t parameters = 0;
  for (const torch::Tensor& parameter : (*model)->parameters()) parameters += parameter.numel();
  EXPECT_EQ(parameters, GetParam().parameters);
}

INSTANTIATE_TEST_SUITE_P(Variants, MnasNetVariantTest,
                         ::testing::Values(Variant{"MNASNET0_5", "mnasnet0_5", 2218512},
                                           Variant{"MNASNET0_75", "mnasnet0_75", 3170208},
                                           Variant{"MNASNET1_0", "mnasnet1_0", 4383312},
                                           Variant{"MNASNET1_3", "mnasnet1_3", 6282256}),
                         [](const ::testing::TestParamInfo<Variant>& info) {
                           return info.param.option;
                         });

TEST(MnasNetTest, LogitsMatchTorchvisionForTheSameWeights) {
  auto model = MakeMnasNet("variant: MNASNET0_5", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  FillDeterministically(**model);
  (*model)->eval();
  const torch::Tensor expected =
      ReadLogits(absl::StrCat(kTestdata, "torchvision_mnasnet0_5_parity_logits.txt"));
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

TEST(MnasNetTest, DefaultsToMnasNet1_0) {
  auto model = MakeMnasNet("", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(ParameterShape(**model, "layers.0.weight"), (std::vector<int64_t>{32, 3, 3, 3}));
  EXPECT_EQ(ParameterShape(**model, "classifier.1.weight"), (std::vector<int64_t>{10, 1280}));
}

TEST(MnasNetTest, BatchNormMomentumIsTorchvisions) {
  auto model = MakeMnasNet("variant: MNASNET0_5", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  // One training step moves the running mean by 1 - 0.9997 of the way to
  // the batch's mean (torch's default momentum would move it by 0.1).
  auto buffers = (*model)->named_buffers();
  torch::Tensor running_mean = buffers["layers.1.running_mean"];
  ASSERT_TRUE(running_mean.eq(0).all().item<bool>());
  torch::manual_seed(0);
  torch::NoGradGuard no_grad;
  const torch::Tensor images = torch::randn({4, 3, 8, 8}) + 1;
  (*model)->forward(images);
  auto conv = (*model)->named_parameters()["layers.0.weight"];
  const torch::Tensor batch_mean =
      torch::conv2d(images, conv, {}, /*stride=*/{2, 2}, /*padding=*/{1, 1}).mean({0, 2, 3});
  EXPECT_TRUE(torch::allclose(running_mean, (1 - 0.9997) * batch_mean, 1e-5, 1e-8))
      << running_mean << "\n"
      << batch_mean;
}

TEST(MnasNetTest, InitialisesLikeTorchvision) {
  torch::manual_seed(0);
  auto model = MakeMnasNet("variant: MNASNET1_0", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  auto parameters = (*model)->named_parameters();
  // Kaiming normal, fan out: the last 1x1 conv 320 -> 1280 has std
  // sqrt(2 / 1280) (fan in would give sqrt(2 / 320)).
  EXPECT_NEAR(parameters["layers.14.weight"].std().item<double>(), std::sqrt(2.0 / 1280), 0.002);
  // The classifier: Kaiming uniform, fan out (10 classes), gain 1: bound
  // sqrt(3 / 10), so std sqrt(1 / 10); a zero bias.
  const torch::Tensor classifier = parameters["classifier.1.weight"];
  EXPECT_LE(classifier.abs().max().item<double>(), std::sqrt(3.0 / 10));
  EXPECT_NEAR(classifier.std().item<double>(), std::sqrt(1.0 / 10), 0.01);
  EXPECT_TRUE(parameters["classifier.1.bias"].eq(0).all().item<bool>());
}

TEST(MnasNetTest, RejectsADropoutOutsideZeroToOne) {
  auto model = MakeMnasNet("dropout: 1.5", ModelContext{10, 3});
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(model.status().message(),
            "options: dropout: 1.5 is not a probability from 0 to 1 (torch.nn.Dropout's range); "
            "set 0 to disable dropout");
}

}  // namespace
}  // namespace pipeline
