#ifndef PLUGINS_OPTIMIZERS_COMMON_MULTI_TENSOR_SGD_H_
#define PLUGINS_OPTIMIZERS_COMMON_MULTI_TENSOR_SGD_H_

#include <vector>

#include "plugins/optimizers/common/implementation.pb.h"
#include "torch/optim/sgd.h"

namespace pipeline {

// torch::optim::SGD whose step can run as multi-tensor (_foreach_*) kernels:
// the same arithmetic in the same order as LibTorch's per-parameter loop, on
// the same SGDParamState, so saved state loads into either.
class MultiTensorSgd : public torch::optim::SGD {
 public:
  MultiTensorSgd(std::vector<torch::optim::OptimizerParamGroup> groups,
                 torch::optim::SGDOptions defaults, OptimizerImplementation::Value implementation);

  torch::Tensor step(LossClosure closure = nullptr) override;

 private:
  void ForeachStep(torch::optim::OptimizerParamGroup& group);

  const OptimizerImplementation::Value implementation_;
};

}  // namespace pipeline

#endif  // PLUGINS_OPTIMIZERS_COMMON_MULTI_TENSOR_SGD_H_
