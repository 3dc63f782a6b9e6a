#include "plugins/optimizers/lars/lars_optimizer.h"

#include <memory>
#include <string>

#include "pipeline/util/optimizer_state_key.h"
#include "torch/types.h"
#include "torch/utils.h"

namespace pipeline {

void LarsParamGroupOptions::serialize(torch::serialize::OutputArchive& archive) const {
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(lr);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(momentum);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(dampening);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(weight_decay);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(nesterov);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(trust_coeff);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(eps);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(trust_clip);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(always_adapt);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(exclude_1d);
}

void LarsParamGroupOptions::serialize(torch::serialize::InputArchive& archive) {
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, lr);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, momentum);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, dampening);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, weight_decay);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, nesterov);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, trust_coeff);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, eps);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, trust_clip);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, always_adapt);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, exclude_1d);
}

void LarsParamState::serialize(torch::serialize::OutputArchive& archive) const {
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(momentum_buffer);
}

void LarsParamState::serialize(torch::serialize::InputArchive& archive) {
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(torch::Tensor, momentum_buffer);
}

torch::Tensor Lars::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  torch::Tensor loss;
  if (closure != nullptr) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (auto& group : param_groups_) {
    const auto& options = static_cast<const LarsParamGroupOptions&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      // A copy: timm changes p.grad in place, the caller's gradient here
      // stays as backward left it.
      torch::Tensor grad = p.grad().clone();
      const double weight_decay =
          options.exclude_1d() && p.dim() <= 1 ? 0.0 : options.weight_decay();
      if (weight_decay != 0 || options.always_adapt()) {
        const torch::Tensor w_norm = p.norm();
        const torch::Tensor g_norm = grad.norm();
        const torch::Tensor one = torch::ones_like(w_norm);
        torch::Tensor trust_ratio =
            options.trust_coeff() * w_norm / (g_norm + w_norm * weight_decay + options.eps());
        trust_ratio = torch::where(w_norm > 0, torch::where(g_norm > 0, trust_ratio, one), one);
        if (options.trust_clip()) trust_ratio = torch::minimum(trust_ratio / options.lr(), one);
        grad.add_(p, weight_decay);
        grad.mul_(trust_ratio);
      }
      if (options.momentum() != 0) {
        const OptimizerStateKey key = OptimizerStateKeyOf(p);
        auto found = state_.find(key);
        if (found == state_.end()) {
          auto fresh = std::make_unique<LarsParamState>();
          fresh->momentum_buffer(grad.clone());
          state_[key] = std::move(fresh);
        } else {
          static_cast<LarsParamState&>(*found->second)
              .momentum_buffer()
              .mul_(options.momentum())
              .add_(grad, 1 - options.dampening());
        }
        const torch::Tensor& buffer =
            static_cast<LarsParamState&>(*state_[key]).momentum_buffer();
        grad = options.nesterov() ? grad.add(buffer, options.momentum()) : buffer;
      }
      p.add_(grad, -options.lr());
    }
  }
  return loss;
}

void Lars::save(torch::serialize::OutputArchive& archive) const {
  torch::optim::serialize<LarsParamState, LarsParamGroupOptions>(archive, *this);
}

void Lars::load(torch::serialize::InputArchive& archive) {
  torch::optim::serialize<LarsParamState, LarsParamGroupOptions>(archive, *this);
}

}  // namespace pipeline
