#include "pipeline/trainer/validation_hook.h"

#include "pipeline/data/device_maps.h"
#include "pipeline/trainer/autocast.h"
#include "pipeline/trainer/model_ema.h"
#include "pipeline/util/status_macros.h"
#include "pipeline/util/torch_status.h"
#include "torch/csrc/autograd/grad_mode.h"

namespace pipeline {

absl::StatusOr<Evaluation> Evaluate(TrainContext& context, DataPipeline& data,
                                    int64_t max_batches) {
  const TrainerConfig& trainer = context.config().trainer();
  const int rank = context.communicator().rank(), world = context.communicator().world_size();
  const std::vector<int64_t> order =
      data.sampler->EpochIndices(data.dataset->size(), context.position.epoch);
  std::vector<int64_t> shard;
  for (size_t i = rank; i < order.size(); i += world) shard.push_back(order[i]);
  data.loader->StartEpoch(context.position.epoch, std::move(shard));
  std::vector<double> sums = context.metrics().EmptySums();
  context.model().eval();
  {
    c10::InferenceMode inference;
    for (int64_t index = 0; max_batches == 0 || index < max_batches; ++index) {
      ASSIGN_OR_RETURN(std::optional<Batch> batch, data.loader->Next());
      if (!batch) break;
      ASSIGN_OR_RETURN(torch::Tensor images,
                       CallTorch("normalizing a validation batch on the device", [&] {
                         return FinishedImages(*batch, context.strategy().device());
                       }));
      torch::Tensor logits;
      {
        AutocastScope autocast(trainer.precision());
        ASSIGN_OR_RETURN(logits, context.strategy().Forward(context.model(),
                                                          ModelInput(images, trainer)));
      }
      // Summed in float32 whatever the forward pass ran in.
      logits = logits.to(at::kFloat);
      const double loss =
          context.loss().Compute(logits, batch->labels, at::Reduction::Sum).item<double>();
      context.metrics().Add(logits, batch->labels, loss, sums);
    }
  }
  context.model().train();
  RETURN_IF_ERROR(context.communicator().AllReduceSum(sums, "sum of the validation figures"));
  return Evaluation{context.metrics().Values(sums),
                    static_cast<int64_t>(MetricSet::Samples(sums))};
}

absl::Status ValidationHook::OnEpochEnd(TrainContext& context, EpochReport& epoch) {
  const TrainerConfig& trainer = context.config().trainer();
  const bool last = epoch.epoch == context.position.epochs;
  epoch.validated = epoch.epoch % trainer.validate_every_epochs() == 0 || last;
  if (epoch.validated) {
    ASSIGN_OR_RETURN(last_, Evaluate(context, data_, trainer.max_validation_batches()));
    epoch.validation_samples = last_.samples;
    if (context.ema != nullptr) {
      // The same model on the same device under the same strategy, with the
      // average's weights in it for the pass.
      context.ema->SwapWith(context.model());
      absl::StatusOr<Evaluation> averaged =
          Evaluate(context, data_, trainer.max_validation_batches());
      context.ema->SwapWith(context.model());
      if (!averaged.ok()) return averaged.status();
      last_ema_ = *std::move(averaged);
    }
  } else if (last_.figures.empty()) {
    last_.figures = context.metrics().Values(context.metrics().EmptySums());
    if (context.ema != nullptr) last_ema_.figures = last_.figures;
  }
  for (Figure figure : last_.figures) {
    figure.name = "val_" + figure.name;
    epoch.figures.push_back(std::move(figure));
  }
  for (Figure figure : last_ema_.figures) {
    figure.name = "val_" + figure.name + "_ema";
    // The epoch line keeps to the raw weights' figures, and the average's
    // top-1 accuracy.
    figure.on_epoch_line = figure.name == "val_acc_ema";
    epoch.figures.push_back(std::move(figure));
  }
  return absl::OkStatus();
}

}  // namespace pipeline
