#include "pipeline/trainer/trainer.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <thread>

#include "ATen/CPUGeneratorImpl.h"
#include "ATen/Context.h"
#include "ATen/Parallel.h"
#include "ATen/autocast_mode.h"
#include "ATen/ops/cross_entropy_loss.h"
#include "ATen/ops/stack.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "pipeline/config/config_loader.h"
#include "pipeline/data/loader.h"
#include "pipeline/interfaces/dataset.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/interfaces/optimizer.h"
#include "pipeline/interfaces/sampler.h"
#include "pipeline/interfaces/schedule.h"
#include "pipeline/interfaces/strategy.h"
#include "pipeline/interfaces/transform.h"
#include "pipeline/metrics/curves_svg.h"
#include "pipeline/metrics/event_file_writer.h"
#include "pipeline/metrics/step_profile.h"
#include "pipeline/trainer/bad_sample_report.h"
#include "pipeline/trainer/checkpoint.h"
#include "pipeline/trainer/grad_scaler.h"
#include "pipeline/trainer/output_write_errors.h"
#include "pipeline/trainer/run_info.h"
#include "pipeline/util/status_macros.h"
#include "pipeline/util/torch_status.h"
#include "pipeline/weights/pretrained.h"
#include "torch/csrc/autograd/grad_mode.h"
#include "torch/utils.h"

namespace pipeline {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string Duration(double seconds) {
  const int64_t s = static_cast<int64_t>(seconds);
  if (s >= 3600) return absl::StrFormat("%dh%02dm", s / 3600, s / 60 % 60);
  if (s >= 60) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%ds", s);
}

// One split's data: dataset, transforms, sampler and loader.
struct DataPipeline {
  std::unique_ptr<Dataset> dataset;
  std::vector<std::unique_ptr<Transform>> transforms;
  std::unique_ptr<Sampler> sampler;
  std::unique_ptr<Loader> loader;
};

absl::StatusOr<DataPipeline> BuildData(const std::string& path, const std::string& split,
                                       const DataConfig& config, const PipelineConfig& pipeline,
                                       const Strategy& strategy, int compute_threads,
                                       std::vector<int64_t> label_map = {}) {
  DataPipeline data;
  const uint64_t seed = pipeline.trainer().seed();
  auto prefixed = [&](const std::string& field, const absl::Status& status) {
    return absl::Status(status.code(), absl::StrCat(path, ".", field, ": ", status.message()));
  };
  auto dataset = Registry<Dataset>::Global().Create(config.dataset(), {split, seed});
  if (!dataset.ok()) return prefixed("dataset", dataset.status());
  data.dataset = std::move(*dataset);
  if (data.dataset->size() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ".dataset: holds no samples"));
  }
  std::vector<const Transform*> transforms;
  for (int i = 0; i < config.transforms_size(); ++i) {
    auto transform = Registry<Transform>::Global().Create(config.transforms(i), {});
    if (!transform.ok()) return prefixed(absl::StrCat("transforms[", i, "]"), transform.status());
    transforms.push_back(transform->get());
    data.transforms.push_back(std::move(*transform));
  }
  // Training samplers shard the data themselves (`distributed`); validation
  // samplers give the order of the whole set, which Evaluate splits between
  // the ranks without padding, so every sample is counted exactly once.
  const bool training = split == "train";
  auto sampler = Registry<Sampler>::Global().Create(
      config.sampler(),
      {seed, training ? strategy.rank() : 0, training ? strategy.world_size() : 1});
  if (!sampler.ok()) return prefixed("sampler", sampler.status());
  data.sampler = std::move(*sampler);
  LoaderOptions loader_options;
  loader_options.batch_size = config.batch_size();
  // Loader threads take the cores compute leaves; at least one.
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  loader_options.num_workers =
      config.num_workers() > 0 ? config.num_workers() : std::max(1, cores - compute_threads);
  loader_options.prefetch_batches = config.prefetch_batches();
  loader_options.drop_last = config.drop_last();
  loader_options.pin_memory = config.pin_memory() && strategy.CopiesBatchesToCuda();
  loader_options.seed = seed;
  loader_options.label_map = std::move(label_map);
  if (config.on_bad_sample() == DataConfig::SKIP) {
    loader_options.on_bad_sample = training ? BadSamplePolicy::kReplace : BadSamplePolicy::kDrop;
  }
  data.loader = std::make_unique<Loader>(data.dataset.get(), transforms, loader_options);
  return data;
}

// Validation labels follow the training classes by name, so a validation
// folder may hold a subset of the classes.
absl::StatusOr<std::vector<int64_t>> MapClasses(const std::vector<std::string>& train,
                                                const std::vector<std::string>& validation) {
  std::map<std::string, int64_t> train_index;
  for (size_t i = 0; i < train.size(); ++i) train_index[train[i]] = static_cast<int64_t>(i);
  std::vector<int64_t> map;
  for (const std::string& name : validation) {
    auto it = train_index.find(name);
    if (it == train_index.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "validation_data.dataset: class \"", name,
          "\" is in the validation data but not in the training data (training classes: ",
          absl::StrJoin(train, ", "), "); add it to the training data or remove it"));
    }
    map.push_back(it->second);
  }
  return map;
}

// trainer.precision: BF16_AUTOCAST runs the forward pass (and its backward)
// of one step under autocast, for CPU and CUDA tensors alike (each device's
// autocast only sees its own tensors); FP16_AUTOCAST for CUDA tensors only
// (the trainer refuses it for strategies that run on the CPU). The cast
// cache holds low-precision copies of the weights and is cleared when the
// scope ends, before the optimizer changes them.
class AutocastScope {
 public:
  explicit AutocastScope(const TrainerConfig& trainer)
      : enabled_(trainer.precision() != TrainerConfig::FP32) {
    if (!enabled_) return;
    if (trainer.precision() == TrainerConfig::BF16_AUTOCAST) {
      at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
      at::autocast::set_cpu_enabled(true);
    }
    at::autocast::set_autocast_gpu_dtype(
        trainer.precision() == TrainerConfig::FP16_AUTOCAST ? at::kHalf : at::kBFloat16);
    at::autocast::set_enabled(true);
  }
  ~AutocastScope() {
    if (!enabled_) return;
    at::autocast::set_cpu_enabled(false);
    at::autocast::set_enabled(false);
    at::autocast::clear_cache();
  }
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  const bool enabled_;
};

