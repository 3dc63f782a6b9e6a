#include "plugins/optimizers/common/multi_tensor_sgd.h"

#include <memory>
#include <utility>

#include "ATen/ops/_foreach_add.h"
#include "ATen/ops/_foreach_mul.h"
#include "pipeline/util/optimizer_state_key.h"
#include "plugins/optimizers/common/multi_tensor_step.h"

namespace pipeline {

MultiTensorSgd::MultiTensorSgd(std::vector<torch::optim::OptimizerParamGroup> groups,
                               torch::optim::SGDOptions defaults,
                               OptimizerImplementation::Value implementation)
    : torch::optim::SGD(std::move(groups), std::move(defaults)),
      implementation_(implementation) {}

torch::Tensor MultiTensorSgd::step(LossClosure closure) {
  if (RunsForLoop(implementation_, param_groups())) return torch::optim::SGD::step(closure);
  return StepEachGroup(param_groups(), closure, [this](auto& group) { ForeachStep(group); });
}

// LibTorch's SGD::step for one group, each line over the group at once:
//   d_p = grad + weight_decay * p
//   buf = d_p (first step), else buf = momentum * buf + (1 - dampening) * d_p
//   d_p = d_p + momentum * buf (nesterov), else d_p = buf
//   p -= lr * d_p
void MultiTensorSgd::ForeachStep(torch::optim::OptimizerParamGroup& group) {
  const auto& options = static_cast<const torch::optim::SGDOptions&>(group.options());
  std::vector<torch::Tensor> params, d_p;
  for (const auto& p : group.params()) {
    if (!p.grad().defined()) continue;
    params.push_back(p);
    d_p.push_back(p.grad());
  }
  if (params.empty()) return;
  if (options.weight_decay() != 0) d_p = at::_foreach_add(d_p, params, options.weight_decay());
  if (options.momentum() != 0) {
    std::vector<torch::Tensor> buffers, old_buffers, old_d_p;
    for (size_t i = 0; i < params.size(); ++i) {
      auto& slot = state()[OptimizerStateKeyOf(params[i])];
      if (slot == nullptr) {
        auto fresh = std::make_unique<torch::optim::SGDParamState>();
        fresh->momentum_buffer(torch::clone(d_p[i]).detach());
        buffers.push_back(fresh->momentum_buffer());
        slot = std::move(fresh);
        continue;
      }
      buffers.push_back(static_cast<torch::optim::SGDParamState&>(*slot).momentum_buffer());
      old_buffers.push_back(buffers.back());
      old_d_p.push_back(d_p[i]);
    }
    if (!old_buffers.empty()) {
      at::_foreach_mul_(old_buffers, options.momentum());
      at::_foreach_add_(old_buffers, old_d_p, 1 - options.dampening());
    }
    d_p = options.nesterov() ? at::_foreach_add(d_p, buffers, options.momentum()) : buffers;
  }
  at::_foreach_add_(params, d_p, -1 * options.lr());
}

}  // namespace pipeline
