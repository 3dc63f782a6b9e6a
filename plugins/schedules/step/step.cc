// schedule `step`: the learning rate times gamma^(decays so far), where a
// decay happens every `step_epochs` epochs or at each milestone epoch.
//
//   learning_rate {
//     schedule {
//       name: "step"
//       options { [type.googleapis.com/pipeline.StepScheduleOptions] { milestones: [2, 4] gamma: 0.1 } }
//     }
//   }

#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pipeline/interfaces/schedule.h"
#include "plugins/schedules/step/step.pb.h"

namespace pipeline {
namespace {

class StepSchedule : public LearningRateSchedule {
 public:
  explicit StepSchedule(const StepScheduleOptions& options) : options_(options) {}

  double Factor(int64_t step, int64_t total_steps, int64_t steps_per_epoch) const override {
    const int64_t epoch = steps_per_epoch > 0 ? step / steps_per_epoch : 0;
    int64_t decays = 0;
    if (options_.milestones_size() > 0) {
      for (int milestone : options_.milestones()) decays += epoch >= milestone;
    } else {
      decays = epoch / options_.step_epochs();
    }
    return std::pow(options_.gamma(), static_cast<double>(decays));
  }

 private:
  StepScheduleOptions options_;
};

absl::Status ValidateStep(const StepScheduleOptions& options) {
  if (options.step_epochs() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("step_epochs: ", options.step_epochs(), "; must be at least 1"));
  }
  if (!(options.gamma() > 0)) {
    return absl::InvalidArgumentError(absl::StrCat("gamma: ", options.gamma(), "; must be > 0"));
  }
  for (int i = 1; i < options.milestones_size(); ++i) {
    if (options.milestones(i) <= options.milestones(i - 1)) {
      return absl::InvalidArgumentError("milestones: must be increasing epochs");
    }
  }
  return absl::OkStatus();
}

PIPELINE_REGISTER_PLUGIN(LearningRateSchedule, "step", StepScheduleOptions,
                         "Multiply by gamma every N epochs or at milestone epochs",
                         [](const StepScheduleOptions& options, const ScheduleContext&)
                             -> absl::StatusOr<std::unique_ptr<LearningRateSchedule>> {
                           return std::make_unique<StepSchedule>(options);
                         },
                         ValidateStep);

}  // namespace
}  // namespace pipeline
