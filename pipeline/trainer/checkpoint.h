#ifndef PIPELINE_TRAINER_CHECKPOINT_H_
#define PIPELINE_TRAINER_CHECKPOINT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
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

// Writes `text` to `path` the same all-or-nothing way.
absl::Status WriteFileAtomically(const std::string& path, const std::string& text);

}  // namespace pipeline

#endif  // PIPELINE_TRAINER_CHECKPOINT_H_
