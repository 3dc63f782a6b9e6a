#include "plugins/optimizers/lamb/lamb_optimizer.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "pipeline/util/optimizer_state_key.h"
#include "torch/types.h"
#include "torch/utils.h"

namespace pipeline {

void LambParamGroupOptions::serialize(torch::serialize::OutputArchive& archive) const {
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(lr);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(beta1);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(beta2);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(eps);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(weight_decay);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(bias_correction);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(grad_averaging);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(trust_clip);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(always_adapt);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(exclude_1d);
}

void LambParamGroupOptions::serialize(torch::serialize::InputArchive& archive) {
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, lr);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, beta1);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, beta2);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, eps);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, weight_decay);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, bias_correction);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, grad_averaging);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, trust_clip);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, always_adapt);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, exclude_1d);
}

void LambParamState::serialize(torch::serialize::OutputArchive& archive) const {
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(step);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(exp_avg);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(exp_avg_sq);
}

void LambParamState::serialize(torch::serialize::InputArchive& archive) {
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(int64_t, step);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(torch::Tensor, exp_avg);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(torch::Tensor, exp_avg_sq);
}

torch::Tensor Lamb::GradientDivisor() const {
  if (max_grad_norm_ <= 0) return {};
  // timm: the norm of the stacked gradient norms of every group, kept a
  // tensor so that nothing waits for the device.
  std::vector<torch::Tensor> norms;
  for (const auto& group : param_groups_) {
    for (const auto& p : group.params()) {
      if (p.grad().defined()) norms.push_back(p.grad().norm());
    }
  }
  if (norms.empty()) return {};
  return (torch::stack(norms).norm() / max_grad_norm_).clamp_min(1.0);
}

torch::Tensor Lamb::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  torch::Tensor loss;
  if (closure != nullptr) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  const torch::Tensor divisor = GradientDivisor();
  for (auto& group : param_groups_) {
    const auto& options = static_cast<const LambParamGroupOptions&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      const torch::Tensor grad = divisor.defined() ? p.grad() / divisor : p.grad();
      const OptimizerStateKey key = OptimizerStateKeyOf(p);
      if (state_.find(key) == state_.end()) {
        auto fresh = std::make_unique<LambParamState>();
        fresh->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        fresh->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        state_[key] = std::move(fresh);
      }
      auto& state = static_cast<LambParamState&>(*state_[key]);
      // Per parameter, as torch's Adam counts; timm counts per group, which
      // is the same while every parameter of a group has a gradient.
      state.step(state.step() + 1);
      const double beta1 = options.beta1(), beta2 = options.beta2();
      double correction1 = 1, correction2 = 1;
      if (options.bias_correction()) {
        correction1 = 1 - std::pow(beta1, state.step());
        correction2 = 1 - std::pow(beta2, state.step());
      }
      state.exp_avg().mul_(beta1).add_(grad, options.grad_averaging() ? 1 - beta1 : 1.0);
      state.exp_avg_sq().mul_(beta2).addcmul_(grad, grad, 1 - beta2);
      const torch::Tensor denom =
          (state.exp_avg_sq().sqrt() / std::sqrt(correction2)).add_(options.eps());
      torch::Tensor update = (state.exp_avg() / correction1).div_(denom);
      const double weight_decay =
          options.exclude_1d() && p.dim() <= 1 ? 0.0 : options.weight_decay();
      if (weight_decay != 0) update.add_(p, weight_decay);
      if (weight_decay != 0 || options.always_adapt()) {
        const torch::Tensor w_norm = p.norm();
        const torch::Tensor g_norm = update.norm();
        const torch::Tensor one = torch::ones_like(w_norm);
        torch::Tensor trust_ratio = torch::where(
            w_norm > 0, torch::where(g_norm > 0, w_norm / g_norm, one), one);
        if (options.trust_clip()) trust_ratio = torch::minimum(trust_ratio, one);
        update.mul_(trust_ratio);
      }
      p.add_(update, -options.lr());
    }
  }
  return loss;
}

void Lamb::save(torch::serialize::OutputArchive& archive) const {
  torch::optim::serialize<LambParamState, LambParamGroupOptions>(archive, *this);
}

void Lamb::load(torch::serialize::InputArchive& archive) {
  torch::optim::serialize<LambParamState, LambParamGroupOptions>(archive, *this);
}

}  // namespace pipeline
