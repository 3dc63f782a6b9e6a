#ifndef PIPELINE_TRAINER_RUN_SETUP_H_
#define PIPELINE_TRAINER_RUN_SETUP_H_

// Everything a training run is made of, built from a resolved config and
// checked before the first step: strategy, data, model, optimizer,
// schedule, loss, metrics, the checkpoint it resumes from, and that every
// rank agrees on all of it.

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "pipeline/checkpoint/checkpoint.h"
#include "pipeline/config/pipeline.pb.h"
#include "pipeline/interfaces/loss.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/interfaces/optimizer.h"
#include "pipeline/interfaces/schedule.h"
#include "pipeline/interfaces/strategy.h"
#include "pipeline/trainer/compute_format.h"
#include "pipeline/trainer/data_pipeline.h"
#include "pipeline/trainer/grad_scaler.h"
#include "pipeline/trainer/metric_set.h"
#include "pipeline/trainer/run_options.h"
#include "pipeline/trainer/train_run.h"

namespace pipeline {

// Builds the run of `config` (resolved); `log` (rank 0's) hears what
// resuming and pretrained weights did.
absl::StatusOr<TrainRun> SetUpRun(const PipelineConfig& config, const RunOptions& options,
                                  std::ostream* log);

// What every rank (and, in an elastic job, every node) must agree on: the
// resolved config less the fields set per machine (compute threads follow
// its cores), as text.
std::string SharedConfigText(const PipelineConfig& config);

// Writes the resolved config and a run_info.jsonl line into output_dir
// (rank 0). An error here is a problem with output_dir, as nothing is
// trained yet.
// `compute` (what AUTO decided) goes into the run_info.jsonl line.
absl::Status PrepareOutputDir(const PipelineConfig& config, const RunOptions& options,
                              const ComputeFormat& compute);

}  // namespace pipeline

#endif  // PIPELINE_TRAINER_RUN_SETUP_H_
