#ifndef PIPELINE_TRAINER_VALIDATION_FEEDBACK_H_
#define PIPELINE_TRAINER_VALIDATION_FEEDBACK_H_

// Hooks that act on validation figures: early stopping, and schedules that
// follow a figure (plateau). Both run after validation and before the
// checkpoint hook, and keep their state in TrainContext::saved_state so a
// resumed run decides as an uninterrupted one.

#include <cstdint>
#include <string>

#include "pipeline/interfaces/schedule.h"
#include "pipeline/trainer/trainer_hook.h"

namespace pipeline {

// trainer.early_stopping: after `patience` validations in a row in which
// the figure did not beat its best by more than min_delta, the run ends
// after this epoch (Keras' EarlyStopping: wait += 1; stop at wait >=
// patience). Every rank decides the same: the figures are whole-job sums.
class EarlyStoppingHook : public TrainerHook {
 public:
  explicit EarlyStoppingHook(const PipelineConfig& config);
  absl::Status OnRunStart(TrainContext& context) override;
  absl::Status OnEpochEnd(TrainContext& context, EpochReport& epoch) override;

 private:
  std::string metric_;
  int patience_;
  double min_delta_;
  double best_;  // NaN before the first validation
  int64_t validations_without_improvement_ = 0;
};

// Tells a schedule that follows a validation figure each validated value.
class ScheduleFeedbackHook : public TrainerHook {
 public:
  explicit ScheduleFeedbackHook(LearningRateSchedule& schedule) : schedule_(schedule) {}
  absl::Status OnRunStart(TrainContext& context) override;
  absl::Status OnEpochEnd(TrainContext& context, EpochReport& epoch) override;

 private:
  LearningRateSchedule& schedule_;
};

}  // namespace pipeline

#endif  // PIPELINE_TRAINER_VALIDATION_FEEDBACK_H_
