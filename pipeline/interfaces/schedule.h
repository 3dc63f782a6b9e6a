#ifndef PIPELINE_INTERFACES_SCHEDULE_H_
#define PIPELINE_INTERFACES_SCHEDULE_H_

#include <cstdint>

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
};

struct ScheduleContext {};

template <>
struct PluginKind<LearningRateSchedule> {
  static constexpr const char* kName = "schedule";
  using Context = ScheduleContext;
};

}  // namespace pipeline

#endif  // PIPELINE_INTERFACES_SCHEDULE_H_
