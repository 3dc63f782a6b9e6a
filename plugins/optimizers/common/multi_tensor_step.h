#ifndef PLUGINS_OPTIMIZERS_COMMON_MULTI_TENSOR_STEP_H_
#define PLUGINS_OPTIMIZERS_COMMON_MULTI_TENSOR_STEP_H_

// What every multi-tensor optimizer's step() shares: whether to run
// LibTorch's own loop instead, and the frame around the group steps.

#include <functional>
#include <vector>

#include "plugins/optimizers/common/implementation.pb.h"
#include "torch/optim/optimizer.h"

namespace pipeline {

// Whether `implementation` runs LibTorch's per-parameter loop for `groups`
// (AUTO: unless their parameters live on a CUDA device).
bool RunsForLoop(OptimizerImplementation::Value implementation,
                 const std::vector<torch::optim::OptimizerParamGroup>& groups);

// Optimizer::step's frame, as LibTorch's optimizers have it: `closure`'s
// loss (if any) computed with gradients on, then `step_group` for each
// group with gradients off. Returns the loss.
torch::Tensor StepEachGroup(
    std::vector<torch::optim::OptimizerParamGroup>& groups,
    const torch::optim::Optimizer::LossClosure& closure,
    const std::function<void(torch::optim::OptimizerParamGroup&)>& step_group);

}  // namespace pipeline

#endif  // PLUGINS_OPTIMIZERS_COMMON_MULTI_TENSOR_STEP_H_
