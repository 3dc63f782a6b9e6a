#ifndef PIPELINE_TRAINER_RUN_HOOKS_H_
#define PIPELINE_TRAINER_RUN_HOOKS_H_

#include <cstdint>

#include "pipeline/data/loader.h"
#include "pipeline/reporting/step_profile.h"
#include "pipeline/trainer/bad_sample_report.h"
#include "pipeline/trainer/trainer_hook.h"

namespace pipeline {

// --profile_steps: where the first steps' time went (loader, forward and
// backward, gradient communication, optimizer step), one line per rank.
class ProfilerHook : public TrainerHook {
 public:
  explicit ProfilerHook(int64_t steps) : profile_(steps) {}
  absl::Status OnStepEnd(TrainContext& context, const StepReport& step) override;

 private:
  StepProfile profile_;
};

// data.on_bad_sample: SKIP: after each epoch, the samples skipped in it
// (counted over every rank), in the log and as an event; at the end, the
// run's tally. `validation` is null without validation data; its samples
// count only in epochs that validated.
class BadSampleHook : public TrainerHook {
 public:
  BadSampleHook(const Loader& train, const Loader* validation)
      : train_(train), validation_(validation) {}
  absl::Status OnEpochEnd(TrainContext& context, EpochReport& epoch) override;
  absl::Status OnRunEnd(TrainContext& context, TrainSummary& summary) override;

 private:
  const Loader& train_;
  const Loader* validation_;
  BadSampleReport report_;
};

}  // namespace pipeline

#endif  // PIPELINE_TRAINER_RUN_HOOKS_H_
