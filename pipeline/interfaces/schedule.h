#ifndef PIPELINE_INTERFACES_SCHEDULE_H_
#define PIPELINE_INTERFACES_SCHEDULE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"

#include "pipeline/registry/registry.h"

namespace pipeline {

// A learning-rate schedule: the factor the optimizer's base learning rate is
// multiplied by at a step. Warm-up is added by the core in front of any
// schedule (LearningRateConfig.warmup_*), so schedules do not repeat it.
class LearningRateSchedule {
 public:
  virtual ~LearningRateSchedule() = default;
  // `step` counts from 0 to total_steps - 1; `steps_per_epoch` lets
  // epoch-based schedules convert.
  virtual double Factor(int64_t step, int64_t total_steps, int64_t steps_per_epoch) const = 0;

  // A schedule that follows a validation figure (plateau) names it here
  // ("val_loss"); the trainer then reports each validation's value to
  // Observe, and keeps State() in checkpoints so a resumed run continues
  // from the same factor. The others name none and keep no state.
  virtual std::string MonitoredFigure() const { return ""; }
  // `higher_is_better`: the figure's own direction (accuracy up, loss down).
  virtual void Observe(double value, bool higher_is_better) {}
  virtual std::vector<double> State() const { return {}; }
  virtual absl::Status Restore(const std::vector<double>& state) { return absl::OkStatus(); }
};

struct ScheduleContext {
  // The optimizer's learning rate (its options' lr, before any parameter
  // group's lr_scale and any schedule): what an absolute bound (plateau's
  // min_lr) is relative to.
  double base_lr = 0;
};

template <>
struct PluginKind<LearningRateSchedule> {
  static constexpr const char* kName = "schedule";
  using Context = ScheduleContext;
};

}  // namespace pipeline

#endif  // PIPELINE_INTERFACES_SCHEDULE_H_
