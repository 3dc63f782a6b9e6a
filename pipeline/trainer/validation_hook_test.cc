#include "pipeline/trainer/validation_hook.h"

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "ATen/ops/cross_entropy_loss.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/data/loader.h"
#include "pipeline/testing/hook_test_util.h"
#include "pipeline/trainer/model_ema.h"

namespace pipeline {
namespace {

using ::testing::ElementsAre;
using testing::HookTestRun;
using testing::InOrderSampler;
using testing::ParseConfig;
using testing::TinyDataset;
using testing::TinyModel;

constexpr char kValidationSums[] = "sum of the validation figures";

DataPipeline TinyData(int64_t size, int batch_size = 4) {
  DataPipeline data;
  data.dataset = std::make_unique<TinyDataset>(size);
  data.sampler = std::make_unique<InOrderSampler>();
  LoaderOptions options;
  options.batch_size = batch_size;
  options.num_workers = 1;
  options.on_bad_sample = BadSamplePolicy::kDrop;
  data.loader = std::make_unique<Loader>(data.dataset.get(), std::vector<const Transform*>{},
                                         options);
  return data;
}

struct Expected {
  double loss_sum = 0;
  double correct = 0;
  double samples = 0;
};

// The loss and accuracy of `indices`, computed directly.
Expected Compute(TinyModel& model, const std::vector<int64_t>& indices) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> inputs;
  std::vector<int64_t> labels;
  for (int64_t index : indices) {
    inputs.push_back(TinyDataset::Input(index));
    labels.push_back(index % 3);
  }
  const torch::Tensor logits = model.forward(torch::cat(inputs));
  const torch::Tensor targets = torch::tensor(labels, torch::kLong);
  return {at::cross_entropy_loss(logits, targets, {}, at::Reduction::Sum).item<double>(),
          logits.argmax(1).eq(targets).sum().item<double>(),
          static_cast<double>(indices.size())};
}

std::vector<std::string> NamesOf(const std::vector<Figure>& figures) {
  std::vector<std::string> names;
  for (const Figure& figure : figures) names.push_back(figure.name);
  return names;
}

constexpr char kConfig[] = "metrics { name: \"accuracy\" }";

TEST(EvaluateTest, FiguresOfTheWholeSet) {
  HookTestRun run(ParseConfig(kConfig));
  DataPipeline data = TinyData(6);
  const Expected expected = Compute(run.model(), {0, 1, 2, 3, 4, 5});
  absl::StatusOr<Evaluation> evaluation = Evaluate(run.context(), data, 0);
  ASSERT_TRUE(evaluation.ok()) << evaluation.status();
  EXPECT_EQ(evaluation->samples, 6);
  ASSERT_THAT(NamesOf(evaluation->figures), ElementsAre("loss", "acc"));
  EXPECT_NEAR(evaluation->figures[0].value, expected.loss_sum / 6, 1e-5);
  EXPECT_DOUBLE_EQ(evaluation->figures[1].value, expected.correct / 6);
  // Back to training, and no gradients from the pass.
  EXPECT_TRUE(run.model().is_training());
  for (const torch::Tensor& parameter : run.model().parameters()) {
    EXPECT_FALSE(parameter.grad().defined());
  }
  EXPECT_THAT(run.communicator().calls(), ElementsAre(kValidationSums));
}

TEST(EvaluateTest, TheSetIsSplitBetweenTheRanksAndTheSumsAdded) {
  HookTestRun run(ParseConfig(kConfig), /*rank=*/1, /*world_size=*/2);
  DataPipeline data = TinyData(6);
  // This rank takes every second sample from the second on; rank 0 the rest.
  const Expected own = Compute(run.model(), {1, 3, 5});
  const Expected other = Compute(run.model(), {0, 2, 4});
  run.communicator().OtherRanksAdd(
      kValidationSums, {other.loss_sum, other.samples, other.correct, other.samples});
  absl::StatusOr<Evaluation> evaluation = Evaluate(run.context(), data, 0);
  ASSERT_TRUE(evaluation.ok()) << evaluation.status();
  EXPECT_EQ(evaluation->samples, 6);
  EXPECT_NEAR(evaluation->figures[0].value, (own.loss_sum + other.loss_sum) / 6, 1e-5);
  EXPECT_DOUBLE_EQ(evaluation->figures[1].value, (own.correct + other.correct) / 6);
}

TEST(EvaluateTest, AtMostMaxBatches) {
  HookTestRun run(ParseConfig(kConfig));
  DataPipeline data = TinyData(10, /*batch_size=*/4);
  const Expected expected = Compute(run.model(), {0, 1, 2, 3});
  absl::StatusOr<Evaluation> evaluation = Evaluate(run.context(), data, 1);
  ASSERT_TRUE(evaluation.ok()) << evaluation.status();
  EXPECT_EQ(evaluation->samples, 4);
  EXPECT_NEAR(evaluation->figures[0].value, expected.loss_sum / 4, 1e-5);
}

TEST(ValidationHookTest, ValidatesEveryNEpochsAndTheLastAndCarriesFiguresBetween) {
  HookTestRun run(ParseConfig("trainer { validate_every_epochs: 2 } metrics { name: \"accuracy\" }"));
  run.position().epochs = 5;
  ValidationHook hook(TinyData(6));
  ASSERT_NE(hook.loader(), nullptr);
  auto end_epoch = [&](int64_t number) {
    EpochReport epoch;
    epoch.epoch = number;
    epoch.figures = {{"train_loss", 1.0, true, false}, {"train_acc", 0.5, true, true}};
    run.position().epoch = number - 1;
    const absl::Status status = hook.OnEpochEnd(run.context(), epoch);
    EXPECT_TRUE(status.ok()) << status;
    return epoch;
  };

  // Before any validation: the names, at 0.
  const EpochReport first = end_epoch(1);
  EXPECT_FALSE(first.validated);
  EXPECT_EQ(first.validation_samples, 0);
  EXPECT_THAT(NamesOf(first.figures), ElementsAre("train_loss", "train_acc", "val_loss", "val_acc"));
  EXPECT_EQ(first.Value("val_loss"), 0.0);
  EXPECT_EQ(first.Value("val_acc"), 0.0);
  EXPECT_FALSE(first.Find("val_loss")->higher_is_better);
  EXPECT_TRUE(first.Find("val_acc")->higher_is_better);

  const Expected at_two = Compute(run.model(), {0, 1, 2, 3, 4, 5});
  const EpochReport second = end_epoch(2);
  EXPECT_TRUE(second.validated);
  EXPECT_EQ(second.validation_samples, 6);
  EXPECT_NEAR(second.Value("val_loss"), at_two.loss_sum / 6, 1e-5);
  EXPECT_DOUBLE_EQ(second.Value("val_acc"), at_two.correct / 6);
  EXPECT_EQ(second.Value("train_loss"), 1.0);

  // Weights that give every class the same logit: a new pass would find
  // the loss ln 3.
  {
    torch::NoGradGuard no_grad;
    for (torch::Tensor parameter : run.model().parameters()) parameter.zero_();
  }
  const EpochReport third = end_epoch(3);
  EXPECT_FALSE(third.validated);
  EXPECT_EQ(third.Value("val_loss"), second.Value("val_loss"));
  EXPECT_EQ(third.Value("val_acc"), second.Value("val_acc"));

  const EpochReport fourth = end_epoch(4);
  EXPECT_TRUE(fourth.validated);
  EXPECT_NEAR(fourth.Value("val_loss"), std::log(3.0), 1e-5);

  // The last epoch always validates.
  const EpochReport fifth = end_epoch(5);
  EXPECT_TRUE(fifth.validated);
  EXPECT_EQ(fifth.validation_samples, 6);
  EXPECT_THAT(run.communicator().calls(),
              ElementsAre(kValidationSums, kValidationSums, kValidationSums));
}

TEST(ValidationHookTest, FiguresWithoutMetricsAreTheLossOnly) {
  HookTestRun run(ParseConfig(""));
  run.position().epochs = 1;
  ValidationHook hook(TinyData(3));
  EpochReport epoch;
  epoch.epoch = 1;
  HOOK_TEST_ASSERT_OK(hook.OnEpochEnd(run.context(), epoch));
  EXPECT_TRUE(epoch.validated);
  EXPECT_THAT(NamesOf(epoch.figures), ElementsAre("val_loss"));
  EXPECT_EQ(epoch.validation_samples, 3);
}

// With trainer.ema the average is validated too, with its own weights, and
// the model keeps its own afterwards.
TEST(ValidationHookTest, TheEmaAverageIsValidatedBesideTheWeights) {
  HookTestRun run(ParseConfig("trainer { ema { decay: 0.5 } } metrics { name: \"accuracy\" }"));
  run.position().epochs = 1;
  ModelEma ema(run.config().trainer().ema(), run.model());  // the initial weights
  run.context().ema = &ema;
  const Expected averaged = Compute(run.model(), {0, 1, 2, 3, 4, 5});
  {
    torch::NoGradGuard no_grad;
    for (torch::Tensor parameter : run.model().parameters()) parameter.zero_();
  }
  ValidationHook hook(TinyData(6));
  EpochReport epoch;
  epoch.epoch = 1;
  HOOK_TEST_ASSERT_OK(hook.OnEpochEnd(run.context(), epoch));
  EXPECT_THAT(NamesOf(epoch.figures), ElementsAre("val_loss", "val_acc", "val_loss_ema",
                                                  "val_acc_ema"));
  EXPECT_NEAR(epoch.Value("val_loss"), std::log(3.0), 1e-5);
  EXPECT_NEAR(epoch.Value("val_loss_ema"), averaged.loss_sum / 6, 1e-5);
  EXPECT_DOUBLE_EQ(epoch.Value("val_acc_ema"), averaged.correct / 6);
  EXPECT_TRUE(epoch.Find("val_acc_ema")->on_epoch_line);
  EXPECT_FALSE(epoch.Find("val_loss_ema")->on_epoch_line);
  for (const torch::Tensor& parameter : run.model().parameters()) {
    EXPECT_EQ(parameter.abs().sum().item<double>(), 0.0);
  }
}

}  // namespace
}  // namespace pipeline