// A batch in the memory order the model's weights are kept in.
at::Tensor ModelInput(const at::Tensor& images, const TrainerConfig& trainer) {
  return trainer.channels_last() && images.dim() == 4
             ? images.contiguous(at::MemoryFormat::ChannelsLast)
             : images;
}

// trainer.channels_last: 4-d weights and buffers (convolutions) in NHWC
// order; the optimizer and every strategy see the same tensors.
void ToChannelsLast(Model& model) {
  torch::NoGradGuard no_grad;
  for (at::Tensor& p : model.parameters()) {
    if (p.dim() == 4) p.set_data(p.contiguous(at::MemoryFormat::ChannelsLast));
  }
  for (at::Tensor& b : model.buffers()) {
    if (b.dim() == 4) b.set_data(b.contiguous(at::MemoryFormat::ChannelsLast));
  }
}

struct EvalResult {
  double loss = 0;
  double accuracy = 0;
  int64_t samples = 0;
};

absl::StatusOr<EvalResult> Evaluate(Model& model, Strategy& strategy, DataPipeline& data,
                                    int64_t epoch, int64_t max_batches,
                                    const TrainerConfig& trainer) {
  model.eval();
  c10::InferenceMode inference;
  const std::vector<int64_t> order = data.sampler->EpochIndices(data.dataset->size(), epoch);
  std::vector<int64_t> shard;
  for (size_t i = strategy.rank(); i < order.size(); i += strategy.world_size()) {
    shard.push_back(order[i]);
  }
  data.loader->StartEpoch(epoch, std::move(shard));
  double loss_sum = 0, correct = 0, count = 0;
  for (int64_t batch_index = 0; max_batches == 0 || batch_index < max_batches; ++batch_index) {
    ASSIGN_OR_RETURN(std::optional<Batch> batch, data.loader->Next());
    if (!batch) break;
    torch::Tensor logits;
    {
      AutocastScope autocast(trainer);
      ASSIGN_OR_RETURN(logits, strategy.Forward(model, ModelInput(batch->images, trainer)));
    }
    // Sums in float32 whatever the forward pass ran in.
    logits = logits.to(at::kFloat);
    loss_sum += at::cross_entropy_loss(logits, batch->labels, {}, at::Reduction::Sum)
                    .item<double>();
    correct += logits.argmax(1).eq(batch->labels).sum().item<double>();
    count += static_cast<double>(batch->labels.size(0));
  }
  std::vector<double> sums = {loss_sum, correct, count};
  RETURN_IF_ERROR(strategy.SumAcrossProcesses(sums));
  model.train();
  EvalResult result;
  result.samples = static_cast<int64_t>(sums[2]);
  if (sums[2] > 0) {
    result.loss = sums[0] / sums[2];
    result.accuracy = sums[1] / sums[2];
  }
  return result;
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

int64_t CountParameters(Model& model) {
  int64_t count = 0;
  for (const auto& p : model.parameters()) count += p.numel();
  return count;
}

class ProgressPrinter {
 public:
  explicit ProgressPrinter(std::ostream* out)
      : out_(out), terminal_(out == &std::cerr && ::isatty(STDERR_FILENO)) {}

  // A transient line is redrawn in place on a terminal, after a bar filled
  // to `fraction` (0..1, or negative for none); elsewhere it is a plain log
  // line.
  void Line(const std::string& text, bool transient, double fraction = -1) {
    if (out_ == nullptr) return;
    if (terminal_ && transient) {
      std::string bar;
      if (fraction >= 0) {
        constexpr int kCells = 24;
        const int filled = static_cast<int>(std::min(1.0, fraction) * kCells + 0.5);
        bar = absl::StrCat("[", std::string(filled, '#'), std::string(kCells - filled, '.'), "] ");
      }
      *out_ << "\r\033[K" << bar << text << std::flush;
      pending_ = true;
      return;
    }
    if (pending_) *out_ << "\r\033[K";
    pending_ = false;
    *out_ << text << "\n" << std::flush;
  }

 private:
  std::ostream* out_;
  bool terminal_;
  bool pending_ = false;
};

// Whether every rank holds the same `value` (an integer count below 2^26, so
// its square adds up exactly). By Cauchy-Schwarz, sum(v)^2 == n * sum(v^2)
// only when all v are equal, and every rank sees the same sums, so all of
// them reach the same verdict.
absl::StatusOr<bool> SameOnEveryRank(Strategy& strategy, double value) {
  std::vector<double> sums = {value, value * value};
  RETURN_IF_ERROR(strategy.SumAcrossProcesses(sums));
  return sums[0] * sums[0] == strategy.world_size() * sums[1];
}

// FNV-1a: the same on every machine and build, unlike std::hash or absl::Hash.
uint64_t StableHash(const std::string& text) {
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : text) hash = (hash ^ c) * 1099511628211ull;
  return hash;
}

// Ranks started with different configs (another file, other --set flags)
// would train different things, or wait on each other forever; every rank
// compares the hash of its resolved config with every other's. Fields set
// per machine (compute threads follow its cores) are left out.
absl::Status CheckSameConfigOnEveryRank(const PipelineConfig& config, Strategy& strategy) {
  const int world = strategy.world_size();
  if (world < 2) return absl::OkStatus();
  PipelineConfig shared = config;
  shared.mutable_trainer()->clear_threads();
  const uint64_t hash = StableHash(ConfigToText(shared));
  // Three exact pieces of 22 bits per rank, gathered by a sum in which only
  // each rank's own slots are non-zero.
  std::vector<double> slots(3 * static_cast<size_t>(world), 0.0);
  for (int piece = 0; piece < 3; ++piece) {
    slots[3 * strategy.rank() + piece] = static_cast<double>((hash >> (22 * piece)) & 0x3fffff);
  }
  RETURN_IF_ERROR(strategy.SumAcrossProcesses(slots));
  std::vector<std::string> differing;
  for (int r = 1; r < world; ++r) {
    for (int piece = 0; piece < 3; ++piece) {
      if (slots[3 * r + piece] != slots[piece]) {
        differing.push_back(absl::StrCat(r));
        break;
      }
    }
  }
  if (differing.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "the resolved config of rank", differing.size() > 1 ? "s " : " ",
      absl::StrJoin(differing, ", "), " differs from rank 0's; start every rank with the same "
      "config file and --set flags (compare with `train --print_config` on each machine)"));
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

