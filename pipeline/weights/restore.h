#ifndef PIPELINE_WEIGHTS_RESTORE_H_
#define PIPELINE_WEIGHTS_RESTORE_H_

// A trained model back from a checkpoint of train: the checkpoint carries
// its resolved config and class names, so nothing else is needed. Used by
// the predict and export_weights tools.

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "pipeline/checkpoint/checkpoint.h"
#include "pipeline/config/pipeline.pb.h"
#include "pipeline/interfaces/model.h"

namespace pipeline {

struct RestoredModel {
  std::unique_ptr<Model> model;  // in eval mode, with the checkpoint's weights
  PipelineConfig config;         // the resolved config the run trained with
  LoadedCheckpoint checkpoint;
};

// Builds the model the checkpoint's config describes (its model plugin must
// be linked in) and loads the checkpoint's weights into it; an error names
// the file and, for weights that do not fit, every offending tensor.
// `ema`: the checkpoint's trainer.ema average instead of the raw weights
// (an error naming the file where the run kept none).
absl::StatusOr<RestoredModel> RestoreModel(const std::string& checkpoint_path, bool ema = false);

}  // namespace pipeline

#endif  // PIPELINE_WEIGHTS_RESTORE_H_
