#include "pipeline/trainer/checkpoint.h"

#include <cstdlib>
#include <string>

#include "gtest/gtest.h"
#include "torch/nn/modules/linear.h"
#include "torch/optim/sgd.h"

namespace pipeline {
namespace {

class TinyModel : public Model {
 public:
  TinyModel() : linear_(register_module("fc", torch::nn::Linear(3, 2))) {}
  torch::Tensor forward(const torch::Tensor& images) override { return linear_(images); }

 private:
  torch::nn::Linear linear_;
};

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/" + name;
}

TEST(CheckpointTest, KeepsTheLossScaleOfFloat16Runs) {
  TinyModel model;
  torch::optim::SGD optimizer(model.parameters(), torch::optim::SGDOptions(0.1));
  CheckpointContents contents{/*epoch=*/1, /*step=*/7, {"a", "b"}, "trainer {}"};
  contents.grad_scale = 8192;
  contents.grad_scaler_growth_tracker = 5;
  const std::string path = TempPath("fp16.pt");
  ASSERT_TRUE(WriteCheckpoint(path, model, optimizer, contents).ok());
  auto loaded = ReadCheckpoint(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->contents.step, 7);
  EXPECT_EQ(loaded->contents.grad_scale, 8192);
  EXPECT_EQ(loaded->contents.grad_scaler_growth_tracker, 5);
}

TEST(CheckpointTest, HasNoLossScaleWithoutFloat16) {
  TinyModel model;
  torch::optim::SGD optimizer(model.parameters(), torch::optim::SGDOptions(0.1));
  const std::string path = TempPath("fp32.pt");
  ASSERT_TRUE(
      WriteCheckpoint(path, model, optimizer, CheckpointContents{1, 7, {"a"}, "trainer {}"}).ok());
  auto loaded = ReadCheckpoint(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->contents.grad_scale, 0);
  EXPECT_EQ(loaded->model.size(), 2u);
}

}  // namespace
}  // namespace pipeline
