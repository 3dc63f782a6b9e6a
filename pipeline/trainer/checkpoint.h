#ifndef PIPELINE_TRAINER_CHECKPOINT_H_
#define PIPELINE_TRAINER_CHECKPOINT_H_

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
};

// Writes model parameters and buffers (under their state_dict names), the
// optimizer state and `contents` to `path` in LibTorch's archive format.
// The file appears whole or not at all: it is written next to `path`,
// flushed to disk, then renamed over it.
absl::Status WriteCheckpoint(const std::string& path, Model& model, Optimizer& optimizer,
                             const CheckpointContents& contents);

struct LoadedCheckpoint {
  CheckpointContents contents;
  // Model parameters and buffers under their state_dict names.
  std::vector<std::pair<std::string, torch::Tensor>> model;
};

// Reads what WriteCheckpoint wrote (all but the optimizer state), or an
// error naming `path`: missing, truncated, or not a checkpoint of this
// project.
absl::StatusOr<LoadedCheckpoint> ReadCheckpoint(const std::string& path);

// Writes `text` to `path` the same all-or-nothing way.
absl::Status WriteFileAtomically(const std::string& path, const std::string& text);

}  // namespace pipeline

#endif  // PIPELINE_TRAINER_CHECKPOINT_H_
