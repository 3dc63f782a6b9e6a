#ifndef PIPELINE_TRAINER_CHECKPOINT_HOOK_H_
#define PIPELINE_TRAINER_CHECKPOINT_HOOK_H_

#include <optional>
#include <string>
#include <vector>

#include "pipeline/checkpoint/checkpoint.h"
#include "pipeline/trainer/trainer_hook.h"

namespace pipeline {

// LibTorch's default CPU generator, saved in checkpoints (dropout, random
// init) and restored on resume.
torch::Tensor RandomState();
void SetRandomState(const torch::Tensor& state);

// The checkpoints of checkpoint { ... }: every_steps inside epochs, at the
// stop vote (checkpoint_on_signal), every_epochs and after the last epoch,
// checkpoint_best.pt by best_metric, and keep_last of the rolling ones.
// Every rank takes part (the step checkpoint's sums are added across
// ranks); rank 0 writes.
class CheckpointHook : public TrainerHook {
 public:
  // `resume` is the checkpoint the run continues from, if any.
  CheckpointHook(const TrainContext& context, const std::optional<FoundCheckpoint>& resume);

  absl::Status OnStepEnd(TrainContext& context, const StepReport& step) override;
  absl::Status OnEpochEnd(TrainContext& context, EpochReport& epoch) override;

 private:
  CheckpointContents Contents(const TrainContext& context, int64_t epochs_done) const;
  // Writes `name`; a rolling one counts toward keep_last. A checkpoint that
  // cannot be written ends the run or, under on_write_error: CONTINUE, is
  // left out; `may_continue` is false for the checkpoint of a run that
  // stops after it.
  absl::Status Write(TrainContext& context, const std::string& name,
                     const CheckpointContents& contents, bool rolling, bool may_continue = true);
  bool Improves(const TrainContext& context, const EpochReport& epoch) const;

  const std::string resolved_config_;
  std::vector<std::string> rolling_;  // oldest first
  double best_value_;
};

}  // namespace pipeline

#endif  // PIPELINE_TRAINER_CHECKPOINT_HOOK_H_
