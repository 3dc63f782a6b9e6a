#ifndef PIPELINE_TRAINER_STOP_VOTE_H_
#define PIPELINE_TRAINER_STOP_VOTE_H_

#include <string>

#include "pipeline/trainer/trainer_hook.h"

namespace pipeline {

// checkpoint.checkpoint_on_signal: a stop signal reaches each rank at its
// own time, so after every step the ranks vote (one small all-reduce) and
// all of them stop after the same step, when any was signalled. A stop
// after the run's last step is no stop: the run ends as usual. The
// checkpoint hook, after this one, writes the step's checkpoint.
class StopVoteHook : public TrainerHook {
 public:
  absl::Status OnStepEnd(TrainContext& context, const StepReport& step) override;
};

// The error a run stopped by the vote returns (kCancelled), naming the
// signal (or another rank's) and the checkpoint to continue from.
absl::Status StoppedBySignal(const TrainContext& context);

}  // namespace pipeline

#endif  // PIPELINE_TRAINER_STOP_VOTE_H_
