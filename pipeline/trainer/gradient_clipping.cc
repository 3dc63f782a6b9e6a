#include "pipeline/trainer/gradient_clipping.h"

#include <cmath>
#include <limits>
#include <vector>

#include "torch/csrc/autograd/grad_mode.h"

namespace pipeline {
namespace {

std::vector<torch::Tensor> Gradients(Model& model) {
  std::vector<torch::Tensor> gradients;
  for (const torch::Tensor& parameter : model.parameters()) {
    if (parameter.grad().defined()) gradients.push_back(parameter.grad());
  }
  return gradients;
}

// torch.nn.utils.clip_grad_norm_'s total: the norm of the per-tensor norms
// (the max of the per-tensor maxima for norm_type 0 = inf), a tensor of the
// gradients' type, as PyTorch computes it.
torch::Tensor TotalNorm(const std::vector<torch::Tensor>& gradients, double norm_type) {
  std::vector<torch::Tensor> norms;
  norms.reserve(gradients.size());
  const bool infinity = norm_type == 0;
  for (const torch::Tensor& gradient : gradients) {
    norms.push_back(infinity ? gradient.detach().abs().max()
                             : at::linalg_vector_norm(gradient.detach(), norm_type));
  }
  const torch::Tensor stacked = torch::stack(norms);
  return infinity ? stacked.max() : at::linalg_vector_norm(stacked, norm_type);
}

}  // namespace

double ClipGradients(Model& model, const GradientClippingConfig& config) {
  // Called on every step: nothing to collect when clipping is off.
  if (config.max_value() <= 0 && config.max_norm() <= 0) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  torch::NoGradGuard no_grad;
  const std::vector<torch::Tensor> gradients = Gradients(model);
  if (config.max_value() > 0) {
    for (const torch::Tensor& gradient : gradients) {
      gradient.clamp_(-config.max_value(), config.max_value());
    }
  }
  if (config.max_norm() <= 0) return std::numeric_limits<double>::quiet_NaN();
  if (gradients.empty()) return 0.0;
  const torch::Tensor total = TotalNorm(gradients, config.norm_type());
  // PyTorch's arithmetic, op for op: max_norm / (total + 1e-6) is
  // reciprocal(total + 1e-6) * max_norm in the gradients' type, clamped to
  // 1 and multiplied in (by 1 where the norm is within bounds).
  const torch::Tensor coefficient =
      torch::clamp(torch::reciprocal(total + 1e-6) * config.max_norm(), c10::nullopt, 1.0);
  for (const torch::Tensor& gradient : gradients) gradient.mul_(coefficient);
  return total.item<double>();
}

}  // namespace pipeline
