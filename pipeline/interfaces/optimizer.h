#ifndef PIPELINE_INTERFACES_OPTIMIZER_H_
#define PIPELINE_INTERFACES_OPTIMIZER_H_

#include <vector>

#include "pipeline/registry/registry.h"
#include "torch/optim/optimizer.h"

namespace pipeline {

// Optimizer plugins build a LibTorch optimizer. The learning-rate schedule
// scales each parameter group's learning rate from the value it was created
// with, so optimizers only say what their base learning rate is.
struct OptimizerContext {
  std::vector<torch::Tensor> parameters;
};

template <>
struct PluginKind<torch::optim::Optimizer> {
  static constexpr const char* kName = "optimizer";
  using Context = OptimizerContext;
};

using Optimizer = torch::optim::Optimizer;

}  // namespace pipeline

#endif  // PIPELINE_INTERFACES_OPTIMIZER_H_
