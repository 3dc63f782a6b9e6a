#ifndef PIPELINE_TRAINER_TRAINER_H_
#define PIPELINE_TRAINER_TRAINER_H_

// The training loop shared by every strategy: epochs of
//   loader -> strategy.ForwardBackward(model, batch) -> optimizer.step
// with a validation pass, a checkpoint and a metrics line after each epoch.

#include "absl/status/statusor.h"
#include "pipeline/config/pipeline.pb.h"
#include "pipeline/trainer/run_options.h"

namespace pipeline {

// Trains as `config` (a resolved config, see ResolveConfig) says.
absl::StatusOr<TrainSummary> Train(const PipelineConfig& config, const RunOptions& options);

}  // namespace pipeline

#endif  // PIPELINE_TRAINER_TRAINER_H_
