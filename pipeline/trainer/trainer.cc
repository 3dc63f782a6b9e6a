#include "pipeline/trainer/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "pipeline/data/device_maps.h"
#include "pipeline/trainer/autocast.h"
#include "pipeline/trainer/checkpoint_hook.h"
#include "pipeline/trainer/gradient_clipping.h"
#include "pipeline/trainer/log_hooks.h"
#include "pipeline/trainer/model_ema.h"
#include "pipeline/trainer/nonfinite_guard.h"
#include "pipeline/trainer/run_hooks.h"
#include "pipeline/trainer/run_setup.h"
#include "pipeline/trainer/stop_vote.h"
#include "pipeline/trainer/trainer_hook.h"
#include "pipeline/trainer/validation_feedback.h"
#include "pipeline/trainer/validation_hook.h"
#include "pipeline/util/durable_file.h"
#include "pipeline/util/status_macros.h"
#include "pipeline/util/torch_status.h"

namespace pipeline {
namespace {

using Clock = std::chrono::steady_clock;
using Hooks = std::vector<std::unique_ptr<TrainerHook>>;

// Keeps the batch transforms' random streams apart from the samples'.
constexpr uint64_t kBatchMixing = 0x62617463686d6978ULL;

double SecondsBetween(Clock::time_point start, Clock::time_point end) {
  return std::chrono::duration<double>(end - start).count();
}

double WarmupFactor(const LearningRateConfig& config, int64_t step, int64_t steps_per_epoch) {
  const int64_t warmup = config.warmup_epochs() > 0
                             ? static_cast<int64_t>(std::llround(config.warmup_epochs() *
                                                                 steps_per_epoch))
                             : config.warmup_steps();
  if (step >= warmup) return 1.0;
  const double start = config.warmup_start_factor();
  return start + (1.0 - start) * static_cast<double>(step) / static_cast<double>(warmup);
}

// The figures of `sums`, named `prefix`<name>.
std::vector<Figure> Prefixed(const MetricSet& metrics, const std::vector<double>& sums,
                             const std::string& prefix) {
  std::vector<Figure> figures = metrics.Values(sums);
  for (Figure& figure : figures) figure.name = prefix + figure.name;
  return figures;
}

void AddInto(std::vector<double>& total, const std::vector<double>& part) {
  for (size_t i = 0; i < total.size(); ++i) total[i] += part[i];
}

// The training loop: epochs of steps, each step
//   batches -> strategy.ForwardBackward -> non-finite check -> strategy.Step
// and the hooks told after each step, epoch and the run. Everything else
// (checkpoints, logs, validation, votes) lives in the hooks.
class TrainingLoop {
 public:
  TrainingLoop(TrainContext& context, Hooks& hooks)
      : run_(context.run), context_(context), hooks_(hooks) {}

  absl::StatusOr<TrainSummary> Run() {
    const Clock::time_point run_start = Clock::now();
    for (auto& hook : hooks_) RETURN_IF_ERROR(hook->OnRunStart(context_));
    TrainSummary summary;
    const int64_t first = run_.resume ? run_.resume->checkpoint.contents.epoch : 0;
    for (int64_t epoch = first; epoch < run_.epochs; ++epoch) {
      context_.position.epoch = epoch;
      ASSIGN_OR_RETURN(EpochReport report, TrainEpoch());
      for (auto& hook : hooks_) RETURN_IF_ERROR(hook->OnEpochEnd(context_, report));
      summary.figures.clear();
      for (const Figure& figure : report.figures) {
        summary.figures.push_back({figure.name, figure.value});
      }
      summary.train_loss = report.Value("train_loss");
      summary.train_accuracy = report.Value("train_acc");
      summary.val_loss = report.Value("val_loss");
      summary.val_accuracy = report.Value("val_acc");
      summary.epochs = epoch + 1;
      if (context_.stop_after_epoch) break;
    }
    summary.steps = context_.position.step;
    summary.skipped_steps = context_.skipped_steps;
    summary.images_per_sec = train_images_ / std::max(train_seconds_, 1e-9);
    summary.wall_seconds = SecondsBetween(run_start, Clock::now());
    for (auto& hook : hooks_) RETURN_IF_ERROR(hook->OnRunEnd(context_, summary));
    return summary;
  }

