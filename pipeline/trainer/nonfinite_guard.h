#ifndef PIPELINE_TRAINER_NONFINITE_GUARD_H_
#define PIPELINE_TRAINER_NONFINITE_GUARD_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "pipeline/trainer/trainer_hook.h"

namespace pipeline {

// The first trainable parameter whose gradient holds a NaN or an Inf, named
// with which, or "" when every gradient is finite.
std::string FirstNonFiniteGradient(Model& model);

// Between backward and the optimizer step: whether this step's update is
// applied. A non-finite loss on any rank (decided together: one small
// all-reduce, as under ddp the other ranks would otherwise wait in the
// next step's collectives) or a non-finite gradient (the same on every rank
// after synchronisation) is handled by trainer.on_nonfinite (STOP: an error
// before the weights change; SKIP_STEP: the step is left out, up to
// max_consecutive_skipped_steps in a row), or under loss scaling by the
// GradScaler's skipped step and a smaller scale. Unscales the gradients
// of an applied step under loss scaling.
class NonFiniteGuard {
 public:
  // `nonfinite_loss` is this rank's first non-finite batch loss of the
  // step, if any.
  absl::StatusOr<bool> ApplyStep(TrainContext& context, std::optional<double> nonfinite_loss);

 private:
  absl::StatusOr<std::string> NonFiniteLossOfAnyRank(TrainContext& context,
                                                     std::optional<double> nonfinite_loss);
  absl::Status SkipScalerStep(TrainContext& context, const std::string& what);
  absl::Status SkipStep(TrainContext& context, const std::string& what);

  int64_t skipped_in_a_row_ = 0;
};

}  // namespace pipeline

#endif  // PIPELINE_TRAINER_NONFINITE_GUARD_H_
