// schedule `constant`: factor 1 at every step (after any warm-up).
//
//   learning_rate { schedule { name: "constant" } }

#include "pipeline/interfaces/schedule.h"
#include "plugins/schedules/constant/constant.pb.h"

namespace pipeline {
namespace {

class ConstantSchedule : public LearningRateSchedule {
 public:
  double Factor(int64_t, int64_t, int64_t) const override { return 1.0; }
};

PIPELINE_DEFAULT_PLUGIN(LearningRateSchedule, "learning_rate.schedule", "constant");
PIPELINE_REGISTER_PLUGIN(LearningRateSchedule, "constant", ConstantScheduleOptions,
                         "The optimizer's learning rate, unchanged",
                         [](const ConstantScheduleOptions&, const ScheduleContext&)
                             -> absl::StatusOr<std::unique_ptr<LearningRateSchedule>> {
                           return std::make_unique<ConstantSchedule>();
                         });

}  // namespace
}  // namespace pipeline
