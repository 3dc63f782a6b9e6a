// schedule `one_cycle`: OneCycleLR's learning rate divided by its max_lr,
// stepped every batch, so the optimizer's learning rate is the peak.
//
//   learning_rate {
//     schedule {
//       name: "one_cycle"
//       options { [type.googleapis.com/pipeline.OneCycleScheduleOptions] { pct_start: 0.25 anneal_strategy: LINEAR } }
//     }
//   }

#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pipeline/interfaces/schedule.h"
#include "plugins/schedules/one_cycle/one_cycle.pb.h"

namespace pipeline {
namespace {

class OneCycleSchedule : public LearningRateSchedule {
 public:
  explicit OneCycleSchedule(const OneCycleScheduleOptions& options) : options_(options) {}

  // OneCycleLR.get_lr with max_lr = 1, operation for operation, so that the
  // factor times the base learning rate rounds as PyTorch's learning rate.
  double Factor(int64_t step, int64_t total_steps, int64_t) const override {
    if (total_steps <= 0) return 1.0;
    const double initial = 1.0 / options_.div_factor();
    const double min = initial / options_.final_div_factor();
    const double total = static_cast<double>(total_steps);
    const double pct_start = options_.pct_start();
    // A phase ends at a (possibly fractional, possibly negative) step.
    struct Phase {
      double end_step, start, end;
    };
    // Constructed, not assigned: g++ 14 warns (wrongly) about a null
    // memmove in vector's assignment from a list.
    const std::vector<Phase> phases =
        options_.three_phase()
            ? std::vector<Phase>{{pct_start * total - 1, initial, 1.0},
                                 {2 * pct_start * total - 2, 1.0, initial},
                                 {total - 1, initial, min}}
            : std::vector<Phase>{{pct_start * total - 1, initial, 1.0}, {total - 1, 1.0, min}};
    const double at = static_cast<double>(step);
    double start_step = 0;
    for (size_t i = 0; i < phases.size(); ++i) {
      const Phase& phase = phases[i];
      if (at <= phase.end_step || i == phases.size() - 1) {
        // A phase of no length (PyTorch divides by zero there) is at its end.
        const double length = phase.end_step - start_step;
        const double pct = length != 0 ? (at - start_step) / length : 1.0;
        return Anneal(phase.start, phase.end, pct);
      }
      start_step = phase.end_step;
    }
    return 1.0;  // not reached: the last phase always answers
  }

 private:
  double Anneal(double start, double end, double pct) const {
    if (options_.anneal_strategy() == OneCycleScheduleOptions::LINEAR) {
      return (end - start) * pct + start;
    }
    const double cos_out = std::cos(M_PI * pct) + 1;
    return end + (start - end) / 2.0 * cos_out;
  }

  OneCycleScheduleOptions options_;
};

absl::Status ValidateOneCycle(const OneCycleScheduleOptions& options) {
  if (!(options.pct_start() >= 0 && options.pct_start() <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("pct_start: ", options.pct_start(), "; must be in [0, 1]"));
  }
  if (!(options.div_factor() > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("div_factor: ", options.div_factor(), "; must be > 0"));
  }
  if (!(options.final_div_factor() > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("final_div_factor: ", options.final_div_factor(), "; must be > 0"));
  }
  return absl::OkStatus();
}

PIPELINE_REGISTER_PLUGIN(LearningRateSchedule, "one_cycle", OneCycleScheduleOptions,
                         "The 1cycle policy peaking at the optimizer's learning rate (OneCycleLR)",
                         [](const OneCycleScheduleOptions& options, const ScheduleContext&)
                             -> absl::StatusOr<std::unique_ptr<LearningRateSchedule>> {
                           return std::make_unique<OneCycleSchedule>(options);
                         },
                         ValidateOneCycle);

}  // namespace
}  // namespace pipeline