 private:
  // One epoch, from where a mid-epoch resume left it.
  absl::StatusOr<EpochReport> TrainEpoch() {
    const Clock::time_point start = Clock::now();
    StartEpoch();
    const double samples_before = MetricSet::Samples(context_.epoch_sums);
    const int64_t steps_before = context_.position.epoch_step;
    window_ = run_.metrics->EmptySums();
    while (context_.position.step < context_.position.total_steps) {
      ASSIGN_OR_RETURN(std::optional<StepReport> step, TrainStep());
      if (!step) break;  // the epoch's data ran out
      if (IsLogStep() && MetricSet::Samples(window_) > 0) {
        const double elapsed = SecondsBetween(start, Clock::now());
        step->window = run_.metrics->Values(window_);
        step->images_per_sec = (MetricSet::Samples(context_.epoch_sums) - samples_before) *
                               context_.communicator().world_size() / std::max(elapsed, 1e-9);
        step->eta_seconds = (context_.position.total_steps - context_.position.step) * elapsed /
                            std::max<int64_t>(context_.position.epoch_step - steps_before, 1);
        window_ = run_.metrics->EmptySums();
      }
      for (auto& hook : hooks_) RETURN_IF_ERROR(hook->OnStepEnd(context_, *step));
      if (context_.stop_after_step) return StoppedBySignal(context_);
    }
    EpochReport report;
    report.epoch = context_.position.epoch + 1;
    report.seconds = SecondsBetween(start, Clock::now());
    report.images = static_cast<int64_t>(
        (MetricSet::Samples(context_.epoch_sums) - samples_before) *
        context_.communicator().world_size());
    train_seconds_ += report.seconds;
    train_images_ += report.images;
    std::vector<double> sums = context_.epoch_sums;
    RETURN_IF_ERROR(
        context_.communicator().AllReduceSum(sums, "sum of the epoch's training figures"));
    report.figures = Prefixed(*run_.metrics, sums, "train_");
    return report;
  }

  // The epoch's order from the sampler; resuming inside this epoch, what
  // the checkpoint's run had not taken of it (batches are consecutive runs
  // of the order, so with the same world size the rest stay the same; with
  // another the sampler deals the rest anew), and its sums so far come back
  // on rank 0, which saved the whole job's.
  void StartEpoch() {
    TrainPosition& at = context_.position;
    at.epoch_step = 0;
    context_.epoch_sums = run_.metrics->EmptySums();
    const CheckpointContents* resumed =
        run_.resume ? &run_.resume->checkpoint.contents : nullptr;
    if (resumed == nullptr || at.epoch != resumed->epoch) {
      run_.train.loader->StartEpoch(
          at.epoch, run_.train.sampler->EpochIndices(run_.train.dataset->size(), at.epoch));
      return;
    }
    const TrainerConfig& trainer = context_.config().trainer();
    const int world_size = context_.communicator().world_size();
    EpochProgress done{resumed->epoch_step * trainer.accumulate_steps() *
                           context_.config().train_data().batch_size(),
                       world_size};
    if (resumed->world_size > 0) {
      done = {resumed->epoch_samples_per_rank, static_cast<int>(resumed->world_size)};
    }
    std::vector<int64_t> order =
        run_.train.sampler->RemainingEpochIndices(run_.train.dataset->size(), at.epoch, done);
    at.epoch_step = resumed->epoch_step;
    if (done.world_size != world_size) {
      // Steps count in this run's units from here: an epoch has another
      // number of them, and the schedule and max_steps go by the epochs
      // done.
      const int64_t steps_left =
          run_.train.loader->BatchesPerEpoch(static_cast<int64_t>(order.size())) /
          trainer.accumulate_steps();
      at.epoch_step = resumed->epoch_step == 0
                          ? 0
                          : std::max<int64_t>(at.steps_per_epoch - steps_left, 0);
      at.step = at.epoch * at.steps_per_epoch + at.epoch_step;
    }
    if (resumed->epoch_step > 0 && context_.primary &&
        resumed->epoch_sums.size() == context_.epoch_sums.size()) {
      context_.epoch_sums = resumed->epoch_sums;
    }
    run_.train.loader->StartEpoch(at.epoch, std::move(order));
  }

