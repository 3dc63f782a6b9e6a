#include "pipeline/trainer/run_setup.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <ostream>

#include "ATen/Context.h"
#include "ATen/Parallel.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "pipeline/config/config_loader.h"
#include "pipeline/trainer/checkpoint_hook.h"
#include "pipeline/trainer/compute_format.h"
#include "pipeline/trainer/output_write_errors.h"
#include "pipeline/trainer/parameter_groups.h"
#include "pipeline/trainer/run_info.h"
#include "pipeline/util/durable_file.h"
#include "pipeline/util/status_macros.h"
#include "pipeline/weights/build_model.h"
#include "pipeline/weights/pretrained.h"
#include "torch/utils.h"

namespace pipeline {
namespace {

// The ranks whose `value` differs from rank 0's ("" where every rank holds
// the same).
absl::StatusOr<std::string> RanksDifferingFromRankZero(Communicator& communicator,
                                                       const std::string& value,
                                                       const std::string& what) {
  if (communicator.world_size() < 2) return std::string();
  ASSIGN_OR_RETURN(std::vector<std::string> all, communicator.AllGather(value, what));
  std::vector<std::string> differing;
  for (size_t r = 1; r < all.size(); ++r) {
    if (all[r] != all[0]) differing.push_back(absl::StrCat(r));
  }
  return absl::StrJoin(differing, ", ");
}

}  // namespace

std::string SharedConfigText(const PipelineConfig& config) {
  PipelineConfig shared = config;
  shared.mutable_trainer()->clear_threads();
  return ConfigToText(shared);
}

namespace {

// Ranks started with different configs (another file, other --set flags)
// would train different things, or wait on each other forever.
absl::Status CheckSameConfigOnEveryRank(const PipelineConfig& config, Communicator& communicator) {
  ASSIGN_OR_RETURN(const std::string differing,
                   RanksDifferingFromRankZero(communicator, SharedConfigText(config),
                                              "comparison of the ranks' configs"));
  if (differing.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "the resolved config of rank", absl::StrContains(differing, ",") ? "s " : " ", differing,
      " differs from rank 0's; start every rank with the same config file and --set flags "
      "(compare with `train --print_config` on each machine)"));
}

// The checkpoint `resume` (RunOptions::resume) names, or nullopt to start
// fresh.
absl::StatusOr<std::optional<FoundCheckpoint>> FindResumePoint(const std::string& resume,
                                                               const std::string& output_dir,
                                                               std::ostream* log) {
  if (resume.empty()) return std::nullopt;
  if (resume == "auto") {
    std::optional<FoundCheckpoint> found = FindLatestCheckpoint(output_dir, log);
    if (log) {
      *log << (found ? absl::StrCat("resume: continuing from ", found->path, " (step ",
                                    found->checkpoint.contents.step, ")\n")
                     : absl::StrCat("resume: no checkpoint in ", output_dir,
                                    " yet; starting fresh\n"));
    }
    return found;
  }
  ASSIGN_OR_RETURN(LoadedCheckpoint loaded, ReadCheckpoint(resume));
  if (log) *log << "resume: continuing from " << resume << " (step " << loaded.contents.step << ")\n";
  return FoundCheckpoint{resume, std::move(loaded)};
}

absl::Status BuildData(const PipelineConfig& config, TrainRun& run) {
  ASSIGN_OR_RETURN(run.train, BuildData("train_data", config.train_data(), config, *run.strategy));
  run.classes = run.train.dataset->class_names();
  if (config.has_validation_data()) {
    ASSIGN_OR_RETURN(run.validation, BuildData("validation_data", config.validation_data(),
                                               config, *run.strategy, run.classes));
  }
  return absl::OkStatus();
}

// The model for the data, from the checkpoint's weights when resuming,
// prepared by the strategy (replicas are built from it).
absl::Status PrepareModel(const PipelineConfig& config, std::ostream* log, TrainRun& run) {
  // A transformed training sample tells the model its input channels.
  auto first = run.train.loader->FirstSample(0);
  if (!first.ok()) {
    return absl::Status(first.status().code(),
                        absl::StrCat("train_data: ", first.status().message()));
  }
  run.sample_shape = first->image.ShapeString();
  ModelInputs inputs{static_cast<int64_t>(run.classes.size()), first->image.channels};
  inputs.log = log;
  ASSIGN_OR_RETURN(run.model, BuildModel(config.model(), inputs));
  if (run.resume) {
    RETURN_IF_ERROR(LoadStateDict(*run.model, run.resume->checkpoint.model, run.resume->path,
                                  nullptr));
  }
  if (config.trainer().memory_format() == MemoryFormat::CHANNELS_LAST) {
    torch::NoGradGuard no_grad;
    for (at::Tensor& p : run.model->parameters()) {
      if (p.dim() == 4) p.set_data(p.contiguous(at::MemoryFormat::ChannelsLast));
    }
    for (at::Tensor& b : run.model->buffers()) {
      if (b.dim() == 4) b.set_data(b.contiguous(at::MemoryFormat::ChannelsLast));
    }
  }
  // Replicas take their weights from the model, not from a weights file.
  ModelInputs replica_inputs = inputs;
  replica_inputs.load_weights = false;
  replica_inputs.log = nullptr;
  const ModelConfig model_config = config.model();
  return run.strategy->Prepare(*run.model, [model_config, replica_inputs] {
    return BuildModel(model_config, replica_inputs);
  });
}

absl::Status BuildOptimization(const PipelineConfig& config, TrainRun& run) {
  // Frozen parameters (freeze_backbone) stay out, so neither weight decay
  // nor momentum moves them.
  ASSIGN_OR_RETURN(const OptimizerContext groups,
                   GroupParameters(config.optimizer().param_groups(), *run.model));
  run.parameter_groups = DescribeParameterGroups(groups);
  ASSIGN_OR_RETURN(run.optimizer, Registry<Optimizer>::Global().Create(config.optimizer(), groups));
  if (run.optimizer->param_groups().size() != groups.groups.size()) {
    return absl::InternalError(absl::StrCat(
        "optimizer \"", config.optimizer().name(), "\" made ",
        run.optimizer->param_groups().size(), " param groups of the ", groups.groups.size(),
        " it was given; an optimizer plugin must keep OptimizerContext::groups"));
  }
  for (auto& group : run.optimizer->param_groups()) {
    run.base_lr.push_back(group.options().get_lr());
  }
  // Exactly the optimizer's lr where a group is unscaled.
  run.optimizer_lr = run.base_lr[0] / groups.groups[0].lr_scale;
  for (size_t g = 0; g < groups.groups.size(); ++g) {
    if (groups.groups[g].lr_scale == 1) {
      run.optimizer_lr = run.base_lr[g];
      break;
    }
  }
  ASSIGN_OR_RETURN(run.schedule, Registry<LearningRateSchedule>::Global().Create(
                                     config.learning_rate().schedule(), {run.optimizer_lr}));
  // After base_lr is read: the saved state holds the last scheduled rate.
  if (run.resume) {
    RETURN_IF_ERROR(RestoreOptimizerState(run.resume->path, *run.optimizer));
    if (run.resume->checkpoint.contents.rng_state.defined()) {
      SetRandomState(run.resume->checkpoint.contents.rng_state);
    }
  }
  const TrainerConfig& trainer = config.trainer();
  // trainer.grad_scaler (on under FP16_AUTOCAST): backward runs on the
  // scaled loss; the gradients are unscaled before the step.
  if (trainer.grad_scaler().has_enabled() ? trainer.grad_scaler().enabled()
                                          : trainer.precision() == TrainerConfig::FP16_AUTOCAST) {
    run.scaler.emplace(trainer.grad_scaler());
    if (run.resume && run.resume->checkpoint.contents.grad_scale > 0) {
      run.scaler->Restore({run.resume->checkpoint.contents.grad_scale,
                           run.resume->checkpoint.contents.grad_scaler_growth_tracker});
    }
  }
  return absl::OkStatus();
}

absl::Status CheckValidationFigureNames(const PipelineConfig& config, const TrainRun& run);

absl::Status BuildObjective(const PipelineConfig& config, TrainRun& run) {
  auto loss = Registry<Loss>::Global().Create(
      config.loss(), {static_cast<int64_t>(run.classes.size())});
  if (!loss.ok()) {
    return absl::Status(loss.status().code(), absl::StrCat("loss: ", loss.status().message()));
  }
  run.loss = std::move(*loss);
  ASSIGN_OR_RETURN(run.metrics, MetricSet::Create(config, run.classes));
  return CheckValidationFigureNames(config, run);
}

// Every option that names a validation figure names one this run has.
absl::Status CheckValidationFigureNames(const PipelineConfig& config, const TrainRun& run) {
  std::vector<std::string> names;
  for (const std::string& name : run.metrics->Names()) names.push_back("val_" + name);
  if (config.trainer().ema().decay() > 0) {
    for (const std::string& name : run.metrics->Names()) names.push_back("val_" + name + "_ema");
  }
  auto check = [&](const std::string& field, const std::string& value) -> absl::Status {
    if (!config.has_validation_data()) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ": \"", value, "\" is a validation figure, and this run has no "
          "validation_data; add validation_data or remove ", field));
    }
    if (std::find(names.begin(), names.end(), value) != names.end()) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": \"", value, "\" is not a validation figure of this run; choose one of: ",
                     absl::StrJoin(names, ", ")));
  };
  const CheckpointConfig& checkpoint = config.checkpoint();
  if (config.has_validation_data() && checkpoint.keep_best()) {
    RETURN_IF_ERROR(check("checkpoint.best_metric", checkpoint.best_metric()));
  }
  const EarlyStoppingConfig& early = config.trainer().early_stopping();
  if (early.patience() > 0) {
    RETURN_IF_ERROR(check("trainer.early_stopping.metric",
                          early.has_metric() ? early.metric() : checkpoint.best_metric()));
  }
  const std::string monitored = run.schedule->MonitoredFigure();
  if (!monitored.empty()) {
    RETURN_IF_ERROR(check(
        absl::StrCat("learning_rate.schedule \"", config.learning_rate().schedule().name(),
                     "\" options.metric"),
        monitored));
  }
  return absl::OkStatus();
}

