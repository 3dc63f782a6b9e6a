// The training objective of a model with auxiliary classifiers
// (Model::auxiliary_logits, GoogLeNet's and Inception v3's): TrainingLoss,
// which every strategy back-propagates, adds each auxiliary loss times its
// weight, so the auxiliary heads learn; validation sees the main logits
// alone.

#include <memory>
#include <vector>

#include "ATen/ops/cross_entropy_loss.h"
#include "gtest/gtest.h"
#include "pipeline/data/loader.h"
#include "pipeline/interfaces/strategy.h"
#include "pipeline/testing/hook_test_util.h"
#include "pipeline/testing/tiny_models.h"
#include "pipeline/trainer/validation_hook.h"
#include "torch/autograd.h"

namespace pipeline {
namespace {

using testing::HookTestRun;
using testing::InOrderSampler;
using testing::ParseConfig;
using testing::TinyAuxiliaryModel;
using testing::TinyDataset;
using testing::TinyModel;

const LossFunction kCrossEntropy = [](const torch::Tensor& logits, const torch::Tensor& labels) {
  return at::cross_entropy_loss(logits, labels);
};

TEST(TrainingLossTest, AddsEachAuxiliaryLossTimesItsWeight) {
  torch::manual_seed(3);
  TinyAuxiliaryModel model(/*loss_weight=*/0.3);
  model.train();
  const torch::Tensor images = HookTestRun::Images(6);
  const torch::Tensor labels = HookTestRun::Labels(6);
  const torch::Tensor loss = TrainingLoss(model, model.forward(images), labels, kCrossEntropy);

  // The two heads' losses, computed apart from the same weights.
  const torch::Tensor features = images.flatten(1);
  const torch::Tensor main_loss = at::cross_entropy_loss(model.fc->forward(features), labels);
  const torch::Tensor aux_loss = at::cross_entropy_loss(model.aux->forward(features), labels);
  EXPECT_NEAR(loss.item<double>(), main_loss.item<double>() + 0.3 * aux_loss.item<double>(), 1e-6);
  ASSERT_GT(aux_loss.item<double>(), 0.1) << "the check needs an auxiliary loss to see";

  const torch::Tensor fc_grad = torch::autograd::grad({main_loss}, {model.fc->weight})[0];
  const torch::Tensor aux_grad = torch::autograd::grad({aux_loss}, {model.aux->weight})[0];
  loss.backward();
  // The auxiliary head learns from its own loss, weighted; the main head
  // from the main loss only.
  ASSERT_TRUE(model.aux->weight.grad().defined());
  EXPECT_GT(model.aux->weight.grad().abs().max().item<double>(), 0);
  EXPECT_TRUE(torch::allclose(model.aux->weight.grad(), 0.3 * aux_grad, 1e-5, 1e-7))
      << model.aux->weight.grad() << "\nexpected\n"
      << 0.3 * aux_grad;
  EXPECT_TRUE(torch::allclose(model.fc->weight.grad(), fc_grad, 1e-5, 1e-7));
}

TEST(TrainingLossTest, IsTheLossAloneAfterAnEvalForwardOrWithoutAuxiliaryHeads) {
  torch::manual_seed(3);
  const torch::Tensor images = HookTestRun::Images(6);
  const torch::Tensor labels = HookTestRun::Labels(6);
  TinyAuxiliaryModel auxiliary(/*loss_weight=*/0.3);
  auxiliary.train();
  auxiliary.forward(images);
  // An eval-mode pass leaves no auxiliary logits behind from the one before.
  auxiliary.eval();
  const torch::Tensor logits = auxiliary.forward(images);
  EXPECT_TRUE(auxiliary.auxiliary_logits().empty());
  EXPECT_EQ(TrainingLoss(auxiliary, logits, labels, kCrossEntropy).item<double>(),
            kCrossEntropy(logits, labels).item<double>());

  TinyModel plain;
  const torch::Tensor plain_logits = plain.forward(images);
  EXPECT_EQ(TrainingLoss(plain, plain_logits, labels, kCrossEntropy).item<double>(),
            kCrossEntropy(plain_logits, labels).item<double>());
}

TEST(TrainingLossTest, ValidationUsesTheMainLogitsAlone) {
  HookTestRun run(ParseConfig(""));
  auto owned = std::make_unique<TinyAuxiliaryModel>(/*loss_weight=*/0.3);
  TinyAuxiliaryModel& model = *owned;
  run.context().run.model = std::move(owned);
  DataPipeline data;
  data.dataset = std::make_unique<TinyDataset>(6);
  data.sampler = std::make_unique<InOrderSampler>();
  LoaderOptions options;
  options.batch_size = 4;
  options.num_workers = 1;
  data.loader =
      std::make_unique<Loader>(data.dataset.get(), std::vector<const Transform*>{}, options);
  model.train();

  absl::StatusOr<Evaluation> evaluation = Evaluate(run.context(), data, 0);
  ASSERT_TRUE(evaluation.ok()) << evaluation.status();
  EXPECT_EQ(model.aux_forwards, 0);
  std::vector<torch::Tensor> inputs;
  for (int64_t i = 0; i < 6; ++i) inputs.push_back(TinyDataset::Input(i));
  torch::NoGradGuard no_grad;
  const torch::Tensor labels = torch::arange(6, torch::kLong).remainder(3);
  const double main_loss =
      at::cross_entropy_loss(model.fc->forward(torch::cat(inputs).flatten(1)), labels)
          .item<double>();
  ASSERT_EQ(evaluation->figures[0].name, "loss");
  EXPECT_NEAR(evaluation->figures[0].value, main_loss, 1e-5);
}

}  // namespace
}  // namespace pipeline
