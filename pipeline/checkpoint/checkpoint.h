#ifndef PIPELINE_CHECKPOINT_CHECKPOINT_H_
#define PIPELINE_CHECKPOINT_CHECKPOINT_H_

// The checkpoint format: what train writes every so many steps and epochs
// (weights, optimizer state, where in the run it was), checksummed, written
// whole or not at all, and read back for --resume, predict and
// export_weights.

#include <iosfwd>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/interfaces/optimizer.h"

namespace pipeline {

struct CheckpointContents {
  int64_t epoch = 0;  // epochs completed
  int64_t step = 0;   // optimizer steps taken
  std::vector<std::string> class_names;
  std::string resolved_config;  // textproto
  // Where a run resumes exactly. Optimizer steps already taken in epoch
  // `epoch` (0-based; 0 at an epoch's end), and that epoch's running
  // training sums so far (MetricSet's layout: loss * samples, samples, the
  // metrics' sums).
  int64_t epoch_step = 0;
  std::vector<double> epoch_sums;
  // The samples each rank had taken of epoch `epoch` and how many ranks
  // the run had, so a run resumed with another world size deals the rest
  // of the epoch between its ranks (0: not recorded, older checkpoints).
  int64_t epoch_samples_per_rank = 0;
  int64_t world_size = 0;
  // Best value so far of checkpoint.best_metric (the value
  // checkpoint_best.pt holds), NaN before any validation. Stored under its
  // first name, best_val_accuracy, where -1 also meant none.
  double best_value = std::numeric_limits<double>::quiet_NaN();
  // State of LibTorch's default CPU generator (dropout, random init); the
  // data's randomness is a function of (seed, epoch, sample) and needs none.
  torch::Tensor rng_state;
  // The loss scale under precision: FP16_AUTOCAST (0 otherwise), and its
  // count of finite steps since it last changed.
  double grad_scale = 0;
  int64_t grad_scaler_growth_tracker = 0;
  // trainer.ema's average under the model's state_dict names (empty
  // without EMA).
  std::vector<std::pair<std::string, torch::Tensor>> ema;
  // Hooks' named state (TrainContext::saved_state).
  std::map<std::string, std::vector<double>> states;
};

// Writes model parameters and buffers (under their state_dict names), the
// optimizer state and `contents` to `path` in LibTorch's archive format.
// The file appears whole or not at all: it is written next to `path`,
// flushed to disk, then renamed over it. When that fails the temporary file
// is removed, `path` and its checksum file stay as they were, and the error
// names `path` and the reason: kResourceExhausted for a full disk or quota
// ("cannot write <path>: No space left on device"), kInternal otherwise.
absl::Status WriteCheckpoint(const std::string& path, Model& model, Optimizer& optimizer,
                             const CheckpointContents& contents);

struct LoadedCheckpoint {
  CheckpointContents contents;
  // Model parameters and buffers under their state_dict names.
  std::vector<std::pair<std::string, torch::Tensor>> model;
};

// Reads what WriteCheckpoint wrote (all but the optimizer state), or an
// error naming `path`: missing, truncated, or not a checkpoint of this
// project. When the checksum file written beside it exists (it always does
// for checkpoints written here; copies may leave it behind), the file must
// match it, or the error is kDataLoss.
absl::StatusOr<LoadedCheckpoint> ReadCheckpoint(const std::string& path);

// Loads the optimizer state of checkpoint `path` into `optimizer` (built
// for the same parameters).
absl::Status RestoreOptimizerState(const std::string& path, Optimizer& optimizer);

// The checksum file of checkpoint `path`: its CRC-32C and size, written
// before the checkpoint is renamed into place.
std::string ChecksumPathOf(const std::string& path);

// The rolling checkpoints train keeps in `dir` (checkpoint_epoch_N.pt,
// checkpoint_step_N.pt; not checkpoint_best.pt), oldest first (by
// modification time: they are written in step order).
std::vector<std::string> ListCheckpoints(const std::string& dir);

struct FoundCheckpoint {
  std::string path;
  LoadedCheckpoint checkpoint;
};

// The checkpoint in `dir` with the most steps that reads back whole; one
// that is corrupted or torn is passed over with a warning on `log` naming
// it and the reason. nullopt when there is none.
std::optional<FoundCheckpoint> FindLatestCheckpoint(const std::string& dir, std::ostream* log);


}  // namespace pipeline

#endif  // PIPELINE_CHECKPOINT_CHECKPOINT_H_
