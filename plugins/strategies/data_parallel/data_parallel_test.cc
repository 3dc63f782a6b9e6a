#include <map>
#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/interfaces/strategy.h"
#include "pipeline/testing/model_test_util.h"
#include "pipeline/testing/plugin_test_util.h"
#include "pipeline/testing/tiny_models.h"
#include "pipeline/util/torch_version.h"
#include "torch/cuda.h"
#include "torch/nn/modules/batchnorm.h"
#include "torch/nn/modules/linear.h"
#include "torch/optim/sgd.h"
#include "torch/types.h"
#include "torch/utils.h"

namespace pipeline {
namespace {

using ::testing::HasSubstr;

class TwoLayers : public Model {
 public:
  TwoLayers() {
    first = register_module("first", torch::nn::Linear(4, 6));
    second = register_module("second", torch::nn::Linear(6, 3));
  }
  torch::Tensor forward(const torch::Tensor& x) override {
    return second(torch::tanh(first(x.flatten(1))));
  }
  torch::nn::Linear first{nullptr}, second{nullptr};
};

ModelFactory TwoLayersFactory() {
  return []() -> absl::StatusOr<std::unique_ptr<Model>> { return std::make_unique<TwoLayers>(); };
}

torch::Tensor CrossEntropy(const torch::Tensor& logits, const torch::Tensor& labels) {
  return torch::nll_loss(torch::log_softmax(logits, 1), labels);
}

constexpr char kTwoReplicas[] = R"pb(name: "data_parallel")pb";

// k SGD steps of data_parallel over 2 replicas against single-device
// training on the same whole batches, for an even and an odd batch size.
void ExpectSameTrainingAsSingle(int64_t batch) {
  torch::manual_seed(0);
  auto parallel = testing::CreatePlugin<Strategy>(kTwoReplicas);
  auto single = testing::CreatePlugin<Strategy>(R"pb(name: "single")pb");
  ASSERT_TRUE(parallel.ok()) << parallel.status();
  ASSERT_TRUE(single.ok()) << single.status();
  TwoLayers model, reference;
  testing::CopyParameters(model, reference);
  ASSERT_TRUE((*parallel)->Prepare(model, TwoLayersFactory()).ok());
  ASSERT_TRUE((*single)->Prepare(reference, {}).ok());
  torch::optim::SGD optimizer(model.parameters(), torch::optim::SGDOptions(0.5).momentum(0.9));
  torch::optim::SGD reference_optimizer(reference.parameters(),
                                        torch::optim::SGDOptions(0.5).momentum(0.9));
  for (int step = 0; step < 4; ++step) {
    const torch::Tensor images = torch::randn({batch, 1, 2, 2});
    const torch::Tensor labels = torch::randint(0, 3, {batch}, torch::kLong);
    optimizer.zero_grad();
    reference_optimizer.zero_grad();
    auto ours = (*parallel)->ForwardBackward(model, images, labels, CrossEntropy);
    auto theirs = (*single)->ForwardBackward(reference, images, labels, CrossEntropy);
    ASSERT_TRUE(ours.ok()) << ours.status();
    ASSERT_TRUE(theirs.ok()) << theirs.status();
    EXPECT_NEAR(ours->loss.item<double>(), theirs->loss.item<double>(), 1e-6) << step;
    EXPECT_TRUE(torch::allclose(ours->logits, theirs->logits, 1e-5, 1e-6)) << step;
    optimizer.step();
    reference_optimizer.step();
  }
  auto expected = reference.named_parameters();
  for (const auto& p : model.named_parameters()) {
    EXPECT_TRUE(torch::allclose(p.value(), expected[p.key()], 1e-5, 1e-6)) << p.key();
    // The weights moved: the comparison is not between two untouched models.
    EXPECT_FALSE(p.value().equal(TwoLayers().named_parameters()[p.key()])) << p.key();
  }
}

TEST(DataParallelTest, TwoReplicasTrainLikeOneDeviceOnTheWholeBatch) {
  ExpectSameTrainingAsSingle(8);
}

TEST(DataParallelTest, AnOddBatchIsSplitUnevenlyAndWeightedByChunkSize) {
  ExpectSameTrainingAsSingle(7);
}

TEST(DataParallelTest, ABatchSmallerThanTheReplicasUsesFewerReplicas) {
  auto strategy = testing::CreatePlugin<Strategy>(
      R"pb(name: "data_parallel"
           options { [type.googleapis.com/pipeline.DataParallelOptions] { replicas: 3 } })pb");
  ASSERT_TRUE(strategy.ok()) << strategy.status();
  TwoLayers model, reference;
  testing::CopyParameters(model, reference);
  ASSERT_TRUE((*strategy)->Prepare(model, TwoLayersFactory()).ok());
  const torch::Tensor images = torch::randn({2, 4});
  const torch::Tensor labels = torch::tensor({0, 2}, torch::kLong);
  auto output = (*strategy)->ForwardBackward(model, images, labels, CrossEntropy);
  ASSERT_TRUE(output.ok()) << output.status();
  CrossEntropy(reference.forward(images), labels).backward();
  auto expected = reference.named_parameters();
  for (const auto& p : model.named_parameters()) {
    EXPECT_TRUE(torch::allclose(p.value().grad(), expected[p.key()].grad(), 1e-5, 1e-6));
  }
}

TEST(DataParallelTest, AccumulatedMicroBatchesEqualOneBigBatch) {
  torch::manual_seed(3);
  auto strategy = testing::CreatePlugin<Strategy>(kTwoReplicas);
  ASSERT_TRUE(strategy.ok()) << strategy.status();
  TwoLayers model, reference;
  testing::CopyParameters(model, reference);
  ASSERT_TRUE((*strategy)->Prepare(model, TwoLayersFactory()).ok());
  const torch::Tensor images = torch::randn({8, 4});
  const torch::Tensor labels = torch::randint(0, 3, {8}, torch::kLong);
  auto half = [](const torch::Tensor& logits, const torch::Tensor& labels) {
    return CrossEntropy(logits, labels) / 2;
  };
  for (int micro = 0; micro < 2; ++micro) {
    (*strategy)->SetGradientSynchronization(micro == 1);
    ASSERT_TRUE((*strategy)
                    ->ForwardBackward(model, images.narrow(0, 4 * micro, 4),
                                      labels.narrow(0, 4 * micro, 4), half)
                    .ok());
  }
  CrossEntropy(reference.forward(images), labels).backward();
  auto expected = reference.named_parameters();
  for (const auto& p : model.named_parameters()) {
    EXPECT_TRUE(torch::allclose(p.value().grad(), expected[p.key()].grad(), 1e-5, 1e-6))
        << p.key();
  }
}

// Each replica's auxiliary classifier (Model::auxiliary_logits) joins the
// loss of its own chunk, weighted as the chunk's main loss: the step is
// single-device training on the whole batch, auxiliary heads included.
TEST(DataParallelTest, AuxiliaryClassifiersTrainAsOnOneDevice) {
  torch::manual_seed(5);
  auto parallel = testing::CreatePlugin<Strategy>(kTwoReplicas);
  auto single = testing::CreatePlugin<Strategy>(R"pb(name: "single")pb");
  ASSERT_TRUE(parallel.ok()) << parallel.status();
  ASSERT_TRUE(single.ok()) << single.status();
  testing::TinyAuxiliaryModel model(/*loss_weight=*/0.4), reference(/*loss_weight=*/0.4);
  testing::CopyParameters(model, reference);
  const ModelFactory factory = []() -> absl::StatusOr<std::unique_ptr<Model>> {
    return std::make_unique<testing::TinyAuxiliaryModel>(0.4);
  };
  ASSERT_TRUE((*parallel)->Prepare(model, factory).ok());
  ASSERT_TRUE((*single)->Prepare(reference, {}).ok());
  const torch::Tensor images = torch::randn({7, 1, 2, 2});
  const torch::Tensor labels = torch::randint(0, 3, {7}, torch::kLong);
  double expected_loss = 0;
  {
    torch::NoGradGuard no_grad;
    const torch::Tensor features = images.flatten(1);
    expected_loss = CrossEntropy(reference.fc->forward(features), labels).item<double>() +
                    0.4 * CrossEntropy(reference.aux->forward(features), labels).item<double>();
  }
  auto ours = (*parallel)->ForwardBackward(model, images, labels, CrossEntropy);
  auto theirs = (*single)->ForwardBackward(reference, images, labels, CrossEntropy);
  ASSERT_TRUE(ours.ok()) << ours.status();
  ASSERT_TRUE(theirs.ok()) << theirs.status();
  EXPECT_NEAR(theirs->loss.item<double>(), expected_loss, 1e-6);
  EXPECT_NEAR(ours->loss.item<double>(), expected_loss, 1e-6);
  EXPECT_GT(model.aux->weight.grad().abs().max().item<double>(), 0);
  auto expected = reference.named_parameters();
  for (const auto& p : model.named_parameters()) {
    EXPECT_TRUE(torch::allclose(p.value().grad(), expected[p.key()].grad(), 1e-5, 1e-6))
        << p.key();
  }
}

TEST(DataParallelTest, InferenceRunsInTheCallersModeAndKeepsTheOrder) {
  auto strategy = testing::CreatePlugin<Strategy>(kTwoReplicas);
  ASSERT_TRUE(strategy.ok()) << strategy.status();
  TwoLayers model;
  ASSERT_TRUE((*strategy)->Prepare(model, TwoLayersFactory()).ok());
  const torch::Tensor images = torch::randn({5, 4});
  c10::InferenceMode inference;
  auto logits = (*strategy)->Forward(model, images);
  ASSERT_TRUE(logits.ok()) << logits.status();
  EXPECT_TRUE(torch::allclose(*logits, model.forward(images), 1e-6, 1e-7));
  EXPECT_TRUE(logits->is_inference());
}

// nn.DataParallel keeps the running statistics replica 0 computes.
TEST(DataParallelTest, BatchNormStatisticsComeFromReplicaZero) {
  class Normed : public Model {
   public:
    Normed() { norm = register_module("norm", torch::nn::BatchNorm1d(2)); }
    torch::Tensor forward(const torch::Tensor& x) override { return norm(x); }
    torch::nn::BatchNorm1d norm{nullptr};
  };
  auto strategy = testing::CreatePlugin<Strategy>(kTwoReplicas);
  ASSERT_TRUE(strategy.ok()) << strategy.status();
  Normed model, reference;
  ModelFactory factory = []() -> absl::StatusOr<std::unique_ptr<Model>> {
    return std::make_unique<Normed>();
  };
  ASSERT_TRUE((*strategy)->Prepare(model, factory).ok());
  const torch::Tensor x = torch::tensor({{1.0f, 2.0f}, {3.0f, 6.0f}, {100.0f, 50.0f}, {-9.0f, 1.0f}});
  auto output = (*strategy)->ForwardBackward(
      model, x, torch::tensor({0, 1, 0, 1}, torch::kLong), CrossEntropy);
  ASSERT_TRUE(output.ok()) << output.status();
  reference.forward(x.narrow(0, 0, 2));
  EXPECT_TRUE(torch::allclose(model.norm->running_mean, reference.norm->running_mean));
  EXPECT_TRUE(torch::allclose(model.norm->running_var, reference.norm->running_var));
}

TEST(DataParallelTest, AFailingReplicaIsAnErrorNotACrash) {
  auto strategy = testing::CreatePlugin<Strategy>(kTwoReplicas);
  ASSERT_TRUE(strategy.ok()) << strategy.status();
  TwoLayers model;
  ASSERT_TRUE((*strategy)->Prepare(model, TwoLayersFactory()).ok());
  auto output = (*strategy)->ForwardBackward(model, torch::randn({4, 5}),
                                             torch::zeros({4}, torch::kLong), CrossEntropy);
  EXPECT_THAT(output.status().message(), HasSubstr("data_parallel: training step"));
}

TEST(DataParallelTest, BadOptionsSayWhatIsValid) {
  EXPECT_THAT(testing::CreatePlugin<Strategy>(
                  R"pb(name: "data_parallel"
                       options { [type.googleapis.com/pipeline.DataParallelOptions] { replicas: 0 } })pb")
                  .status()
                  .message(),
              HasSubstr("replicas: 0; must be at least 1 on the cpu"));
  EXPECT_THAT(testing::CreatePlugin<Strategy>(
                  R"pb(name: "data_parallel"
                       options { [type.googleapis.com/pipeline.DataParallelOptions] { device: "tpu" } })pb")
                  .status()
                  .message(),
              HasSubstr("device: \"tpu\" is not one of \"cpu\", \"cuda\""));
  if (!torch::cuda::is_available()) {
    EXPECT_THAT(testing::CreatePlugin<Strategy>(
                    R"pb(name: "data_parallel"
                         options { [type.googleapis.com/pipeline.DataParallelOptions] { device: "cuda" } })pb")
                    .status()
                    .message(),
                HasSubstr(kCudaBuild ? "no CUDA device is visible" : "build with --config=cuda"));
  }
}

}  // namespace
}  // namespace pipeline
