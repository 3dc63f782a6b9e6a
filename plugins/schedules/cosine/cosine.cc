// schedule `cosine`: factor = min + (1 - min) * (1 + cos(pi * step / total)) / 2,
// stepped every batch.
//
//   learning_rate {
//     schedule {
//       name: "cosine"
//       options { [type.googleapis.com/pipeline.CosineScheduleOptions] { min_factor: 0.01 } }
//     }
//     warmup_epochs: 0.5
//   }

#include <cmath>

#include "absl/strings/str_cat.h"
#include "pipeline/interfaces/schedule.h"
#include "plugins/schedules/cosine/cosine.pb.h"

namespace pipeline {
namespace {

class CosineSchedule : public LearningRateSchedule {
 public:
  explicit CosineSchedule(double min_factor) : min_factor_(min_factor) {}

  double Factor(int64_t step, int64_t total_steps, int64_t) const override {
    if (total_steps <= 1) return 1.0;
    const double progress = static_cast<double>(step) / static_cast<double>(total_steps);
    return min_factor_ + (1.0 - min_factor_) * 0.5 * (1.0 + std::cos(M_PI * progress));
  }

 private:
  double min_factor_;
};

absl::Status ValidateCosine(const CosineScheduleOptions& options) {
  if (options.min_factor() < 0 || options.min_factor() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("min_factor: ", options.min_factor(), "; must be in [0, 1]"));
  }
  return absl::OkStatus();
}

PIPELINE_REGISTER_PLUGIN(LearningRateSchedule, "cosine", CosineScheduleOptions,
                         "Cosine annealing over the whole run",
                         [](const CosineScheduleOptions& options, const ScheduleContext&)
                             -> absl::StatusOr<std::unique_ptr<LearningRateSchedule>> {
                           return std::make_unique<CosineSchedule>(options.min_factor());
                         },
                         ValidateCosine);

}  // namespace
}  // namespace pipeline
