#ifndef PIPELINE_TRAINER_TRAIN_RUN_H_
#define PIPELINE_TRAINER_TRAIN_RUN_H_

// What a training run is made of: the one owner of its parts. SetUpRun
// (run_setup.h) builds it; the loop and its hooks reach the parts through
// TrainContext::run (trainer_hook.h).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/checkpoint/checkpoint.h"
#include "pipeline/config/pipeline.pb.h"
#include "pipeline/interfaces/loss.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/interfaces/optimizer.h"
#include "pipeline/interfaces/schedule.h"
#include "pipeline/interfaces/strategy.h"
#include "pipeline/trainer/compute_format.h"
#include "pipeline/trainer/cuda_graph_step.h"
#include "pipeline/trainer/data_pipeline.h"
#include "pipeline/trainer/grad_scaler.h"
#include "pipeline/trainer/metric_set.h"

namespace pipeline {

struct TrainRun {
  // The config the run trains with: the resolved one with trainer.precision
  // and memory_format decided for the device (never AUTO).
  PipelineConfig config;
  ComputeFormat compute;  // what was decided, and why
  std::unique_ptr<Strategy> strategy;
  DataPipeline train;
  std::optional<DataPipeline> validation;
  std::vector<std::string> classes;
  std::string sample_shape;  // of a transformed training sample, "1x28x28"
  std::unique_ptr<Model> model;
  std::unique_ptr<Optimizer> optimizer;
  std::vector<double> base_lr;  // of each parameter group
  // The optimizer's own lr, before any group's lr_scale: what the schedule's
  // bounds are relative to and the learning rate the log reports.
  double optimizer_lr = 0;
  // One line per parameter group (DescribeParameterGroups).
  std::vector<std::string> parameter_groups;
  std::unique_ptr<LearningRateSchedule> schedule;
  std::unique_ptr<Loss> loss;
  std::optional<MetricSet> metrics;
  std::optional<GradScaler> scaler;
  // trainer.cuda_graphs: runs the training forward and backward.
  std::unique_ptr<CudaGraphStep> graph_step;
  std::optional<FoundCheckpoint> resume;
  int64_t steps_per_epoch = 0;
  int64_t total_steps = 0;
  int64_t epochs = 0;
};

}  // namespace pipeline

#endif  // PIPELINE_TRAINER_TRAIN_RUN_H_
