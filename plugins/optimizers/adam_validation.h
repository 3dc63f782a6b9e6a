#ifndef PLUGINS_OPTIMIZERS_ADAM_VALIDATION_H_
#define PLUGINS_OPTIMIZERS_ADAM_VALIDATION_H_

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "pipeline/util/torch_version.h"
#include "plugins/optimizers/common/multi_tensor_adam.h"

namespace pipeline {

// Adam and AdamW share their option fields; one check serves both.
template <typename Options>
absl::Status ValidateAdamFamily(const Options& options) {
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
  if (options.weight_decay() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("weight_decay: ", options.weight_decay(), "; must be >= 0"));
  }
  if (options.implementation() == OptimizerImplementation::FUSED && !HasFusedAdam()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "implementation: FUSED needs LibTorch 2.4 or later (its fused Adam kernels); this build "
        "has ", kLibTorchVersion, ": use FOREACH (multi-tensor kernels) or AUTO"));
  }
  return absl::OkStatus();
}

}  // namespace pipeline

#endif  // PLUGINS_OPTIMIZERS_ADAM_VALIDATION_H_
