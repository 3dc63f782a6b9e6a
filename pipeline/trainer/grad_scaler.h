#ifndef PIPELINE_TRAINER_GRAD_SCALER_H_
#define PIPELINE_TRAINER_GRAD_SCALER_H_

// Dynamic loss scaling for float16 training (trainer.precision:
// FP16_AUTOCAST), with torch.amp.GradScaler's semantics: the loss is
// multiplied by the scale before backward so that small float16 gradients do
// not flush to zero; the gradients are divided by it before the optimizer
// step; a step whose gradients hold an Inf or a NaN is skipped and the scale
// is multiplied by backoff_factor; after growth_interval finite steps in a
// row it is multiplied by growth_factor.

#include <cstdint>
#include <vector>

#include "pipeline/config/pipeline.pb.h"
#include "torch/types.h"

namespace pipeline {

class GradScaler {
 public:
  // What a checkpoint keeps, so a resumed run scales as an uninterrupted one.
  struct State {
    double scale = 0;
    int64_t growth_tracker = 0;  // finite steps in a row since the last change
  };

  explicit GradScaler(const GradScalerConfig& config);

  double scale() const { return state_.scale; }
  State state() const { return state_; }
  void Restore(const State& state) { state_ = state; }

  // The loss to run backward on.
  torch::Tensor Scale(const torch::Tensor& loss) const { return loss * state_.scale; }

  // Divides every defined gradient by the scale, in place (GradScaler's
  // unscale_, by the float32 reciprocal of the scale as it computes it).
  void Unscale(const std::vector<torch::Tensor>& parameters) const;

  // After a step: `found_inf` says whether its gradients held an Inf or a
  // NaN (the step was then skipped).
  void Update(bool found_inf);

 private:
  GradScalerConfig config_;
  State state_;
};

}  // namespace pipeline

#endif  // PIPELINE_TRAINER_GRAD_SCALER_H_
