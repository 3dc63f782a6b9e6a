#ifndef PIPELINE_TRAINER_GRADIENT_CLIPPING_H_
#define PIPELINE_TRAINER_GRADIENT_CLIPPING_H_

#include "pipeline/config/pipeline.pb.h"
#include "pipeline/interfaces/model.h"

namespace pipeline {

// trainer.clip_grad on `model`'s gradients, in place: first
// clip_grad_value_ (each element clamped to [-max_value, max_value]), then
// clip_grad_norm_ (all gradients scaled by max_norm / (total + 1e-6) when
// their total norm exceeds max_norm). Returns the total norm before norm
// clipping (PyTorch's return value), or NaN when norm clipping is off.
// Parameters without a gradient (frozen) take no part.
double ClipGradients(Model& model, const GradientClippingConfig& config);

}  // namespace pipeline

#endif  // PIPELINE_TRAINER_GRADIENT_CLIPPING_H_
