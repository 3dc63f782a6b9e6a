// optimizer `lars`: LARS as timm's Lars (lars_optimizer.h).
//
//   optimizer {
//     name: "lars"
//     options { [type.googleapis.com/pipeline.LarsOptions] { lr: 1.6 momentum: 0.9 weight_decay: 1e-6 } }
//   }

#include "absl/strings/str_cat.h"
#include "pipeline/interfaces/optimizer.h"
#include "plugins/optimizers/lars/lars.pb.h"
#include "plugins/optimizers/lars/lars_optimizer.h"

namespace pipeline {
namespace {

absl::Status ValidateLars(const LarsOptions& options) {
  if (!(options.lr() > 0)) {
    return absl::InvalidArgumentError(absl::StrCat("lr: ", options.lr(), "; must be > 0"));
  }
  if (options.momentum() < 0 || options.dampening() < 0 || options.weight_decay() < 0 ||
      options.eps() < 0) {
    return absl::InvalidArgumentError("momentum, dampening, weight_decay and eps must be >= 0");
  }
  if (!(options.trust_coeff() > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("trust_coeff: ", options.trust_coeff(), "; must be > 0"));
  }
  if (options.nesterov() && (options.momentum() <= 0 || options.dampening() != 0)) {
    return absl::InvalidArgumentError(
        "nesterov: needs momentum > 0 and dampening 0 (as torch.optim.SGD)");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Optimizer>> CreateLars(const LarsOptions& options,
                                                      const OptimizerContext& context) {
  const auto defaults = LarsParamGroupOptions(options.lr())
                            .momentum(options.momentum())
                            .dampening(options.dampening())
                            .weight_decay(options.weight_decay())
                            .nesterov(options.nesterov())
                            .trust_coeff(options.trust_coeff())
                            .eps(options.eps())
                            .trust_clip(options.trust_clip())
                            .always_adapt(options.always_adapt())
                            .exclude_1d(options.exclude_1d());
  return std::make_unique<Lars>(TorchParamGroups(context, defaults), defaults);
}

PIPELINE_REGISTER_PLUGIN(torch::optim::Optimizer, "lars", LarsOptions,
                         "LARS: SGD with per-layer trust ratio (timm's Lars)", CreateLars,
                         ValidateLars);

}  // namespace
}  // namespace pipeline
