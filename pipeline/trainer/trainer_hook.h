#ifndef PIPELINE_TRAINER_TRAINER_HOOK_H_
#define PIPELINE_TRAINER_TRAINER_HOOK_H_

// What runs beside the training loop (checkpoints, logs, validation, the
// profiler, votes) is a TrainerHook: the loop tells every hook, in order,
// when a run, an epoch and a step end, with a TrainContext that holds what
// the run is made of and where it stands. A new concern is a new hook, not
// another branch in the loop.

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "pipeline/config/pipeline.pb.h"
#include "pipeline/interfaces/communicator.h"
#include "pipeline/interfaces/loss.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/interfaces/optimizer.h"
#include "pipeline/interfaces/strategy.h"
#include "pipeline/trainer/grad_scaler.h"
#include "pipeline/trainer/metric_set.h"
#include "pipeline/trainer/output_write_errors.h"
#include "pipeline/trainer/progress_printer.h"
#include "pipeline/trainer/run_options.h"
#include "pipeline/trainer/train_run.h"

namespace pipeline {

class ModelEma;

// Where the run stands; the loop moves it, hooks read it.
struct TrainPosition {
  int64_t epoch = 0;       // 0-based epoch being trained
  int64_t step = 0;        // optimizer steps taken (applied or skipped)
  int64_t epoch_step = 0;  // steps taken in this epoch
  int64_t steps_per_epoch = 0;
  int64_t total_steps = 0;
  int64_t epochs = 0;
  double learning_rate = 0;  // of the first parameter group, this step
};

// What the run is made of, and its shared state.
struct TrainContext {
  // The run's parts (config, strategy, model, optimizer, loss, metrics,
  // classes, loss scaler), owned there; the accessors below name them.
  TrainRun& run;
  const RunOptions& options;
  const std::filesystem::path output_dir;
  // Rank 0 prints, writes checkpoints and files; the others compute.
  const bool primary;
  ProgressPrinter& progress;
  // JSON events for RunOptions::events (rank 0; null elsewhere).
  std::ostream* events;
  OutputWriteErrors& write_errors;
  TrainPosition position;
  // This rank's training sums of the epoch so far (MetricSet layout); on
  // rank 0 after a mid-epoch resume they include the whole job's sums
  // before it.
  std::vector<double> epoch_sums;
  // Set by the stop vote: every rank stops after this step.
  bool stop_after_step = false;
  // Set by early stopping (the same on every rank: it reads validation
  // figures summed across ranks): the run ends after this epoch's hooks.
  bool stop_after_epoch = false;
  // trainer.ema's average, or null.
  ModelEma* ema = nullptr;
  // Small named state of hooks (early stopping's counter, a plateau
  // schedule's factor) that checkpoints keep; a resumed run starts with
  // the checkpoint's.
  std::map<std::string, std::vector<double>> saved_state;
  // Optimizer steps skipped for non-finite values since this run started.
  int64_t skipped_steps = 0;

  // The config the run trains with (precision and memory format decided).
  const PipelineConfig& config() const { return run.config; }
  Strategy& strategy() const { return *run.strategy; }
  Communicator& communicator() const { return run.strategy->communicator(); }
  Model& model() const { return *run.model; }
  Optimizer& optimizer() const { return *run.optimizer; }
  const Loss& loss() const { return *run.loss; }
  const MetricSet& metrics() const { return *run.metrics; }
  const std::vector<std::string>& classes() const { return run.classes; }
  // Under loss scaling (trainer.grad_scaler), or null.
  GradScaler* scaler() const { return run.scaler ? &*run.scaler : nullptr; }
};

// One optimizer step, as the loop saw it.
struct StepReport {
  int64_t images = 0;  // this rank's
  bool applied = false;  // false: skipped for non-finite values
  // Seconds waiting for the loader, in forward+backward (with the
  // gradient communication it did not hide), and in the optimizer step.
  double data_seconds = 0, compute_seconds = 0, update_seconds = 0;
  double communication_wait_seconds = 0;
  // The gradients' total norm before trainer.clip_grad clipped them (NaN
  // without norm clipping, or on a skipped step).
  double grad_norm = std::numeric_limits<double>::quiet_NaN();
  // On a logging step (every trainer.log_interval steps and the last):
  // the figures of this rank's steps since the last one, the training
  // speed of this epoch so far (this rank's times the world size) and the
  // time the run still needs at that speed. Empty figures on other steps,
  // and where every step of the window was skipped.
  std::vector<Figure> window;
  double images_per_sec = 0;
  double eta_seconds = 0;
};

// One epoch's figures, "train_loss", "train_acc", ..., and after
// validation "val_loss", "val_acc", ...; hooks earlier in the list may add
// to them (validation does).
struct EpochReport {
  int64_t epoch = 0;  // 1-based, as printed
  double seconds = 0;
  int64_t images = 0;  // trained on in this epoch, all ranks
  std::vector<Figure> figures;
  bool validated = false;
  int64_t validation_samples = 0;  // when validated

  const Figure* Find(const std::string& name) const;
  double Value(const std::string& name) const;  // 0 when absent
};

class TrainerHook {
 public:
  virtual ~TrainerHook() = default;
  // Before the first step (also of a resumed run).
  virtual absl::Status OnRunStart(TrainContext& context) { return absl::OkStatus(); }
  virtual absl::Status OnStepEnd(TrainContext& context, const StepReport& step) {
    return absl::OkStatus();
  }
  virtual absl::Status OnEpochEnd(TrainContext& context, EpochReport& epoch) {
    return absl::OkStatus();
  }
  // After the last epoch; `summary` is complete but for what hooks add.
  virtual absl::Status OnRunEnd(TrainContext& context, TrainSummary& summary) {
    return absl::OkStatus();
  }
};

}  // namespace pipeline

#endif  // PIPELINE_TRAINER_TRAINER_HOOK_H_
