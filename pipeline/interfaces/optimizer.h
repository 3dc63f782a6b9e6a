#ifndef PIPELINE_INTERFACES_OPTIMIZER_H_
#define PIPELINE_INTERFACES_OPTIMIZER_H_

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "pipeline/registry/registry.h"
#include "torch/optim/optimizer.h"

namespace pipeline {

// Parameters that share a learning-rate scale and a weight decay: what the
// core makes of optimizer.param_groups (no decay on norms and biases, a
// faster head, layer-wise decay), one LibTorch param group each.
struct OptimizerParameterGroup {
  std::vector<torch::Tensor> parameters;
  // The group's learning rate is the optimizer's `lr` times this.
  double lr_scale = 1;
  // Replaces the optimizer's weight_decay for this group; unset keeps it.
  std::optional<double> weight_decay;
};

// Optimizer plugins build a LibTorch optimizer with one param group per
// entry of `groups`, in that order (TorchParamGroups does it for options
// types with lr and weight_decay setters). The learning-rate schedule
// scales each param group's learning rate from the value it was created
// with, so optimizers only say what their base learning rate is.
struct OptimizerContext {
  std::vector<OptimizerParameterGroup> groups;

  // Every parameter in one group with the optimizer's own options.
  static OptimizerContext OneGroup(std::vector<torch::Tensor> parameters) {
    OptimizerContext context;
    context.groups.push_back({std::move(parameters)});
    return context;
  }
};

// `context`'s groups as LibTorch param groups, each with a copy of
// `defaults` whose lr is scaled by the group's lr_scale and whose
// weight_decay is the group's where it sets one.
template <typename TorchOptions>
std::vector<torch::optim::OptimizerParamGroup> TorchParamGroups(const OptimizerContext& context,
                                                                const TorchOptions& defaults) {
  std::vector<torch::optim::OptimizerParamGroup> groups;
  for (const OptimizerParameterGroup& group : context.groups) {
    auto options = std::make_unique<TorchOptions>(defaults);
    options->lr(defaults.lr() * group.lr_scale);
    if (group.weight_decay) options->weight_decay(*group.weight_decay);
    groups.emplace_back(group.parameters, std::move(options));
  }
  return groups;
}

template <>
struct PluginKind<torch::optim::Optimizer> {
  static constexpr const char* kName = "optimizer";
  using Context = OptimizerContext;
};

using Optimizer = torch::optim::Optimizer;

// Lets go of the gradient of every parameter `optimizer` steps, as
// torch.optim's zero_grad(set_to_none=True), LibTorch 2.x's default (1.13's
// zero_grad zeroes them): the next backward writes its gradients instead of
// adding them to zeros, a pass over every gradient less per step, with the
// same values.
inline void ReleaseGradients(Optimizer& optimizer) {
  for (auto& group : optimizer.param_groups()) {
    for (auto& p : group.params()) p.mutable_grad() = torch::Tensor();
  }
}

}  // namespace pipeline

#endif  // PIPELINE_INTERFACES_OPTIMIZER_H_