// Steps per epoch (the same on every rank, or the collectives of the
// longer ones would wait forever), total steps and epochs.
absl::Status CountSteps(const PipelineConfig& config, TrainRun& run) {
  const TrainerConfig& trainer = config.trainer();
  // What this rank sees of an epoch (a shard, under a distributed sampler).
  const int64_t samples_per_epoch = static_cast<int64_t>(
      run.train.sampler->EpochIndices(run.train.dataset->size(), 0).size());
  run.steps_per_epoch =
      run.train.loader->BatchesPerEpoch(samples_per_epoch) / trainer.accumulate_steps();
  ASSIGN_OR_RETURN(const std::string differing,
                   RanksDifferingFromRankZero(run.strategy->communicator(),
                                              absl::StrCat(run.steps_per_epoch),
                                              "comparison of the ranks' steps per epoch"));
  if (!differing.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "train_data.sampler: ranks would take different numbers of steps per epoch (rank ",
        run.strategy->rank(), ": ", run.steps_per_epoch,
        "); use the `distributed` sampler, which gives every rank an equal shard"));
  }
  if (run.steps_per_epoch == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "train_data: ", samples_per_epoch, " samples make no full batch of ",
        config.train_data().batch_size(), "; lower the batch size or set drop_last: false"));
  }
  run.total_steps = run.steps_per_epoch * trainer.epochs();
  if (trainer.max_steps() > 0) run.total_steps = std::min(run.total_steps, trainer.max_steps());
  run.epochs = (run.total_steps + run.steps_per_epoch - 1) / run.steps_per_epoch;
  return absl::OkStatus();
}