  // One optimizer step over trainer.accumulate_steps loader batches, or
  // none when the epoch has fewer left (they are left out).
  absl::StatusOr<std::optional<StepReport>> TrainStep() {
    const Clock::time_point start = Clock::now();
    std::vector<Batch> batches;
    for (int k = 0; k < context_.config().trainer().accumulate_steps(); ++k) {
      ASSIGN_OR_RETURN(std::optional<Batch> batch, run_.train.loader->Next());
      if (!batch) return std::nullopt;
      ASSIGN_OR_RETURN(batch->images, CallTorch("normalizing a batch on the device", [&] {
                         return FinishedImages(*batch, run_.strategy->device());
                       }));
      batch->device_maps.clear();
      RETURN_IF_ERROR(ApplyBatchTransforms(*batch, k));
      batches.push_back(std::move(*batch));
    }
    const Clock::time_point data_ready = Clock::now();
    SetLearningRate();
    ReleaseGradients(*run_.optimizer);
    StepReport report;
    ASSIGN_OR_RETURN(std::optional<double> nonfinite_loss, ForwardBackward(batches, report));
    ASSIGN_OR_RETURN(report.applied, guard_.ApplyStep(context_, nonfinite_loss));
    const Clock::time_point computed = Clock::now();
    if (report.applied) {
      // The gradients are complete here: averaged, summed into replica 0,
      // unscaled.
      report.grad_norm = ClipGradients(*run_.model, context_.config().trainer().clip_grad());
      RETURN_IF_ERROR(run_.strategy->Step(*run_.optimizer));
      if (run_.scaler) run_.scaler->Update(/*found_inf=*/false);
      AddInto(context_.epoch_sums, report_sums_);
      AddInto(window_, report_sums_);
    }
    report.data_seconds = SecondsBetween(start, data_ready);
    report.compute_seconds = SecondsBetween(data_ready, computed);
    report.update_seconds = SecondsBetween(computed, Clock::now());
    ++context_.position.step;
    ++context_.position.epoch_step;
    return report;
  }

  // train_data.batch_transforms (mixup, cutmix) on micro-batch `k` of this
  // step, with randomness of its own: a function of the seed, the step and
  // the rank, so a resumed run mixes as an uninterrupted one.
  absl::Status ApplyBatchTransforms(Batch& batch, int k) {
    if (run_.train.batch_transforms.empty()) return absl::OkStatus();
    const uint64_t stream = static_cast<uint64_t>(context_.communicator().rank()) *
                                context_.config().trainer().accumulate_steps() + k;
    SampleRandom random(SampleRandom::Mix(context_.config().trainer().seed()) ^ kBatchMixing,
                        context_.position.step, stream);
    torch::Tensor targets = batch.labels;
    for (const auto& transform : run_.train.batch_transforms) {
      RETURN_IF_ERROR(transform->Apply(batch.images, targets, random));
    }
    batch.targets = targets;
    return absl::OkStatus();
  }

  // Forward and backward of every batch of the step; the step's figures
  // (of its finite batches) go to report_sums_. Returns the first
  // non-finite batch loss, if any: decided after the step's every batch,
  // as under ddp the other ranks wait in this step's collectives.
  absl::StatusOr<std::optional<double>> ForwardBackward(const std::vector<Batch>& batches,
                                                        StepReport& report) {
    const TrainerConfig& trainer = context_.config().trainer();
    const int accumulate = trainer.accumulate_steps();
    // Each accumulated batch contributes 1/accumulate of the step's gradient.
    const LossFunction loss_function = [&](const torch::Tensor& logits,
                                           const torch::Tensor& labels) {
      const torch::Tensor loss =
          run_.loss->Compute(logits, labels, at::Reduction::Mean) / accumulate;
      return run_.scaler ? run_.scaler->Scale(loss) : loss;
    };
    report_sums_ = run_.metrics->EmptySums();
    std::optional<double> nonfinite_loss;
    for (int k = 0; k < accumulate; ++k) {
      const Batch& batch = batches[k];
      // Mixed batches are learned from their soft targets and counted in
      // the metrics under their dominant class.
      const torch::Tensor& targets = batch.targets.defined() ? batch.targets : batch.labels;
      const torch::Tensor labels =
          batch.targets.defined() ? batch.targets.argmax(1) : batch.labels;
      run_.strategy->SetGradientSynchronization(k + 1 == accumulate);
      AutocastScope autocast(trainer.precision());
      const torch::Tensor images = ModelInput(batch.images, trainer);
      ASSIGN_OR_RETURN(StepOutput output,
                       run_.graph_step ? run_.graph_step->ForwardBackward(
                                             *run_.strategy, *run_.model, images, targets,
                                             loss_function)
                                       : run_.strategy->ForwardBackward(*run_.model, images,
                                                                        targets, loss_function));
      report.images += batch.labels.size(0);
      report.communication_wait_seconds += output.communication_wait_seconds;
      const torch::Tensor logits = output.logits.to(at::kFloat);
      // Under loss scaling the strategy's loss is the scaled one, which may
      // overflow where the loss itself does not: the figure comes from the
      // logits instead (a few operations on B x classes). (So for a model
      // with auxiliary classifiers it is then the main loss alone; otherwise
      // it is the trained one, TrainingLoss, auxiliary terms included.)
      const double batch_loss =
          run_.scaler
              ? run_.loss->Compute(logits, targets, at::Reduction::Mean).item<double>()
              : output.loss.item<double>() * accumulate;
      if (!std::isfinite(batch_loss)) {
        if (!nonfinite_loss) nonfinite_loss = batch_loss;
        continue;
      }
      run_.metrics->Add(logits, labels, batch_loss * labels.size(0), report_sums_);
    }
    return nonfinite_loss;
  }

