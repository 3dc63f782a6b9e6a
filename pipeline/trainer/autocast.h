#ifndef PIPELINE_TRAINER_AUTOCAST_H_
#define PIPELINE_TRAINER_AUTOCAST_H_

#include "ATen/autocast_mode.h"
#include "pipeline/config/pipeline.pb.h"
#include "pipeline/util/autocast_compat.h"
#include "torch/types.h"

namespace pipeline {

// trainer.precision: BF16_AUTOCAST runs the forward pass (and its backward)
// of one step under autocast, for CPU and CUDA tensors alike (each device's
// autocast only sees its own tensors); FP16_AUTOCAST for CUDA tensors only
// (the trainer refuses it for strategies that run on the CPU). The cast
// cache holds low-precision copies of the weights and is cleared when the
// scope ends, before the optimizer changes them.
class AutocastScope {
 public:
  explicit AutocastScope(TrainerConfig::Precision precision)
      // AUTO is decided before training (compute_format.h) and never
      // reaches here; anything but the two autocasts runs in float32.
      : enabled_(precision == TrainerConfig::BF16_AUTOCAST ||
                 precision == TrainerConfig::FP16_AUTOCAST) {
    if (!enabled_) return;
    if (precision == TrainerConfig::BF16_AUTOCAST) {
      SetAutocastDtype(at::kCPU, at::kBFloat16);
      SetAutocastEnabled(at::kCPU, true);
    }
    SetAutocastDtype(at::kCUDA,
                     precision == TrainerConfig::FP16_AUTOCAST ? at::kHalf : at::kBFloat16);
    SetAutocastEnabled(at::kCUDA, true);
  }
  ~AutocastScope() {
    if (!enabled_) return;
    SetAutocastEnabled(at::kCPU, false);
    SetAutocastEnabled(at::kCUDA, false);
    at::autocast::clear_cache();
  }
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  const bool enabled_;
};

// A batch in the memory order the model's weights are kept in
// (trainer.memory_format, decided before training).
inline torch::Tensor ModelInput(const torch::Tensor& images, const TrainerConfig& trainer) {
  return trainer.memory_format() == MemoryFormat::CHANNELS_LAST && images.dim() == 4
             ? images.contiguous(at::MemoryFormat::ChannelsLast)
             : images;
}

}  // namespace pipeline

#endif  // PIPELINE_TRAINER_AUTOCAST_H_