// trainer.precision and memory_format decided for the strategy's device
// (compute_format.h), the same on every rank: ranks whose hardware would
// decide AUTO differently all run float32 and contiguous.
absl::StatusOr<ComputeFormat> ChooseComputeFormatOnEveryRank(const TrainerConfig& trainer,
                                                             Strategy& strategy) {
  ASSIGN_OR_RETURN(ComputeFormat format,
                   ChooseComputeFormat(trainer, DescribeDevice(strategy.device()),
                                       MeasureCpuBf16Slowdown));
  ASSIGN_OR_RETURN(const std::string differing,
                   RanksDifferingFromRankZero(
                       strategy.communicator(),
                       absl::StrCat(format.precision, " ", format.channels_last),
                       "comparison of the ranks' precision and memory format"));
  if (differing.empty()) return format;
  format.precision = TrainerConfig::FP32;
  if (trainer.memory_format() == MemoryFormat::AUTO) format.channels_last = false;
  format.reason = absl::StrCat("precision: AUTO chose FP32: rank",
                               absl::StrContains(differing, ",") ? "s " : " ", differing,
                               " would decide differently from rank 0 (other hardware), and "
                               "every rank must compute alike");
  return format;
}

}  // namespace

absl::StatusOr<TrainRun> SetUpRun(const PipelineConfig& user_config, const RunOptions& options,
                                  std::ostream* log) {
  const TrainerConfig& user_trainer = user_config.trainer();
  at::set_num_threads(user_trainer.threads());
  if (user_trainer.deterministic()) at::globalContext().setDeterministicAlgorithms(true, false);
  TrainRun run;
  ASSIGN_OR_RETURN(run.strategy, Registry<Strategy>::Global().Create(
                                     user_config.strategy(), {.seed = user_trainer.seed()}));
  Communicator& communicator = run.strategy->communicator();
  RETURN_IF_ERROR(CheckSameConfigOnEveryRank(user_config, communicator));
  ASSIGN_OR_RETURN(run.compute, ChooseComputeFormatOnEveryRank(user_trainer, *run.strategy));
  run.config = user_config;
  ApplyComputeFormat(run.compute, *run.config.mutable_trainer());
  const PipelineConfig& config = run.config;
  const TrainerConfig& trainer = config.trainer();
  // After the probe, which draws random numbers.
  torch::manual_seed(trainer.seed());
  if (trainer.precision() == TrainerConfig::FP16_AUTOCAST && !run.strategy->device().is_cuda()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "trainer.precision: FP16_AUTOCAST runs on CUDA devices only, and strategy \"",
        config.strategy().name(), "\" runs on the CPU; set the strategy's device to a CUDA "
        "device (e.g. strategy { name: \"single\" options { device: \"cuda:0\" } }), or use "
        "precision: AUTO on the CPU (bf16 where it computes bf16 natively)"));
  }
  RETURN_IF_ERROR(CheckCudaGraphs(trainer, *run.strategy, config.strategy().name()));
  if (!run.strategy->is_primary()) log = nullptr;
  if (trainer.cuda_graphs()) {
    run.graph_step = std::make_unique<CudaGraphStep>([log](const std::string& line) {
      if (log != nullptr) *log << line << "\n";
    });
    absl::StrAppend(&run.compute.reason, "; cuda_graphs: the training step is captured after ",
                    CudaGraphStep::kWarmupSteps, " eager steps and replayed");
  }
  RETURN_IF_ERROR(BuildData(config, run));
  // A resumed run starts from the checkpoint's weights, before replicas
  // are built from them.
  ASSIGN_OR_RETURN(run.resume, FindResumePoint(options.resume, config.output_dir(), log));
  // Every rank must continue from the same step (a machine that cannot see
  // the checkpoints would start over and train something else).
  const int64_t resume_step = run.resume ? run.resume->checkpoint.contents.step : 0;
  ASSIGN_OR_RETURN(const std::string differing,
                   RanksDifferingFromRankZero(communicator, absl::StrCat(resume_step),
                                              "comparison of the ranks' resume steps"));
  if (!differing.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "resume: rank ", run.strategy->rank(), " would continue from step ", resume_step,
        " but other ranks from another; every rank must see the same output_dir (",
        config.output_dir(), ") to resume"));
  }
  RETURN_IF_ERROR(PrepareModel(config, log, run));
  RETURN_IF_ERROR(BuildOptimization(config, run));
  RETURN_IF_ERROR(BuildObjective(config, run));
  RETURN_IF_ERROR(CountSteps(config, run));
  return run;
}

absl::Status PrepareOutputDir(const PipelineConfig& config, const RunOptions& options,
                              const ComputeFormat& compute) {
  const std::filesystem::path output_dir(config.output_dir());
  auto setup_error = [](const absl::Status& status) {
    return absl::FailedPreconditionError(absl::StrCat("output_dir: ", status.message()));
  };
  std::error_code error;
  std::filesystem::create_directories(output_dir, error);
  if (error) {
    return absl::FailedPreconditionError(absl::StrCat(
        "output_dir: cannot create ", output_dir.string(), ": ", error.message()));
  }
  absl::Status written =
      WriteFileAtomically((output_dir / "config.textproto").string(), ConfigToText(config));
  if (!written.ok()) return setup_error(written);
  // Appended, not rewritten: a resumed run keeps the record of every start.
  std::ofstream run_info(output_dir / "run_info.jsonl", std::ios::app);
  run_info << RunInfoJson({options.command_line, options.source_dir, ComputeFormatFields(compute)})
           << "\n" << std::flush;
  written = StreamWriteStatus(run_info, (output_dir / "run_info.jsonl").string());
  return written.ok() ? absl::OkStatus() : setup_error(written);
}

}  // namespace pipeline
