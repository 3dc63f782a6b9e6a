#include "plugins/optimizers/rmsprop/rmsprop_tf_epsilon.h"

#include <memory>
#include <string>

#include "pipeline/util/optimizer_state_key.h"
#include "torch/types.h"
#include "torch/utils.h"

namespace pipeline {

// torch's RMSprop::step (LibTorch 1.13, torch/csrc/api/src/optim/rmsprop.cpp)
// with the epsilon moved inside the square root.
torch::Tensor RmspropTfEpsilon::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  torch::Tensor loss;
  if (closure != nullptr) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (auto& group : param_groups_) {
    const auto& options = static_cast<const torch::optim::RMSpropOptions&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      torch::Tensor grad = p.grad();
      const OptimizerStateKey key = OptimizerStateKeyOf(p);
      if (state_.find(key) == state_.end()) {
        auto fresh = std::make_unique<torch::optim::RMSpropParamState>();
        fresh->step(0);
        fresh->square_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        if (options.momentum() > 0) {
          fresh->momentum_buffer(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        }
        if (options.centered()) {
          fresh->grad_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        }
        state_[key] = std::move(fresh);
      }
      auto& state = static_cast<torch::optim::RMSpropParamState&>(*state_[key]);
      state.step(state.step() + 1);
      const double alpha = options.alpha();
      if (options.weight_decay() != 0) grad = grad.add(p, options.weight_decay());
      torch::Tensor& square_avg = state.square_avg();
      square_avg.mul_(alpha).addcmul_(grad, grad, 1 - alpha);
      torch::Tensor avg;
      if (options.centered()) {
        torch::Tensor& grad_avg = state.grad_avg();
        grad_avg.mul_(alpha).add_(grad, 1 - alpha);
        avg = square_avg.addcmul(grad_avg, grad_avg, -1).add_(options.eps()).sqrt_();
      } else {
        avg = square_avg.add(options.eps()).sqrt_();
      }
      if (options.momentum() > 0) {
        torch::Tensor& buffer = state.momentum_buffer();
        buffer.mul_(options.momentum()).addcdiv_(grad, avg);
        p.add_(buffer, -options.lr());
      } else {
        p.addcdiv_(grad, avg, -options.lr());
      }
    }
  }
  return loss;
}

}  // namespace pipeline