  void SetLearningRate() {
    const TrainPosition& at = context_.position;
    const double factor =
        run_.schedule->Factor(at.step, at.total_steps, at.steps_per_epoch) *
        WarmupFactor(context_.config().learning_rate(), at.step, at.steps_per_epoch);
    for (size_t g = 0; g < run_.base_lr.size(); ++g) {
      run_.optimizer->param_groups()[g].options().set_lr(run_.base_lr[g] * factor);
    }
    context_.position.learning_rate = run_.optimizer_lr * factor;
  }

  bool IsLogStep() const {
    const TrainPosition& at = context_.position;
    return at.step % context_.config().trainer().log_interval() == 0 || at.step == at.total_steps;
  }

  TrainRun& run_;
  TrainContext& context_;
  Hooks& hooks_;
  NonFiniteGuard guard_;
  std::vector<double> report_sums_;  // of the step in progress
  std::vector<double> window_;       // this rank's, since the last logged step
  double train_seconds_ = 0;
  int64_t train_images_ = 0;
};

int64_t CountParameters(Model& model) {
  int64_t count = 0;
  for (const auto& p : model.parameters()) count += p.numel();
  return count;
}

void PrintHeader(const PipelineConfig& config, const TrainRun& run, std::ostream& log) {
  log << absl::StrFormat(
      "train: %d samples, %d classes, sample %s; validation: %s; model %s, %d parameters; "
      "%d steps (%d epochs x %d), %d compute threads; strategy %s, world size %d\n",
      run.train.dataset->size(), run.classes.size(), run.sample_shape,
      run.validation ? absl::StrCat(run.validation->dataset->size(), " samples") : "none",
      config.model().name(), CountParameters(*run.model), run.total_steps, run.epochs,
      run.steps_per_epoch, config.trainer().threads(), config.strategy().name(),
      run.strategy->world_size());
  log << "compute: " << TrainerConfig::Precision_Name(run.compute.precision)
      << (run.compute.channels_last ? ", channels-last" : ", contiguous") << " on "
      << run.compute.device << "; " << run.compute.reason << "\n";
  for (const std::string& group : run.parameter_groups) {
    log << "optimizer " << config.optimizer().name() << ": " << group << "\n";
  }
}

// The hooks of `config`, in the order they hear each event: the EMA
// update before any step checkpoint, the stop vote before the checkpoint
// it asks for, validation before whatever acts on or reports its figures,
// checkpoints last (they pick the best by the figures).
absl::StatusOr<Hooks> MakeHooks(const PipelineConfig& config, const RunOptions& options,
                                TrainRun& run, const TrainContext& context) {
  Hooks hooks;
  if (context.ema != nullptr) {
    hooks.push_back(std::make_unique<EmaHook>(
        *context.ema, run.resume ? &run.resume->checkpoint.contents.ema : nullptr));
  }
  if (config.checkpoint().checkpoint_on_signal()) hooks.push_back(std::make_unique<StopVoteHook>());
  const Loader* validation_loader = nullptr;
  if (run.validation) {
    auto validation = std::make_unique<ValidationHook>(std::move(*run.validation));
    validation_loader = validation->loader();
    hooks.push_back(std::move(validation));
    if (!run.schedule->MonitoredFigure().empty()) {
      hooks.push_back(std::make_unique<ScheduleFeedbackHook>(*run.schedule));
    }
    if (config.trainer().early_stopping().patience() > 0) {
      hooks.push_back(std::make_unique<EarlyStoppingHook>(config));
    }
  }
  if (options.profile_steps > 0) {
    hooks.push_back(std::make_unique<ProfilerHook>(options.profile_steps));
  }
  hooks.push_back(std::make_unique<ProgressHook>());
  hooks.push_back(std::make_unique<BadSampleHook>(*run.train.loader, validation_loader));
  if (context.primary) {
    // Nothing is trained yet: a file that cannot be written here (a full
    // disk) is a problem with output_dir, whatever on_write_error says.
    auto setup_error = [](const absl::Status& status) {
      return absl::FailedPreconditionError(absl::StrCat("output_dir: ", status.message()));
    };
    auto events = JsonEventsHook::Create(config.output_dir());
    if (!events.ok()) return setup_error(events.status());
    hooks.push_back(std::move(*events));
    auto writer = EventFileWriter::Create(config.output_dir());
    if (!writer.ok()) return setup_error(writer.status());
    hooks.push_back(std::make_unique<TensorBoardHook>(std::move(*writer)));
    hooks.push_back(std::make_unique<CurvesHook>(
        run.resume ? run.resume->checkpoint.contents.epoch : 0));
  }
  hooks.push_back(std::make_unique<CheckpointHook>(context, run.resume));
  return hooks;
}

}  // namespace

absl::StatusOr<TrainSummary> Train(const PipelineConfig& resolved, const RunOptions& options) {
  ASSIGN_OR_RETURN(TrainRun run, SetUpRun(resolved, options, options.log));
  // What the run trains with: precision and memory format decided.
  const PipelineConfig& config = run.config;
  const bool primary = run.strategy->is_primary();
  std::ostream* log = primary ? options.log : nullptr;
  if (log) PrintHeader(config, run, *log);
  // A folder the run cannot write fails here, before any training (and a
  // dry run checks it too), not at the first checkpoint.
  if (primary) RETURN_IF_ERROR(CheckDirectoryWritable(config.output_dir()));
  if (options.dry_run) {
    if (log) *log << "dry run: the config is valid and every plugin was built; nothing trained\n";
    return TrainSummary{};
  }
  // The config as written (AUTO stays AUTO: a resumed run decides again).
  if (primary) RETURN_IF_ERROR(PrepareOutputDir(resolved, options, run.compute));

  ProgressPrinter progress(log);
  std::ostream* events = primary ? options.events : nullptr;
  OutputWriteErrors write_errors(config.checkpoint().on_write_error(), config.output_dir(),
                                 [&progress](const std::string& line) { progress.Line(line); },
                                 events);
  // --resume=auto finds the checkpoint resumed from only in output_dir.
  if (std::error_code error;
      run.resume && std::filesystem::equivalent(
                        std::filesystem::path(run.resume->path).parent_path(),
                        std::filesystem::path(config.output_dir()), error)) {
    write_errors.set_resume_point(run.resume->path);
  }
  TrainContext context{
      .run = run,
      .options = options,
      .output_dir = std::filesystem::path(config.output_dir()),
      .primary = primary,
      .progress = progress,
      .events = events,
      .write_errors = write_errors,
  };
  context.position = {0, run.resume ? run.resume->checkpoint.contents.step : 0, 0,
                      run.steps_per_epoch, run.total_steps, run.epochs, 0};
  std::optional<ModelEma> ema;
  if (config.trainer().ema().decay() > 0) {
    ema.emplace(config.trainer().ema(), *run.model);
    context.ema = &*ema;
  }
  if (run.resume) context.saved_state = run.resume->checkpoint.contents.states;
  ASSIGN_OR_RETURN(Hooks hooks, MakeHooks(config, options, run, context));
  run.model->train();
  return TrainingLoop(context, hooks).Run();
}

}  // namespace pipeline
