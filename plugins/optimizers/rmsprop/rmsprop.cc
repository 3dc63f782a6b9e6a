// optimizer `rmsprop`: torch::optim::RMSprop, or with eps_inside_sqrt its
// TensorFlow-epsilon variant (rmsprop_tf_epsilon.h). torchvision's MobileNet
// V3 recipe (torch's epsilon):
//
//   optimizer {
//     name: "rmsprop"
//     options {
//       [type.googleapis.com/pipeline.RmspropOptions] {
//         lr: 0.064 alpha: 0.9 eps: 0.0316 momentum: 0.9 weight_decay: 0.00001
//       }
//     }
//   }

#include "absl/strings/str_cat.h"
#include "pipeline/interfaces/optimizer.h"
#include "plugins/optimizers/rmsprop/rmsprop.pb.h"
#include "plugins/optimizers/rmsprop/rmsprop_tf_epsilon.h"
#include "torch/optim/rmsprop.h"

namespace pipeline {
namespace {

absl::Status ValidateRmsprop(const RmspropOptions& options) {
  if (!(options.lr() > 0)) {
    return absl::InvalidArgumentError(absl::StrCat("lr: ", options.lr(), "; must be > 0"));
  }
  if (!(options.alpha() >= 0 && options.alpha() < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("alpha: ", options.alpha(), " is outside [0, 1)"));
  }
  if (!(options.eps() > 0)) {
    return absl::InvalidArgumentError(absl::StrCat("eps: ", options.eps(), "; must be > 0"));
  }
  if (options.momentum() < 0 || options.weight_decay() < 0) {
    return absl::InvalidArgumentError("momentum and weight_decay must be >= 0");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Optimizer>> CreateRmsprop(const RmspropOptions& options,
                                                         const OptimizerContext& context) {
  const auto defaults = torch::optim::RMSpropOptions(options.lr())
                            .alpha(options.alpha())
                            .eps(options.eps())
                            .weight_decay(options.weight_decay())
                            .momentum(options.momentum())
                            .centered(options.centered());
  if (options.eps_inside_sqrt()) {
    return std::make_unique<RmspropTfEpsilon>(TorchParamGroups(context, defaults), defaults);
  }
  return std::make_unique<torch::optim::RMSprop>(TorchParamGroups(context, defaults), defaults);
}

PIPELINE_REGISTER_PLUGIN(torch::optim::Optimizer, "rmsprop", RmspropOptions,
                         "RMSprop as torch.optim.RMSprop, optionally with TensorFlow's epsilon",
                         CreateRmsprop, ValidateRmsprop);

}  // namespace
}  // namespace pipeline
