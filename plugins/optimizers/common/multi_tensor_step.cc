#include "plugins/optimizers/common/multi_tensor_step.h"

#include "torch/autograd.h"

namespace pipeline {

bool RunsForLoop(OptimizerImplementation::Value implementation,
                 const std::vector<torch::optim::OptimizerParamGroup>& groups) {
  if (implementation != OptimizerImplementation::AUTO) {
    return implementation == OptimizerImplementation::FOR_LOOP;
  }
  for (const auto& group : groups) {
    for (const auto& p : group.params()) return !p.is_cuda();
  }
  return true;
}

torch::Tensor StepEachGroup(
    std::vector<torch::optim::OptimizerParamGroup>& groups,
    const torch::optim::Optimizer::LossClosure& closure,
    const std::function<void(torch::optim::OptimizerParamGroup&)>& step_group) {
  torch::NoGradGuard no_grad;
  torch::Tensor loss;
  if (closure != nullptr) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (auto& group : groups) step_group(group);
  return loss;
}

}  // namespace pipeline
