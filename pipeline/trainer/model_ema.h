#ifndef PIPELINE_TRAINER_MODEL_EMA_H_
#define PIPELINE_TRAINER_MODEL_EMA_H_

// An exponential moving average of a model's weights (trainer.ema), as
// timm's ModelEmaV3 keeps it: floating-point parameters and buffers are
// averaged, integer buffers (BatchNorm's num_batches_tracked) copied.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "pipeline/config/pipeline.pb.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/trainer/trainer_hook.h"
#include "torch/types.h"

namespace pipeline {

using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

class ModelEma {
 public:
  // Starts as a copy of `model`'s weights.
  ModelEma(const EmaConfig& config, Model& model);

  // timm's get_decay for optimizer step `step` (1-based: the step just
  // taken): 0 at the first (the average starts as the weights), then
  // `decay`, or under warm-up min(decay, 1 - (1 + (step - 1) / gamma)^-power).
  static double Decay(const EmaConfig& config, int64_t step);

  // After optimizer step `step` (1-based), when step % every_steps == 0:
  // ema = decay * ema + (1 - decay) * weights.
  void Update(Model& model, int64_t step);

  // The average under the model's state_dict names.
  const NamedTensors& values() const { return values_; }
  // From a checkpoint's: the same names and shapes as the model's, or an
  // error naming the first that differs.
  absl::Status Restore(const NamedTensors& saved);

  // Exchanges the model's weights and the average (twice restores both):
  // validation of the average runs the model itself, on its device, under
  // any strategy.
  void SwapWith(Model& model);

 private:
  EmaConfig config_;
  NamedTensors values_;
};

// Creates the average at the run's start (from the checkpoint's on a
// resume) and updates it after every applied optimizer step; first in the
// hook list, so step checkpoints hold the updated average.
class EmaHook : public TrainerHook {
 public:
  EmaHook(ModelEma& ema, const NamedTensors* resumed) : ema_(ema), resumed_(resumed) {}
  absl::Status OnRunStart(TrainContext& context) override;
  absl::Status OnStepEnd(TrainContext& context, const StepReport& step) override;

 private:
  ModelEma& ema_;
  const NamedTensors* resumed_;
};

}  // namespace pipeline

#endif  // PIPELINE_TRAINER_MODEL_EMA_H_
