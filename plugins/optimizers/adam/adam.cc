// optimizer `adam`: torch::optim::Adam, its step as the
// per-parameter loop, multi-tensor kernels or one fused kernel (implementation).
//
//   optimizer {
//     name: "adam"
//     options { [type.googleapis.com/pipeline.AdamOptions] { lr: 0.001 } }
//   }

#include "pipeline/interfaces/optimizer.h"
#include "plugins/optimizers/common/multi_tensor_adam.h"
#include "plugins/optimizers/adam/adam.pb.h"
#include "plugins/optimizers/adam_validation.h"

namespace pipeline {
namespace {

absl::StatusOr<std::unique_ptr<Optimizer>> CreateAdam(const AdamOptions& options,
                                                      const OptimizerContext& context) {
  const auto defaults = torch::optim::AdamOptions(options.lr())
                            .betas({options.beta1(), options.beta2()})
                            .eps(options.eps())
                            .weight_decay(options.weight_decay())
                            .amsgrad(options.amsgrad());
  return std::make_unique<MultiTensorAdam>(TorchParamGroups(context, defaults), defaults,
                                         options.implementation());
}

PIPELINE_REGISTER_PLUGIN(torch::optim::Optimizer, "adam", AdamOptions,
                         "Adam with optional (coupled) L2 weight decay", CreateAdam,
                         ValidateAdamFamily<AdamOptions>);

}  // namespace
}  // namespace pipeline
