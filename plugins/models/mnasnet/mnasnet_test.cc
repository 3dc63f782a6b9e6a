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
#include "torch/utils.h"

namespace pipeline {
namespace {

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

}  // namespace
}  // namespace pipeline
