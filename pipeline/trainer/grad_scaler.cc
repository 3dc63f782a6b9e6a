#include "pipeline/trainer/grad_scaler.h"

#include <cmath>

namespace pipeline {

GradScaler::GradScaler(const GradScalerConfig& config) : config_(config) {
  state_.scale = config.init_scale();
}

void GradScaler::Unscale(const std::vector<torch::Tensor>& parameters) const {
  torch::NoGradGuard no_grad;
  const float inverse = static_cast<float>(1.0 / state_.scale);
  for (const torch::Tensor& parameter : parameters) {
    torch::Tensor grad = parameter.grad();
    if (grad.defined()) grad.mul_(inverse);
  }
}

// torch._amp_update_scale_: the scale is a float32 in PyTorch; a growth that
// would overflow it is not applied.
void GradScaler::Update(bool found_inf) {
  if (found_inf) {
    state_.scale = static_cast<float>(state_.scale * config_.backoff_factor());
    state_.growth_tracker = 0;
    return;
  }
  const int64_t successful = state_.growth_tracker + 1;
  if (successful == config_.growth_interval()) {
    const float grown = static_cast<float>(state_.scale * config_.growth_factor());
    if (std::isfinite(grown)) state_.scale = grown;
    state_.growth_tracker = 0;
  } else {
    state_.growth_tracker = successful;
  }
}

}  // namespace pipeline