// The epochs of the metrics file up to `completed_epochs`, for the curves of
// a resumed run. An epoch trained twice (the run died after its metrics line,
// before its checkpoint) counts as its last line says.
std::vector<EpochPoint> EpochPointsOf(const std::filesystem::path& metrics_path,
                                      int64_t completed_epochs) {
  std::map<int64_t, EpochPoint> points;
  std::ifstream file(metrics_path);
  for (std::string line; std::getline(file, line);) {
    google::protobuf::Struct event;
    if (!google::protobuf::util::JsonStringToMessage(line, &event).ok()) continue;
    const auto& fields = event.fields();
    auto number = [&](const char* name) {
      auto it = fields.find(name);
      return it == fields.end() ? 0.0 : it->second.number_value();
    };
    auto it = fields.find("event");
    if (it == fields.end() || it->second.string_value() != "epoch") continue;
    EpochPoint point{static_cast<int64_t>(number("epoch")), number("train_loss"),
                     number("train_acc")};
    if (point.epoch < 1 || point.epoch > completed_epochs) continue;
    auto validated = fields.find("validated");
    if (validated != fields.end() && validated->second.bool_value()) {
      point.val_loss = number("val_loss");
      point.val_accuracy = number("val_acc");
    }
    points[point.epoch] = point;
  }
  std::vector<EpochPoint> result;
  for (const auto& [epoch, point] : points) result.push_back(point);
  return result;
}

// The first trainable parameter whose gradient holds a NaN or an Inf, named
// with which, or "" when every gradient is finite. One float sum per
// gradient (a single read of it: a fraction of a momentum SGD update's cost,
// and less than a double sum's): a NaN or Inf element makes it non-finite,
// and a sum that only overflowed is told apart by an exact look at that one
// gradient.
std::string FirstNonFiniteGradient(Model& model) {
  std::vector<at::Tensor> grads;
  std::vector<std::string> names;
  std::vector<at::Tensor> sums;
  for (const auto& parameter : model.named_parameters()) {
    const at::Tensor& grad = parameter.value().grad();
    if (!grad.defined()) continue;
    grads.push_back(grad);
    names.push_back(parameter.key());
    sums.push_back(grad.sum());
  }
  if (sums.empty()) return "";
  const at::Tensor finite = at::stack(sums).isfinite().cpu();
  if (finite.all().item<bool>()) return "";
  for (size_t i = 0; i < names.size(); ++i) {
    if (finite[static_cast<int64_t>(i)].item<bool>()) continue;
    if (grads[i].isfinite().all().item<bool>()) continue;
    return absl::StrCat("the gradient of parameter ", names[i], " holds ",
                        grads[i].isnan().any().item<bool>() ? "NaN" : "Inf");
  }
  return "";
}

std::string SignalName(int signal) {
  const char* name = signal == SIGINT ? "SIGINT" : signal == SIGTERM ? "SIGTERM" : "signal";
  return absl::StrCat(name, " (", strsignal(signal), ")");
}

at::Tensor RandomState() {
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get_state();
}

void SetRandomState(const at::Tensor& state) {
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_state(state);
}

// After each epoch under on_bad_sample: SKIP: the samples skipped in it, in
// the log and as an event. Every process calls it (the count is summed
// across them); `validation` is null when the epoch had no validation pass.
absl::Status ReportBadSamples(int64_t epoch, int64_t epochs, const PipelineConfig& config,
                              Strategy& strategy, const Loader& train, const Loader* validation,
                              ProgressPrinter& progress, std::ostream* events,
                              BadSampleReport& report) {
  const bool train_skips = config.train_data().on_bad_sample() == DataConfig::SKIP;
  const bool validation_skips =
      validation != nullptr && config.validation_data().on_bad_sample() == DataConfig::SKIP;
  if (!train_skips && !validation_skips) return absl::OkStatus();
  std::vector<double> counts = {static_cast<double>(train.skipped().count),
                                validation ? static_cast<double>(validation->skipped().count) : 0};
  RETURN_IF_ERROR(strategy.SumAcrossProcesses(counts));
  std::vector<std::string> lines;
  if (train_skips) {
    lines = report.EndEpoch(epoch, epochs, "train_data", static_cast<int64_t>(counts[0]),
                            train.skipped(), strategy.world_size());
  }
  if (validation_skips) {
    for (std::string& line :
         report.EndEpoch(epoch, epochs, "validation_data", static_cast<int64_t>(counts[1]),
                         validation->skipped(), strategy.world_size())) {
      lines.push_back(std::move(line));
    }
  }
  for (const std::string& line : lines) progress.Line(line, /*transient=*/false);
  if (events) {
    *events << absl::StrFormat(
                   "{\"event\":\"bad_samples\",\"epoch\":%d,\"train_skipped\":%d,"
                   "\"validation_skipped\":%d}\n",
                   epoch + 1, static_cast<int64_t>(counts[0]), static_cast<int64_t>(counts[1]))
            << std::flush;
  }
  return absl::OkStatus();
}

// Below it, gradients are not finite at any scale: the run has diverged.
constexpr double kSmallestLossScale = 1.0 / (1 << 24);

// A step GradScaler skips (its gradients overflowed float16 at this scale):
// counted with the skipped steps, and the scale backs off.
absl::Status SkipScalerStep(GradScaler& scaler, const std::string& nonfinite, int64_t step,
                            int64_t epoch, int64_t& skipped_steps, ProgressPrinter& progress) {
  const double scale = scaler.scale();
  scaler.Update(/*found_inf=*/true);
  ++skipped_steps;
  if (scaler.scale() < kSmallestLossScale) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "step %d (epoch %d): %s even at loss scale %g; the training has diverged. Lower the "
        "learning rate (optimizer.options.lr) or add warm-up (learning_rate.warmup_epochs)",
        step + 1, epoch + 1, nonfinite, scale));
  }
  progress.Line(absl::StrFormat("step %d (epoch %d): %s at loss scale %g; skipped this "
                                "optimizer step, loss scale now %g (%d skipped so far)",
                                step + 1, epoch + 1, nonfinite, scale, scaler.scale(),
                                skipped_steps),
                /*transient=*/false);
  return absl::OkStatus();
}

