#include "tools/bench/ddp_reference.h"

#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "pipeline/trainer/compute_format.h"
#include "tools/bench/or_die.h"
#include "tools/bench/plugin_options.h"

namespace pipeline {
namespace bench {
namespace {

constexpr int kReferenceWarmupSteps = 3;
constexpr char kName[] = "PyTorch DDP reference (tools/bench_reference.py --ddp_steps)";

// tools/bench_reference.py --ddp_steps with `ddp`'s model, batch per rank,
// optimizer, loss, memory format, precision and ddp options.
std::vector<std::string> DdpReferenceArgs(const BenchOptions& options, const PipelineConfig& ddp) {
  // As train decides them on this CPU.
  const ComputeFormat compute = OrDie(ChooseComputeFormat(
      ddp.trainer(), DescribeDevice(torch::Device(torch::kCPU)), MeasureCpuBf16Slowdown));
  TrainerConfig trainer = ddp.trainer();
  ApplyComputeFormat(compute, trainer);
  std::vector<std::string> args = {
      options.python, "tools/bench_reference.py", absl::StrCat("--ddp_steps=", options.ddp_steps),
      absl::StrCat("--ddp_warmup_steps=", kReferenceWarmupSteps),
      absl::StrCat("--batch_size=", ddp.train_data().batch_size()),
      absl::StrCat("--seed=", trainer.seed()), "--model=" + ddp.model().name(),
      "--model_options=" + OptionsText(ddp.model().options()),
      "--optimizer=" + ddp.optimizer().name(),
      "--optimizer_options=" + OptionsText(ddp.optimizer().options()),
      "--loss=" + ddp.loss().name(), "--loss_options=" + OptionsText(ddp.loss().options()),
      "--precision=" + TrainerConfig::Precision_Name(trainer.precision()),
      "--ddp_options=" + OptionsText(ddp.strategy().options())};
  // 0: from the data, which for Fashion-MNIST is the script's default.
  if (ddp.model().in_channels() > 0) {
    args.push_back(absl::StrCat("--in_channels=", ddp.model().in_channels()));
  }
  if (ddp.model().num_classes() > 0) {
    args.push_back(absl::StrCat("--num_classes=", ddp.model().num_classes()));
  }
  if (trainer.memory_format() == MemoryFormat::CHANNELS_LAST) args.push_back("--channels_last");
  return args;
}

// What the reference leaves out of `config`'s training step.
std::string NotMirrored(const PipelineConfig& config) {
  const TrainerConfig& trainer = config.trainer();
  std::vector<std::string> left;
  if (trainer.ema().decay() > 0) left.push_back("ema");
  if (trainer.clip_grad().max_norm() > 0 || trainer.clip_grad().max_value() > 0) {
    left.push_back("clip_grad");
  }
  if (trainer.accumulate_steps() > 1) left.push_back("accumulate_steps");
  if (config.train_data().batch_transforms_size() > 0) left.push_back("batch_transforms");
  if (config.model().freeze_backbone()) left.push_back("freeze_backbone");
  return left.empty() ? "" : ", without the config's " + absl::StrJoin(left, ", ");
}

// Why the reference cannot run `config` (its "images/s" cell), or nullopt.
// It trains on 28x28 Fashion-MNIST tensors.
std::optional<std::string> SkipReason(const PipelineConfig& config) {
  const std::string dataset = config.train_data().dataset().name();
  if (dataset != "fashion_mnist") {
    return "skipped: it trains on Fashion-MNIST tensors, the config on " + dataset;
  }
  for (const PluginConfig& transform : config.train_data().transforms()) {
    if (transform.name() == "resize" || transform.name() == "random_resized_crop") {
      return "skipped: it trains on 28x28 tensors, and the config's " + transform.name() +
             " changes the size";
    }
  }
  return std::nullopt;
}

void AddReferenceRows(BenchContext& context, const DdpRun& run, const std::string& version,
                      std::optional<double> single_rate) {
  const std::vector<std::string> preload = TcmallocPreload();
  const int batch = run.config.train_data().batch_size();
  const std::string label = absl::StrFormat(
      "PyTorch DDP (torch %s, gloo), 2 processes x 1 thread, %d steps of %d each after %d "
      "untimed; in-memory tensors, no loader; %s%s",
      version, context.options.ddp_steps, batch, kReferenceWarmupSteps,
      preload.empty() ? "glibc malloc" : "tcmalloc preloaded, as train links it",
      NotMirrored(run.config));
  const ProcessResult python =
      RunChild(context, DdpReferenceArgs(context.options, run.config), preload);
  const auto rate = JsonNumber(python.output, "ddp_images_per_sec", "ddp_images_per_sec");
  if (python.exit_code != 0 || !rate) {
    std::cerr << "bench: tools/bench_reference.py --ddp_steps failed:\n"
              << Tail(python.output) << "\n";
    context.table.Add({label, "failed", "-", "-"});
    return;
  }
  context.table.Add({label, absl::StrFormat("%.1f", *rate),
                     single_rate ? Ratio(*rate, 2 * *single_rate) : "-", "2 x single process"});
  if (run.images_per_sec) {
    context.table.Add({absl::StrFormat("  runner's ddp against PyTorch's DDP, %d per rank", batch),
                       "-", Ratio(*run.images_per_sec, *rate), "PyTorch DDP"});
  }
}

}  // namespace

void AddPytorchDdpRows(BenchContext& context, const std::vector<DdpRun>& runs,
                       std::optional<double> single_rate) {
  const std::string& python = context.options.python;
  const ProcessResult probe =
      RunChild(context, {python, "-c", "import torch, torchvision; print(torch.__version__)"});
  if (probe.exit_code != 0) {
    context.table.Add({kName, "skipped: " + python + " has no torch or torchvision; apt-get "
                       "install python3-torch python3-torchvision", "-", "-"});
    return;
  }
  if (const std::optional<std::string> skip = SkipReason(runs.front().config)) {
    context.table.Add({kName, *skip, "-", "-"});
    return;
  }
  const std::string version = LastLine(probe.output);
  for (const DdpRun& run : runs) AddReferenceRows(context, run, version, single_rate);
}

}  // namespace bench
}  // namespace pipeline
