#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/interfaces/strategy.h"
#include "pipeline/testing/plugin_test_util.h"
#include "pipeline/util/torch_version.h"
#include "torch/cuda.h"
#include "torch/nn/modules/linear.h"
#include "torch/types.h"

namespace pipeline {
namespace {

using ::testing::HasSubstr;

// y = W x over flattened images.
class LinearModel : public Model {
 public:
  LinearModel() { linear = register_module("linear", torch::nn::Linear(4, 2)); }
  torch::Tensor forward(const torch::Tensor& images) override {
    return linear(images.flatten(1));
  }
  torch::nn::Linear linear{nullptr};
};

TEST(SingleDeviceTest, ForwardBackwardLeavesTheGradientOfTheLoss) {
  auto strategy = testing::CreatePlugin<Strategy>(R"pb(name: "single")pb");
  ASSERT_TRUE(strategy.ok()) << strategy.status();
  LinearModel model;
  ASSERT_TRUE((*strategy)->Prepare(model, {}).ok());
  const torch::Tensor images = torch::ones({3, 1, 2, 2});
  const torch::Tensor labels = torch::zeros({3}, torch::kLong);
  auto output = (*strategy)->ForwardBackward(
      model, images, labels,
      [](const torch::Tensor& logits, const torch::Tensor&) { return logits.sum(); });
  ASSERT_TRUE(output.ok()) << output.status();
  // d(sum of logits)/d(bias) = batch size for each output.
  EXPECT_TRUE(model.linear->bias.grad().equal(torch::full({2}, 3.0)));
  EXPECT_EQ(output->logits.sizes(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ((*strategy)->world_size(), 1);
  EXPECT_TRUE((*strategy)->is_primary());
}

TEST(SingleDeviceTest, TorchErrorsBecomeStatuses) {
  auto strategy = testing::CreatePlugin<Strategy>(R"pb(name: "single")pb");
  LinearModel model;
  auto output = (*strategy)->Forward(model, torch::ones({1, 3}));  // 3 features, not 4
  ASSERT_FALSE(output.ok());
  EXPECT_THAT(output.status().message(), HasSubstr("inference: "));
  EXPECT_THAT(output.status().message(), ::testing::Not(HasSubstr("\n")));
}

TEST(SingleDeviceTest, CudaWithoutCudaSaysWhatToDo) {
  if (torch::cuda::is_available()) GTEST_SKIP() << "this machine has CUDA";
  auto strategy = testing::CreatePlugin<Strategy>(
      R"pb(name: "single"
           options { [type.googleapis.com/pipeline.SingleDeviceOptions] { device: "cuda:0" } })pb");
  EXPECT_THAT(strategy.status().message(),
              HasSubstr(kCudaBuild ? "device: \"cuda:0\": no CUDA device is visible"
                                   : "device: \"cuda:0\" needs a CUDA build of the runner"));
}

// The loader assembles batches in pinned memory only for a CUDA device.
TEST(SingleDeviceTest, OnlyACudaDeviceAsksForPinnedBatches) {
  auto cpu = testing::CreatePlugin<Strategy>(R"pb(name: "single")pb");
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_FALSE((*cpu)->device().is_cuda());
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device to check the other case";
  auto cuda = testing::CreatePlugin<Strategy>(
      R"pb(name: "single"
           options { [type.googleapis.com/pipeline.SingleDeviceOptions] { device: "cuda:0" } })pb");
  ASSERT_TRUE(cuda.ok()) << cuda.status();
  EXPECT_TRUE((*cuda)->device().is_cuda());
}

TEST(SingleDeviceTest, UnknownDeviceIsRejected) {
  auto strategy = testing::CreatePlugin<Strategy>(
      R"pb(name: "single"
           options { [type.googleapis.com/pipeline.SingleDeviceOptions] { device: "tpu" } })pb");
  EXPECT_EQ(strategy.status().message(),
            "options: device: \"tpu\" is not a device; use \"cpu\" or \"cuda:0\"");
}

}  // namespace
}  // namespace pipeline
