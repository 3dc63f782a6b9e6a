// optimizer `lamb`: LAMB as timm's Lamb (lamb_optimizer.h).
//
//   optimizer {
//     name: "lamb"
//     options { [type.googleapis.com/pipeline.LambOptions] { lr: 0.005 weight_decay: 0.02 } }
//   }

#include "absl/strings/str_cat.h"
#include "pipeline/interfaces/optimizer.h"
#include "plugins/optimizers/lamb/lamb.pb.h"
#include "plugins/optimizers/lamb/lamb_optimizer.h"

namespace pipeline {
namespace {

absl::Status ValidateLamb(const LambOptions& options) {
  if (!(options.lr() > 0)) {
    return absl::InvalidArgumentError(absl::StrCat("lr: ", options.lr(), "; must be > 0"));
  }
  for (double beta : {options.beta1(), options.beta2()}) {
    if (beta < 0 || beta >= 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("beta1, beta2: ", beta, " is outside [0, 1)"));
    }
  }
  if (!(options.eps() > 0)) {
    return absl::InvalidArgumentError(absl::StrCat("eps: ", options.eps(), "; must be > 0"));
  }
  if (options.weight_decay() < 0 || options.max_grad_norm() < 0) {
    return absl::InvalidArgumentError("weight_decay and max_grad_norm must be >= 0");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Optimizer>> CreateLamb(const LambOptions& options,
                                                      const OptimizerContext& context) {
  const auto defaults = LambParamGroupOptions(options.lr())
                            .beta1(options.beta1())
                            .beta2(options.beta2())
                            .eps(options.eps())
                            .weight_decay(options.weight_decay())
                            .bias_correction(options.bias_correction())
                            .grad_averaging(options.grad_averaging())
                            .trust_clip(options.trust_clip())
                            .always_adapt(options.always_adapt())
                            .exclude_1d(options.exclude_1d());
  return std::make_unique<Lamb>(TorchParamGroups(context, defaults), defaults,
                                options.max_grad_norm());
}

PIPELINE_REGISTER_PLUGIN(torch::optim::Optimizer, "lamb", LambOptions,
                         "LAMB: Adam with per-layer trust ratio (timm's Lamb)", CreateLamb,
                         ValidateLamb);

}  // namespace
}  // namespace pipeline
