#include "pipeline/trainer/cuda_graph_step.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/testing/tiny_models.h"

namespace pipeline {
namespace {

using ::testing::HasSubstr;

// A strategy on `device` that captures or not as told; it never trains.
class FakeStrategy : public Strategy {
 public:
  FakeStrategy(const std::string& device, bool capturable)
      : device_(device), capturable_(capturable) {}
  absl::Status Prepare(Model&, const ModelFactory&) override { return absl::OkStatus(); }
  absl::StatusOr<StepOutput> ForwardBackward(Model&, const torch::Tensor&, const torch::Tensor&,
                                             const LossFunction&) override {
    return absl::UnimplementedError("not here");
  }
  absl::StatusOr<torch::Tensor> Forward(Model&, const torch::Tensor&) override {
    return absl::UnimplementedError("not here");
  }
  torch::Device device() const override { return device_; }
  absl::Status CanCaptureCudaGraphs() const override {
    return capturable_ ? absl::OkStatus() : Strategy::CanCaptureCudaGraphs();
  }

 private:
  torch::Device device_;
  bool capturable_;
};

TrainerConfig WithGraphs() {
  TrainerConfig trainer;
  trainer.set_cuda_graphs(true);
  return trainer;
}

TEST(CheckCudaGraphsTest, OffIsAlwaysFine) {
  EXPECT_TRUE(CheckCudaGraphs(TrainerConfig(), FakeStrategy("cpu", false), "single", false).ok());
}

TEST(CheckCudaGraphsTest, ACapturableStrategyOnCudaPasses) {
  EXPECT_TRUE(CheckCudaGraphs(WithGraphs(), FakeStrategy("cuda:0", true), "single", true).ok());
}

TEST(CheckCudaGraphsTest, EachObstacleIsNamedWithTheWayOut) {
  const FakeStrategy on_cuda("cuda:0", true);
  const absl::Status cpu_build = CheckCudaGraphs(WithGraphs(), on_cuda, "single", false);
  EXPECT_THAT(cpu_build.message(), HasSubstr("needs a CUDA build of the runner"));
  EXPECT_EQ(cpu_build.code(), absl::StatusCode::kInvalidArgument);

  const absl::Status on_cpu =
      CheckCudaGraphs(WithGraphs(), FakeStrategy("cpu", true), "single", true);
  EXPECT_THAT(on_cpu.message(),
              HasSubstr("needs the model on a CUDA device, and strategy single runs on cpu"));

  const absl::Status not_capturable =
      CheckCudaGraphs(WithGraphs(), FakeStrategy("cuda:0", false), "data_parallel", true);
  EXPECT_THAT(not_capturable.message(),
              HasSubstr("strategy data_parallel has no step a CUDA graph can capture; use "
                        "strategy single"));

  TrainerConfig accumulating = WithGraphs();
  accumulating.set_accumulate_steps(4);
  EXPECT_THAT(CheckCudaGraphs(accumulating, on_cuda, "single", true).message(),
              HasSubstr("accumulate_steps: 4: a captured backward writes the gradients"));

  TrainerConfig fp16 = WithGraphs();
  fp16.set_precision(TrainerConfig::FP16_AUTOCAST);
  EXPECT_THAT(CheckCudaGraphs(fp16, on_cuda, "single", true).message(),
              HasSubstr("FP16_AUTOCAST: its loss scaler decides on the host"));
}

// Without a CUDA build nothing is captured: every step is the strategy's.
TEST(CudaGraphStepTest, WithoutCudaEveryStepIsTheStrategys) {
  if (kCudaBuild) GTEST_SKIP() << "a CUDA build captures; tests/cuda_test checks it on a GPU";
  FakeStrategy strategy("cpu", true);
  std::string said;
  CudaGraphStep step([&](const std::string& line) { said += line; });
  testing::TinyModel model;
  for (int i = 0; i < CudaGraphStep::kWarmupSteps + 2; ++i) {
    auto output = step.ForwardBackward(strategy, model, torch::Tensor(),
                                       torch::Tensor(), nullptr);
    EXPECT_EQ(output.status().message(), "not here");
  }
  EXPECT_FALSE(step.captured());
  EXPECT_EQ(said, "");
}

}  // namespace
}  // namespace pipeline