void SaveScalerState(const std::optional<GradScaler>& scaler, CheckpointContents& contents) {
  if (!scaler) return;
  contents.grad_scale = scaler->scale();
  contents.grad_scaler_growth_tracker = scaler->state().growth_tracker;
}

}  // namespace

absl::StatusOr<TrainSummary> Train(const PipelineConfig& config, const RunOptions& options) {
  const Clock::time_point run_start = Clock::now();
  const TrainerConfig& trainer = config.trainer();
  at::set_num_threads(trainer.threads());
  torch::manual_seed(trainer.seed());
  if (trainer.deterministic()) at::globalContext().setDeterministicAlgorithms(true, false);

  ASSIGN_OR_RETURN(std::unique_ptr<Strategy> strategy,
                   Registry<Strategy>::Global().Create(config.strategy(), {.seed = trainer.seed()}));
  RETURN_IF_ERROR(CheckSameConfigOnEveryRank(config, *strategy));
  if (trainer.precision() == TrainerConfig::FP16_AUTOCAST && !strategy->CopiesBatchesToCuda()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "trainer.precision: FP16_AUTOCAST runs on CUDA devices only, and strategy \"",
        config.strategy().name(), "\" runs on the CPU; set the strategy's device to a CUDA "
        "device (e.g. strategy { name: \"single\" options { device: \"cuda:0\" } }), or use "
        "precision: BF16_AUTOCAST on the CPU"));
  }
  const bool primary = strategy->is_primary();
  std::ostream* log = primary ? options.log : nullptr;
  std::ostream* events = primary ? options.events : nullptr;
  ProgressPrinter progress(log);

  ASSIGN_OR_RETURN(DataPipeline train,
                   BuildData("train_data", "train", config.train_data(), config, *strategy,
                             trainer.threads()));
  const std::vector<std::string>& classes = train.dataset->class_names();
  std::optional<DataPipeline> validation;
  if (config.has_validation_data()) {
    // The classes are only known once the dataset is built; build it, map
    // its classes, then build its loader with the mapping.
    ASSIGN_OR_RETURN(DataPipeline probe,
                     BuildData("validation_data", "validation", config.validation_data(), config,
                               *strategy, trainer.threads()));
    ASSIGN_OR_RETURN(std::vector<int64_t> label_map,
                     MapClasses(classes, probe.dataset->class_names()));
    ASSIGN_OR_RETURN(validation, BuildData("validation_data", "validation",
                                           config.validation_data(), config, *strategy,
                                           trainer.threads(), std::move(label_map)));
  }

  // A transformed training sample tells the model its input channels.
  auto first = train.loader->FirstSample(0);
  if (!first.ok()) {
    return absl::Status(first.status().code(),
                        absl::StrCat("train_data: ", first.status().message()));
  }
  ModelContext model_context{static_cast<int64_t>(classes.size()), first->image.channels};
  model_context.log = log;
  ASSIGN_OR_RETURN(std::unique_ptr<Model> model,
                   Registry<Model>::Global().Create(config.model(), model_context));
  // Replicas take their weights from the model, not from a weights file.
  ModelContext replica_context = model_context;
  replica_context.load_weights = false;
  replica_context.log = nullptr;
  const ModelFactory make_replica = [&config, replica_context] {
    return Registry<Model>::Global().Create(config.model(), replica_context);
  };
  // A resumed run starts from the checkpoint's weights, before replicas
  // are built from them.
  ASSIGN_OR_RETURN(std::optional<FoundCheckpoint> resume,
                   FindResumePoint(options.resume, config.output_dir(), log));
  if (resume) {
    RETURN_IF_ERROR(LoadStateDict(*model, resume->checkpoint.model, resume->path, nullptr));
  }
  if (strategy->world_size() > 1) {
    // Every rank must continue from the same step (a machine that cannot see
    // the checkpoints would start over and train something else).
    const double own = resume ? static_cast<double>(resume->checkpoint.contents.step) : 0.0;
    ASSIGN_OR_RETURN(const bool same, SameOnEveryRank(*strategy, own));
    if (!same) {
      return absl::FailedPreconditionError(absl::StrCat(
          "resume: rank ", strategy->rank(), " would continue from step ", own,
          " but other ranks from another; every rank must see the same output_dir (",
          config.output_dir(), ") to resume"));
    }
  }
  if (trainer.channels_last()) ToChannelsLast(*model);
  RETURN_IF_ERROR(strategy->Prepare(*model, make_replica));
  ASSIGN_OR_RETURN(std::unique_ptr<Optimizer> optimizer,
                   // Frozen parameters (freeze_backbone) stay out, so neither
                   // weight decay nor momentum moves them.
                   Registry<Optimizer>::Global().Create(config.optimizer(),
                                                        {TrainableParameters(*model)}));
  ASSIGN_OR_RETURN(std::unique_ptr<LearningRateSchedule> schedule,
                   Registry<LearningRateSchedule>::Global().Create(
                       config.learning_rate().schedule(), {}));
  std::vector<double> base_lr;
  for (auto& group : optimizer->param_groups()) base_lr.push_back(group.options().get_lr());
  // After base_lr is read: the saved state holds the last scheduled rate.
  if (resume) {
    RETURN_IF_ERROR(RestoreOptimizerState(resume->path, *optimizer));
    if (resume->checkpoint.contents.rng_state.defined()) {
      SetRandomState(resume->checkpoint.contents.rng_state);
    }
  }

  // What this rank sees of an epoch (a shard, under a distributed sampler).
  const int64_t samples_per_epoch =
      static_cast<int64_t>(train.sampler->EpochIndices(train.dataset->size(), 0).size());
  const int64_t steps_per_epoch =
      train.loader->BatchesPerEpoch(samples_per_epoch) / trainer.accumulate_steps();
  if (strategy->world_size() > 1) {
    // Every rank must take the same number of steps, or the collectives of
    // the longer ones wait forever.
    ASSIGN_OR_RETURN(const bool same,
                     SameOnEveryRank(*strategy, static_cast<double>(steps_per_epoch)));
    if (!same) {
      return absl::InvalidArgumentError(absl::StrCat(
          "train_data.sampler: ranks would take different numbers of steps per epoch (rank ",
          strategy->rank(), ": ", steps_per_epoch,
          "); use the `distributed` sampler, which gives every rank an equal shard"));
    }
  }
  if (steps_per_epoch == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "train_data: ", samples_per_epoch, " samples make no full batch of ",
        config.train_data().batch_size(), "; lower the batch size or set drop_last: false"));
  }
  int64_t total_steps = steps_per_epoch * trainer.epochs();
  if (trainer.max_steps() > 0) total_steps = std::min(total_steps, trainer.max_steps());
  const int64_t epochs = (total_steps + steps_per_epoch - 1) / steps_per_epoch;

  if (log) {
    *log << absl::StrFormat(
        "train: %d samples, %d classes, sample %s; validation: %s; model %s, %d parameters; "
        "%d steps (%d epochs x %d), %d compute threads; strategy %s, world size %d\n",
        train.dataset->size(), classes.size(), first->image.ShapeString(),
        validation ? absl::StrCat(validation->dataset->size(), " samples") : "none",
        config.model().name(), CountParameters(*model), total_steps, epochs, steps_per_epoch,
        trainer.threads(), config.strategy().name(), strategy->world_size());
  }
  // A folder the run cannot write fails here, before any training (and a
  // dry run checks it too), not at the first checkpoint.
  if (primary) RETURN_IF_ERROR(CheckDirectoryWritable(config.output_dir()));
  if (options.dry_run) {
    if (log) *log << "dry run: the config is valid and every plugin was built; nothing trained\n";
    return TrainSummary{};
  }

  const std::string resolved_text = ConfigToText(config);
  const std::filesystem::path output_dir(config.output_dir());
  std::ofstream metrics;
  // TensorBoard scalars and the curves plot, beside metrics.jsonl (rank 0).
  std::unique_ptr<EventFileWriter> tensorboard;
  std::vector<EpochPoint> curves;
  StepProfile profile(options.profile_steps);
  if (primary) {
    std::error_code error;
    std::filesystem::create_directories(output_dir, error);
    if (error) {
      return absl::FailedPreconditionError(absl::StrCat(
          "output_dir: cannot create ", output_dir.string(), ": ", error.message()));
    }
    // Nothing is trained yet: a file that cannot be written here (a full
    // disk) is a problem with output_dir, whatever on_write_error says.
    auto setup_error = [](const absl::Status& status) {
      return absl::FailedPreconditionError(absl::StrCat("output_dir: ", status.message()));
    };
    absl::Status written =
        WriteFileAtomically((output_dir / "config.textproto").string(), resolved_text);
    if (!written.ok()) return setup_error(written);
    // Appended, not rewritten: a resumed run keeps the record of every start.
    std::ofstream run_info(output_dir / "run_info.jsonl", std::ios::app);
    run_info << RunInfoJson({options.command_line, options.source_dir}) << "\n" << std::flush;
    written = StreamWriteStatus(run_info, (output_dir / "run_info.jsonl").string());
    if (!written.ok()) return setup_error(written);
    metrics.open(output_dir / "metrics.jsonl", std::ios::app);
    written = StreamWriteStatus(metrics, (output_dir / "metrics.jsonl").string());
    if (!written.ok()) return setup_error(written);
    auto created = EventFileWriter::Create(output_dir.string());
    if (!created.ok()) return setup_error(created.status());
    tensorboard = std::move(*created);
  }

  const float label_smoothing = trainer.label_smoothing();
  const int accumulate = trainer.accumulate_steps();
  // trainer.grad_scaler (on under FP16_AUTOCAST): backward runs on the
  // scaled loss; the gradients are unscaled before the step.
  std::optional<GradScaler> scaler;
  if (trainer.grad_scaler().has_enabled() ? trainer.grad_scaler().enabled()
                                          : trainer.precision() == TrainerConfig::FP16_AUTOCAST) {
    scaler.emplace(trainer.grad_scaler());
    if (resume && resume->checkpoint.contents.grad_scale > 0) {
      scaler->Restore({resume->checkpoint.contents.grad_scale,
                       resume->checkpoint.contents.grad_scaler_growth_tracker});
    }
  }
  auto cross_entropy = [label_smoothing](const torch::Tensor& logits,
                                         const torch::Tensor& labels) {
    return at::cross_entropy_loss(logits, labels, {}, at::Reduction::Mean, -100, label_smoothing);
  };
  // Each accumulated batch contributes 1/accumulate of the step's gradient.
  LossFunction loss_function = [cross_entropy, accumulate, &scaler](
                                   const torch::Tensor& logits, const torch::Tensor& labels) {
    const torch::Tensor loss = cross_entropy(logits, labels) / accumulate;
    return scaler ? scaler->Scale(loss) : loss;
  };

  TrainSummary summary;
  const CheckpointConfig& checkpointing = config.checkpoint();
  std::vector<std::string> checkpoints;
  if (primary && resume) {
    checkpoints = ListCheckpoints(output_dir.string());
    curves = EpochPointsOf(output_dir / "metrics.jsonl", resume->checkpoint.contents.epoch);
  }
  int64_t step = resume ? resume->checkpoint.contents.step : 0;
  double best_accuracy = resume ? resume->checkpoint.contents.best_val_accuracy : -1;
  OutputWriteErrors write_errors(
      checkpointing.on_write_error(), output_dir.string(),
      [&progress](const std::string& line) { progress.Line(line, /*transient=*/false); }, events);
  // --resume=auto finds the checkpoint resumed from only in output_dir.
  if (std::error_code error;
      resume && std::filesystem::equivalent(std::filesystem::path(resume->path).parent_path(),
                                            output_dir, error)) {
    write_errors.set_resume_point(resume->path);
  }
  // A checkpoint that cannot be written ends the run or, under
  // on_write_error: CONTINUE, is left out (OK is returned); `may_continue`
  // is false for the checkpoint of a run that stops after it.
  auto write_checkpoint = [&](const std::string& name, const CheckpointContents& contents,
                              bool rolling, bool may_continue = true) -> absl::Status {
    const std::string path = (output_dir / name).string();
    const absl::Status written = WriteCheckpoint(path, *model, *optimizer, contents);
    if (!written.ok()) return write_errors.Checkpoint(written, path, may_continue);
    if (log) *log << "checkpoint: " << path << "\n";
    if (!rolling) return absl::OkStatus();
    write_errors.set_resume_point(path);
    checkpoints.erase(std::remove(checkpoints.begin(), checkpoints.end(), path),
                      checkpoints.end());
    checkpoints.push_back(path);
    const int keep = checkpointing.keep_last();
    while (keep > 0 && static_cast<int>(checkpoints.size()) > keep) {
      std::error_code error;
      std::filesystem::remove(checkpoints.front(), error);
      std::filesystem::remove(ChecksumPathOf(checkpoints.front()), error);
      checkpoints.erase(checkpoints.begin());
    }
    return absl::OkStatus();
  };
  const std::string metrics_path = (output_dir / "metrics.jsonl").string();
  auto write_metrics = [&](const std::string& event) -> absl::Status {
    if (!metrics.is_open()) return absl::OkStatus();
    metrics << event << "\n" << std::flush;
    return write_errors.Log(StreamWriteStatus(metrics, metrics_path), metrics_path);
  };
  double train_seconds = 0;
  int64_t train_images = 0;
  BadSampleReport bad_samples;
  const int world_size = strategy->world_size();
  int64_t skipped_in_a_row = 0;
  model->train();
  for (int64_t epoch = resume ? resume->checkpoint.contents.epoch : 0; epoch < epochs; ++epoch) {
    const Clock::time_point epoch_start = Clock::now();
    std::vector<int64_t> order = train.sampler->EpochIndices(train.dataset->size(), epoch);
    double loss_sum = 0, correct = 0;
    int64_t seen = 0, epoch_steps = 0;
    // Resuming inside this epoch: its first steps' batches are left out of
    // the order (batches are consecutive runs of it, so the rest stay the
    // same), and its training sums so far come back on rank 0.
    const bool resumed_epoch = resume && epoch == resume->checkpoint.contents.epoch;
    if (resumed_epoch && resume->checkpoint.contents.epoch_step > 0) {
      const CheckpointContents& contents = resume->checkpoint.contents;
      epoch_steps = contents.epoch_step;
      const int64_t skipped = std::min<int64_t>(
          static_cast<int64_t>(order.size()),
          epoch_steps * trainer.accumulate_steps() * config.train_data().batch_size());
      order.erase(order.begin(), order.begin() + skipped);
      if (primary && contents.epoch_sums.size() == 3) {
        loss_sum = contents.epoch_sums[0];
        correct = contents.epoch_sums[1];
        seen = static_cast<int64_t>(contents.epoch_sums[2]);
      }
    }
    const int64_t seen_before = seen, steps_before = epoch_steps;
    train.loader->StartEpoch(epoch, std::move(order));
    double window_loss = 0, window_correct = 0;
    int64_t window_seen = 0;
    while (step < total_steps) {
      // One optimizer step over `accumulate` loader batches; an epoch's last
      // batches that cannot fill a whole step are left out.
      const Clock::time_point step_start = Clock::now();
      std::vector<Batch> batches;
      for (int k = 0; k < accumulate; ++k) {
        ASSIGN_OR_RETURN(std::optional<Batch> batch, train.loader->Next());
        if (!batch) break;
        batches.push_back(std::move(*batch));
      }
      if (static_cast<int>(batches.size()) < accumulate) break;
      const Clock::time_point data_ready = Clock::now();
      const double factor = schedule->Factor(step, total_steps, steps_per_epoch) *
                            WarmupFactor(config.learning_rate(), step, steps_per_epoch);
      for (size_t g = 0; g < base_lr.size(); ++g) {
        optimizer->param_groups()[g].options().set_lr(base_lr[g] * factor);
      }
      optimizer->zero_grad();
      // The step's figures join the epoch's only when its update is applied.
      double step_loss = 0, step_correct = 0;
      int64_t step_seen = 0;
      std::optional<double> nonfinite_loss;
      for (int k = 0; k < accumulate; ++k) {
        const Batch& batch = batches[k];
        strategy->SetGradientSynchronization(k + 1 == accumulate);
        AutocastScope autocast(trainer);
        ASSIGN_OR_RETURN(StepOutput output,
                         strategy->ForwardBackward(*model, ModelInput(batch.images, trainer),
                                                   batch.labels, loss_function));
        const int64_t n = batch.labels.size(0);
        // Under loss scaling the strategy's loss is the scaled one, which
        // may overflow where the loss itself does not: the figure comes
        // from the logits instead (a few operations on B x classes).
        const double batch_loss =
            scaler ? cross_entropy(output.logits.to(at::kFloat), batch.labels).item<double>()
                   : output.loss.item<double>() * accumulate;
        if (!std::isfinite(batch_loss)) {
          // Decided below, after the step's every batch: under ddp the
          // other ranks wait in this step's collectives.
          if (!nonfinite_loss) nonfinite_loss = batch_loss;
          continue;
        }
        step_loss += batch_loss * n;
        step_correct += output.logits.argmax(1).eq(batch.labels).sum().item<double>();
        step_seen += n;
      }
      // A non-finite loss is one rank's own, and a stop signal reaches each
      // rank at its own time: one small sum per step (a slot per rank, then
      // the stop flag) gives every rank the same verdict at the same step.
      // Gradients need none: after backward they are the same on every rank.
      std::vector<int> nonfinite_loss_ranks;
      bool stop_now = options.stop_signal != nullptr && checkpointing.checkpoint_on_signal() &&
                      options.stop_signal->load() != 0;
      if (world_size > 1) {
        std::vector<double> flags(world_size + 1, 0.0);
        flags[strategy->rank()] = nonfinite_loss ? 1 : 0;
        flags[world_size] = stop_now ? 1 : 0;
        RETURN_IF_ERROR(strategy->SumAcrossProcesses(flags));
        for (int r = 0; r < world_size; ++r) {
          if (flags[r] > 0) nonfinite_loss_ranks.push_back(r);
        }
        stop_now = flags[world_size] > 0;
      } else if (nonfinite_loss) {
        nonfinite_loss_ranks.push_back(0);
      }
      std::string nonfinite;
      if (!nonfinite_loss_ranks.empty()) {
        nonfinite = world_size == 1
                        ? absl::StrFormat("the training loss is %f", *nonfinite_loss)
                        : absl::StrCat("the training loss of rank",
                                       nonfinite_loss_ranks.size() > 1 ? "s " : " ",
                                       absl::StrJoin(nonfinite_loss_ranks, ", "),
                                       " is not finite");
      } else {
        if (scaler) scaler->Unscale(model->parameters());
        nonfinite = FirstNonFiniteGradient(*model);
      }
      if (scaler && nonfinite_loss_ranks.empty() && !nonfinite.empty()) {
        // The loss scale was too large for float16: GradScaler's skipped
        // step, with a smaller scale for the next.
        RETURN_IF_ERROR(SkipScalerStep(*scaler, nonfinite, step, epoch, summary.skipped_steps,
                                       progress));
        optimizer->zero_grad();
      } else if (!nonfinite.empty()) {
        // Before the optimizer writes NaN into the weights; the checkpoints
        // written so far stay as they are.
        if (trainer.on_nonfinite() == TrainerConfig::STOP) {
          return absl::FailedPreconditionError(absl::StrFormat(
              "step %d (epoch %d): %s; stopped before the weights were updated. Lower the "
              "learning rate (optimizer.options.lr) or add warm-up "
              "(learning_rate.warmup_epochs), or leave such steps out with "
              "trainer.on_nonfinite: SKIP_STEP",
              step + 1, epoch + 1, nonfinite));
        }
        optimizer->zero_grad();
        ++summary.skipped_steps;
        ++skipped_in_a_row;
        if (skipped_in_a_row > trainer.max_consecutive_skipped_steps()) {
          return absl::FailedPreconditionError(absl::StrFormat(
              "step %d (epoch %d): %s; %d steps in a row were skipped for non-finite values "
              "(more than trainer.max_consecutive_skipped_steps: %d), %d in all; stopped. Lower "
              "the learning rate (optimizer.options.lr) or add warm-up "
              "(learning_rate.warmup_epochs)",
              step + 1, epoch + 1, nonfinite, skipped_in_a_row,
              trainer.max_consecutive_skipped_steps(), summary.skipped_steps));
        }
        progress.Line(absl::StrFormat("step %d (epoch %d): %s; skipped this optimizer step (%d "
                                      "skipped so far, %d in a row)",
                                      step + 1, epoch + 1, nonfinite, summary.skipped_steps,
                                      skipped_in_a_row),
                      /*transient=*/false);
      } else {
        skipped_in_a_row = 0;
        loss_sum += step_loss;
        correct += step_correct;
        seen += step_seen;
        window_loss += step_loss;
        window_correct += step_correct;
        window_seen += step_seen;
      }
      const Clock::time_point computed = Clock::now();
      if (nonfinite.empty()) {
        RETURN_IF_ERROR(CallTorch("optimizer step", [&] { optimizer->step(); }));
        if (scaler) scaler->Update(/*found_inf=*/false);
      }
      // Taken every step, so a profiled step sees only its own.
      const double communication_wait = strategy->TakeCommunicationWaitSeconds();
      if (profile.active()) {
        int64_t images = 0;
        for (const Batch& batch : batches) images += batch.labels.size(0);
        using Seconds = std::chrono::duration<double>;
        if (profile.Record(Seconds(data_ready - step_start).count(),
                           Seconds(computed - data_ready).count(), SecondsSince(computed),
                           images, communication_wait)) {
          const std::string report = profile.Report(strategy->rank());
          if (primary) {
            progress.Line(report, /*transient=*/false);
          } else if (options.log) {
            *options.log << report << "\n";
          }
        }
      }
      ++step;
      ++epoch_steps;
      // A window of skipped steps only has no figures to show.
      if ((step % trainer.log_interval() == 0 || step == total_steps) && window_seen > 0) {
        const double elapsed = SecondsSince(epoch_start);
        const double rate = (seen - seen_before) * strategy->world_size() / std::max(elapsed, 1e-9);
        const double eta =
            (total_steps - step) * elapsed / std::max<int64_t>(epoch_steps - steps_before, 1);
        progress.Line(absl::StrFormat("epoch %d/%d step %d/%d loss %.4f acc %.2f%% %.1f img/s "
                                      "lr %.3g eta %s",
                                      epoch + 1, epochs, epoch_steps, steps_per_epoch,
                                      window_loss / window_seen,
                                      100.0 * window_correct / window_seen, rate,
                                      base_lr[0] * factor, Duration(eta)),
                      /*transient=*/true, static_cast<double>(epoch_steps) / steps_per_epoch);
        if (tensorboard) {
          RETURN_IF_ERROR(write_errors.Log(
              tensorboard->Write(step, {{"train/loss", window_loss / window_seen},
                                        {"train/accuracy", window_correct / window_seen},
                                        {"train/learning_rate", base_lr[0] * factor},
                                        {"train/images_per_sec", rate}}),
              tensorboard->path()));
        }
        window_loss = window_correct = 0;
        window_seen = 0;
      }
      // A stop after the run's last step is no stop: the run ends as usual.
      const bool stop_here = stop_now && step < total_steps;
      if ((checkpointing.every_steps() > 0 && step % checkpointing.every_steps() == 0 &&
           epoch_steps < steps_per_epoch && step < total_steps) ||
          stop_here) {
        // Every rank adds its sums (the same decision on every rank: the
        // step counts are equal), so the checkpoint holds the whole job's.
        std::vector<double> sums = {loss_sum, correct, static_cast<double>(seen)};
        RETURN_IF_ERROR(strategy->SumAcrossProcesses(sums));
        if (primary) {
          CheckpointContents contents{epoch, step, classes, resolved_text};
          contents.epoch_step = epoch_steps;
          contents.epoch_sums = sums;
          contents.best_val_accuracy = best_accuracy;
          contents.rng_state = RandomState();
          SaveScalerState(scaler, contents);
          RETURN_IF_ERROR(write_checkpoint(absl::StrCat("checkpoint_step_", step, ".pt"),
                                           contents, true, /*may_continue=*/!stop_here));
        }
      }
      if (stop_here) {
        // Another rank's signal stops this one too, asked itself or not.
        const int own = options.stop_signal != nullptr ? options.stop_signal->load() : 0;
        return absl::CancelledError(absl::StrFormat(
            "stopped by %s after step %d (epoch %d), checkpoint_step_%d.pt written in %s; "
            "continue with --resume=auto",
            own != 0 ? SignalName(own) : "a signal to another rank", step, epoch + 1, step,
            output_dir.string()));
      }
    }
    const double epoch_seconds = SecondsSince(epoch_start);
    const int64_t epoch_images = (seen - seen_before) * strategy->world_size();
    train_seconds += epoch_seconds;
    train_images += epoch_images;

    std::vector<double> train_sums = {loss_sum, correct, static_cast<double>(seen)};
    RETURN_IF_ERROR(strategy->SumAcrossProcesses(train_sums));
    summary.train_loss = train_sums[0] / std::max(train_sums[2], 1.0);
    summary.train_accuracy = train_sums[1] / std::max(train_sums[2], 1.0);
    const bool last = epoch + 1 == epochs;
    std::string validation_text;
    if (validation && ((epoch + 1) % trainer.validate_every_epochs() == 0 || last)) {
      ASSIGN_OR_RETURN(EvalResult eval, Evaluate(*model, *strategy, *validation, epoch,
                                                 trainer.max_validation_batches(), trainer));
      summary.val_loss = eval.loss;
      summary.val_accuracy = eval.accuracy;
      validation_text = absl::StrFormat(" val_loss %.4f val_acc %.2f%% (%d samples)", eval.loss,
                                        100.0 * eval.accuracy, eval.samples);
    }
    progress.Line(absl::StrFormat("epoch %d/%d done in %s: loss %.4f acc %.2f%%%s, %.1f img/s",
                                  epoch + 1, epochs, Duration(epoch_seconds), summary.train_loss,
                                  100.0 * summary.train_accuracy, validation_text,
                                  epoch_images / std::max(epoch_seconds, 1e-9)),
                  /*transient=*/false);
    RETURN_IF_ERROR(ReportBadSamples(epoch, epochs, config, *strategy, *train.loader,
                                     validation_text.empty() ? nullptr : validation->loader.get(),
                                     progress, events, bad_samples));
    const std::string epoch_event = absl::StrFormat(
        "{\"event\":\"epoch\",\"epoch\":%d,\"step\":%d,\"train_loss\":%.6f,\"train_acc\":%.6f,"
        "\"val_loss\":%.6f,\"val_acc\":%.6f,\"validated\":%s,\"lr\":%.6g,\"seconds\":%.3f}",
        epoch + 1, step, summary.train_loss, summary.train_accuracy, summary.val_loss,
        summary.val_accuracy, validation_text.empty() ? "false" : "true",
        base_lr[0] * schedule->Factor(std::max<int64_t>(step - 1, 0), total_steps, steps_per_epoch),
        epoch_seconds);
    if (events) *events << epoch_event << "\n" << std::flush;
    RETURN_IF_ERROR(write_metrics(epoch_event));
    if (tensorboard) {
      const bool validated = !validation_text.empty();
      Scalars scalars = {
          {"epoch/train_loss", summary.train_loss},
          {"epoch/train_accuracy", summary.train_accuracy},
          {"epoch/images_per_sec", epoch_images / std::max(epoch_seconds, 1e-9)}};
      if (validated) {
        scalars.push_back({"validation/loss", summary.val_loss});
        scalars.push_back({"validation/accuracy", summary.val_accuracy});
      }
      RETURN_IF_ERROR(write_errors.Log(tensorboard->Write(step, scalars), tensorboard->path()));
      EpochPoint point{epoch + 1, summary.train_loss, summary.train_accuracy};
      if (validated) {
        point.val_loss = summary.val_loss;
        point.val_accuracy = summary.val_accuracy;
      }
      curves.push_back(point);
      // Rewritten every epoch, so a run stopped early still has its plot.
      const std::string curves_path = (output_dir / "curves.svg").string();
      RETURN_IF_ERROR(write_errors.Log(
          WriteCurvesSvg(curves_path, curves,
                         absl::StrCat(config.model().name(), " on ",
                                      config.train_data().dataset().name())),
          curves_path));
    }

    const bool improved = !validation_text.empty() && summary.val_accuracy > best_accuracy;
    if (improved) best_accuracy = summary.val_accuracy;
    const int every = checkpointing.every_epochs();
    if (primary && (every > 0 || checkpointing.every_steps() > 0)) {
      CheckpointContents contents{epoch + 1, step, classes, resolved_text};
      contents.best_val_accuracy = best_accuracy;
      contents.rng_state = RandomState();
      SaveScalerState(scaler, contents);
      if (every > 0 && ((epoch + 1) % every == 0 || last)) {
        RETURN_IF_ERROR(write_checkpoint(absl::StrCat("checkpoint_epoch_", epoch + 1, ".pt"),
                                         contents, true));
      }
      if (improved && checkpointing.keep_best()) {
        RETURN_IF_ERROR(write_checkpoint("checkpoint_best.pt", contents, false));
      }
    }
    summary.epochs = epoch + 1;
  }
  for (const std::string& line : bad_samples.Summary()) progress.Line(line, /*transient=*/false);
  summary.skipped_samples = bad_samples.total();
  summary.steps = step;
  summary.images_per_sec = train_images / std::max(train_seconds, 1e-9);
  summary.wall_seconds = SecondsSince(run_start);
  const std::string summary_event = absl::StrFormat(
      "{\"event\":\"summary\",\"images_per_sec\":%.2f,\"val_acc\":%.6f,\"val_loss\":%.6f,"
      "\"train_loss\":%.6f,\"train_acc\":%.6f,\"epochs\":%d,\"steps\":%d,\"wall_s\":%.2f,"
      "\"skipped_steps\":%d,\"skipped_samples\":%d}",
      summary.images_per_sec, summary.val_accuracy, summary.val_loss, summary.train_loss,
      summary.train_accuracy, summary.epochs, summary.steps, summary.wall_seconds,
      summary.skipped_steps, summary.skipped_samples);
  if (log && summary.skipped_steps > 0) {
    *log << "train: " << summary.skipped_steps << " of " << summary.steps
         << " optimizer steps skipped for non-finite values ("
         << (scaler ? "loss scale too large for them, or " : "")
         << "trainer.on_nonfinite: SKIP_STEP)\n";
  }
  if (events) *events << summary_event << "\n" << std::flush;
  RETURN_IF_ERROR(write_metrics(summary_event));
  return summary;
}

}  // namespace pipeline
