#include "pipeline/trainer/checkpoint_hook.h"

#include <algorithm>
#include <cmath>
#include <mutex>

#include "ATen/CPUGeneratorImpl.h"
#include "absl/strings/str_cat.h"
#include "pipeline/config/config_loader.h"
#include "pipeline/trainer/model_ema.h"
#include "pipeline/util/status_macros.h"

namespace pipeline {

torch::Tensor RandomState() {
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get_state();
}

void SetRandomState(const torch::Tensor& state) {
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_state(state);
}

CheckpointHook::CheckpointHook(const TrainContext& context,
                               const std::optional<FoundCheckpoint>& resume)
    : resolved_config_(ConfigToText(context.config())),
      best_value_(resume ? resume->checkpoint.contents.best_value
                         : std::numeric_limits<double>::quiet_NaN()) {
  if (context.primary && resume) rolling_ = ListCheckpoints(context.output_dir.string());
}

CheckpointContents CheckpointHook::Contents(const TrainContext& context,
                                            int64_t epochs_done) const {
  CheckpointContents contents{epochs_done, context.position.step, context.classes(),
                              resolved_config_};
  contents.best_value = best_value_;
  contents.rng_state = RandomState();
  if (context.scaler() != nullptr) {
    contents.grad_scale = context.scaler()->scale();
    contents.grad_scaler_growth_tracker = context.scaler()->state().growth_tracker;
  }
  if (context.ema != nullptr) contents.ema = context.ema->values();
  contents.states = context.saved_state;
  return contents;
}

absl::Status CheckpointHook::OnStepEnd(TrainContext& context, const StepReport&) {
  const CheckpointConfig& checkpoint = context.config().checkpoint();
  const TrainPosition& at = context.position;
  const bool every_steps = checkpoint.every_steps() > 0 &&
                           at.step % checkpoint.every_steps() == 0 &&
                           at.epoch_step < at.steps_per_epoch && at.step < at.total_steps;
  if (!every_steps && !context.stop_after_step) return absl::OkStatus();
  // Every rank adds its sums (the same decision on every rank: the step
  // counts are equal), so the checkpoint holds the whole job's.
  std::vector<double> sums = context.epoch_sums;
  RETURN_IF_ERROR(context.communicator().AllReduceSum(sums, "sum of the epoch's training figures"));
  RETURN_IF_ERROR(context.strategy().GatherOptimizerState(context.optimizer()));
  if (!context.primary) return absl::OkStatus();
  CheckpointContents contents = Contents(context, at.epoch);
  contents.epoch_step = at.epoch_step;
  contents.epoch_samples_per_rank = at.epoch_step * context.config().trainer().accumulate_steps() *
                                    context.config().train_data().batch_size();
  contents.world_size = context.communicator().world_size();
  contents.epoch_sums = std::move(sums);
  return Write(context, absl::StrCat("checkpoint_step_", at.step, ".pt"), contents,
               /*rolling=*/true, /*may_continue=*/!context.stop_after_step);
}

bool CheckpointHook::Improves(const TrainContext& context, const EpochReport& epoch) const {
  const std::string& name = context.config().checkpoint().best_metric();
  const Figure* figure = epoch.Find(name);
  return epoch.validated && figure != nullptr && BeatsBest(*figure, best_value_);
}

absl::Status CheckpointHook::OnEpochEnd(TrainContext& context, EpochReport& epoch) {
  // Every rank takes the same decisions (the epoch's figures are the
  // job's), so all of them gather the optimizer state for rank 0's writes.
  const bool improved = Improves(context, epoch);
  if (improved) best_value_ = epoch.Find(context.config().checkpoint().best_metric())->value;
  const CheckpointConfig& checkpoint = context.config().checkpoint();
  const int every = checkpoint.every_epochs();
  if (every <= 0 && checkpoint.every_steps() <= 0) return absl::OkStatus();
  const bool last = epoch.epoch == context.position.epochs;
  const bool rolling = every > 0 && (epoch.epoch % every == 0 || last);
  const bool best = improved && checkpoint.keep_best();
  if (!rolling && !best) return absl::OkStatus();
  RETURN_IF_ERROR(context.strategy().GatherOptimizerState(context.optimizer()));
  if (!context.primary) return absl::OkStatus();
  const CheckpointContents contents = Contents(context, epoch.epoch);
  if (rolling) {
    RETURN_IF_ERROR(
        Write(context, absl::StrCat("checkpoint_epoch_", epoch.epoch, ".pt"), contents, true));
  }
  if (best) RETURN_IF_ERROR(Write(context, "checkpoint_best.pt", contents, false));
  return absl::OkStatus();
}

absl::Status CheckpointHook::Write(TrainContext& context, const std::string& name,
                                   const CheckpointContents& contents, bool rolling,
                                   bool may_continue) {
  const std::string path = (context.output_dir / name).string();
  const absl::Status written =
      WriteCheckpoint(path, context.model(), context.optimizer(), contents);
  if (!written.ok()) return context.write_errors.Checkpoint(written, path, may_continue);
  context.progress.Line(absl::StrCat("checkpoint: ", path));
  if (!rolling) return absl::OkStatus();
  context.write_errors.set_resume_point(path);
  rolling_.erase(std::remove(rolling_.begin(), rolling_.end(), path), rolling_.end());
  rolling_.push_back(path);
  const int keep = context.config().checkpoint().keep_last();
  while (keep > 0 && static_cast<int>(rolling_.size()) > keep) {
    std::error_code error;
    std::filesystem::remove(rolling_.front(), error);
    std::filesystem::remove(ChecksumPathOf(rolling_.front()), error);
    rolling_.erase(rolling_.begin());
  }
  return absl::OkStatus();
}

}  // namespace pipeline
