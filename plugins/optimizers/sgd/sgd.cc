// optimizer `sgd`: torch::optim::SGD (momentum, Nesterov, weight decay), its
// step as the per-parameter loop or as multi-tensor kernels (implementation).
//
//   optimizer {
//     name: "sgd"
//     options {
//       [type.googleapis.com/pipeline.SgdOptions] { lr: 0.1 momentum: 0.9 nesterov: true }
//     }
//   }

#include "absl/strings/str_cat.h"
#include "pipeline/interfaces/optimizer.h"
#include "plugins/optimizers/common/multi_tensor_sgd.h"
#include "plugins/optimizers/sgd/sgd.pb.h"

namespace pipeline {
namespace {

absl::Status ValidateSgd(const SgdOptions& options) {
  if (!(options.lr() > 0)) {
    return absl::InvalidArgumentError(absl::StrCat("lr: ", options.lr(), "; must be > 0"));
  }
  if (options.momentum() < 0 || options.weight_decay() < 0 || options.dampening() < 0) {
    return absl::InvalidArgumentError("momentum, dampening and weight_decay must be >= 0");
  }
  if (options.nesterov() && (options.momentum() <= 0 || options.dampening() != 0)) {
    return absl::InvalidArgumentError(
        "nesterov: needs momentum > 0 and dampening 0 (as torch.optim.SGD)");
  }
  if (options.implementation() == OptimizerImplementation::FUSED) {
    return absl::InvalidArgumentError(
        "implementation: FUSED; sgd has no fused kernel: use FOREACH (multi-tensor kernels) or "
        "AUTO");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Optimizer>> CreateSgd(const SgdOptions& options,
                                                     const OptimizerContext& context) {
  const auto defaults = torch::optim::SGDOptions(options.lr())
                            .momentum(options.momentum())
                            .dampening(options.dampening())
                            .weight_decay(options.weight_decay())
                            .nesterov(options.nesterov());
  return std::make_unique<MultiTensorSgd>(TorchParamGroups(context, defaults), defaults,
                                          options.implementation());
}

PIPELINE_DEFAULT_PLUGIN(torch::optim::Optimizer, "optimizer", "sgd");
PIPELINE_REGISTER_PLUGIN(torch::optim::Optimizer, "sgd", SgdOptions,
                         "SGD with momentum, Nesterov and weight decay", CreateSgd, ValidateSgd);

}  // namespace
}  // namespace pipeline
