// optimizer `adamw`: torch::optim::AdamW (decoupled weight decay), its step as the
// per-parameter loop, multi-tensor kernels or one fused kernel (implementation).
//
//   optimizer {
//     name: "adamw"
//     options { [type.googleapis.com/pipeline.AdamWOptions] { lr: 0.001 weight_decay: 0.05 } }
//   }

#include "pipeline/interfaces/optimizer.h"
#include "plugins/optimizers/common/multi_tensor_adam.h"
#include "plugins/optimizers/adam_validation.h"
#include "plugins/optimizers/adamw/adamw.pb.h"

namespace pipeline {
namespace {

absl::StatusOr<std::unique_ptr<Optimizer>> CreateAdamW(const AdamWOptions& options,
                                                       const OptimizerContext& context) {
  const auto defaults = torch::optim::AdamWOptions(options.lr())
                            .betas({options.beta1(), options.beta2()})
                            .eps(options.eps())
                            .weight_decay(options.weight_decay())
                            .amsgrad(options.amsgrad());
  return std::make_unique<MultiTensorAdamW>(TorchParamGroups(context, defaults), defaults,
                                          options.implementation());
}

PIPELINE_REGISTER_PLUGIN(torch::optim::Optimizer, "adamw", AdamWOptions,
                         "Adam with decoupled weight decay", CreateAdamW,
                         ValidateAdamFamily<AdamWOptions>);

}  // namespace
}  // namespace pipeline
