#ifndef PLUGINS_OPTIMIZERS_COMMON_MULTI_TENSOR_ADAM_H_
#define PLUGINS_OPTIMIZERS_COMMON_MULTI_TENSOR_ADAM_H_

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "pipeline/util/optimizer_state_key.h"
#include "plugins/optimizers/common/implementation.pb.h"
#include "torch/optim/adam.h"
#include "torch/optim/adamw.h"

namespace pipeline {

// Whether this LibTorch has ATen's fused Adam and AdamW kernels for the CPU
// and CUDA (2.4 and later).
bool HasFusedAdam();

// torch::optim::Adam or AdamW (`Base`) whose step can run as multi-tensor
// (_foreach_*) kernels, with the per-parameter loop's arithmetic in its
// order, or as ATen's fused kernel; always on the same per-parameter state,
// so saved state loads into any of them.
template <typename Base, typename Options, typename ParamState>
class MultiTensorAdamFamily : public Base {
 public:
  MultiTensorAdamFamily(std::vector<torch::optim::OptimizerParamGroup> groups, Options defaults,
                        OptimizerImplementation::Value implementation)
      : Base(std::move(groups), std::move(defaults)), implementation_(implementation) {}

  torch::Tensor step(torch::optim::Optimizer::LossClosure closure = nullptr) override;

 private:
  // The group's parameters that have a gradient, with their state (made
  // as LibTorch makes it on a parameter's first step).
  struct Slots {
    std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs;
    std::vector<ParamState*> states;
  };
  Slots Gather(torch::optim::OptimizerParamGroup& group);
  void ForeachStep(torch::optim::OptimizerParamGroup& group);
  void FusedStep(torch::optim::OptimizerParamGroup& group);

  const OptimizerImplementation::Value implementation_;
  // The fused kernels read each parameter's step count from a float tensor
  // on its device: kept here, beside the value it mirrors, so a step makes
  // no host-to-device copy (and remade when the state was loaded anew).
  struct DeviceStep {
    torch::Tensor count;
    int64_t mirrors = -1;
  };
  std::unordered_map<OptimizerStateKey, DeviceStep> device_steps_;
};

using MultiTensorAdam = MultiTensorAdamFamily<torch::optim::Adam, torch::optim::AdamOptions,
                                              torch::optim::AdamParamState>;
using MultiTensorAdamW = MultiTensorAdamFamily<torch::optim::AdamW, torch::optim::AdamWOptions,
                                               torch::optim::AdamWParamState>;

}  // namespace pipeline

#endif  // PLUGINS_OPTIMIZERS_COMMON_MULTI_TENSOR_ADAM_H_
