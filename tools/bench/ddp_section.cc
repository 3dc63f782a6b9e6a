// ddp: `train` with ddp, 2 workers x 1 thread, against 1 process x 1
// thread: first 1 process, then 2 independent processes at once (the same
// run twice, no communication: what two processes get from this machine's
// cores, caches and memory, so the most 2 ddp ranks could reach), then ddp;
// then ddp with sync_batch_norm and shard_optimizer_state, and PyTorch's
// DistributedDataParallel on the same model and settings.

#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "pipeline/config/config_loader.h"
#include "pipeline/config/resolve.h"
#include "tools/bench/bench_configs.h"
#include "tools/bench/bench_sections.h"
#include "tools/bench/ddp_reference.h"
#include "tools/bench/or_die.h"

namespace pipeline {
namespace bench {
namespace {

// --ddp_config (or, for the single process, --fashion_mnist_config) as a
// run of --ddp_steps steps on 1 thread a process, writing to <work
// dir>/<output>.
PipelineConfig RunConfig(const BenchOptions& options, bool ddp, const std::string& output) {
  PipelineConfig run = LoadResolved(ddp ? options.ddp_config : options.fashion_mnist_config);
  run.clear_validation_data();
  run.mutable_trainer()->set_threads(1);
  run.mutable_trainer()->set_max_steps(options.ddp_steps);
  run.mutable_checkpoint()->set_every_epochs(0);
  run.set_output_dir(options.work_dir + "/" + output);
  return run;
}

// The images/s `child` (a train run) reported; unset, after a "failed" row
// labelled `label`, when it failed.
std::optional<double> TrainRate(BenchContext& context, const ProcessResult& child,
                                const std::string& label) {
  std::optional<double> rate = JsonNumber(child.output, "\"summary\"", "images_per_sec");
  if (child.exit_code != 0 || !rate) {
    std::cerr << "bench: train failed:\n" << Tail(child.output) << "\n";
    context.table.Add({label, "failed", "-", "-"});
    return std::nullopt;
  }
  return rate;
}

// Trains `run`, written to <work dir>/<config_name>.
std::optional<double> Train(BenchContext& context, const std::string& config_name,
                            const PipelineConfig& run, const std::string& label) {
  const std::string config = WriteConfig(context.options.work_dir, config_name, run);
  return TrainRate(context, RunChild(context, {context.train_binary, "--config=" + config}),
                   label);
}

std::optional<double> AddSingleRow(BenchContext& context, const PipelineConfig& single) {
  const std::string label =
      absl::StrFormat("%s, 1 process x 1 thread, %d steps of %d", single.model().name(),
                      context.options.ddp_steps, single.train_data().batch_size());
  const std::optional<double> rate = Train(context, "single.textproto", single, label);
  if (rate) context.table.Add({label, absl::StrFormat("%.1f", *rate), "-", "-"});
  return rate;
}

// The total images/s of the 2 independent processes; unset when one failed.
std::optional<double> AddIndependentRow(BenchContext& context, std::optional<double> single_rate) {
  std::vector<std::unique_ptr<Subprocess>> children;
  std::vector<std::string> logs;
  for (int i = 0; i < 2; ++i) {
    const std::string name = absl::StrCat("independent", i);
    const std::string config = WriteConfig(context.options.work_dir, name + ".textproto",
                                           RunConfig(context.options, false, name));
    logs.push_back(context.options.work_dir + "/" + name + "_output.txt");
    children.push_back(StartProcess({context.train_binary, "--config=" + config}, {}, logs.back()));
  }
  const std::string label = "the same, 2 independent processes at once (no communication)";
  std::optional<double> total = 0.0;
  for (int i = 0; i < 2; ++i) {
    const std::optional<double> rate =
        TrainRate(context, WaitProcess(std::move(children[i]), logs[i]), label);
    total = rate && total ? std::optional(*total + *rate) : std::nullopt;
  }
  if (total && single_rate) {
    context.table.Add({label + ", total", absl::StrFormat("%.1f", *total),
                       Ratio(*total, 2 * *single_rate), "2 x single process"});
  }
  return total;
}

// The shipped ddp config splits the single run's batch over the ranks (the
// same global batch, so the same training); the second run keeps the
// single run's batch on each rank, as scaling is usually measured.
std::vector<DdpRun> AddDdpRows(BenchContext& context, const PipelineConfig& single,
                               std::optional<double> single_rate,
                               std::optional<double> independent_rate) {
  std::vector<DdpRun> runs;
  for (const bool same_per_rank : {false, true}) {
    PipelineConfig ddp = RunConfig(context.options, true, same_per_rank ? "ddp_per_rank" : "ddp");
    if (same_per_rank) ddp.mutable_train_data()->set_batch_size(single.train_data().batch_size());
    const std::string label = absl::StrFormat(
        "ddp (gloo), 2 processes x 1 thread, %d steps of %d each%s", context.options.ddp_steps,
        ddp.train_data().batch_size(),
        same_per_rank ? " (the single run's batch on each rank)" : "");
    const std::optional<double> rate = Train(context, "ddp.textproto", ddp, label);
    runs.push_back({ddp, rate});
    if (!rate || !single_rate) continue;
    context.table.Add({label, absl::StrFormat("%.1f", *rate), Ratio(*rate, 2 * *single_rate),
                       "2 x single process"});
    if (independent_rate) {
      context.table.Add({"  the same against the 2 independent processes", "-",
                         Ratio(*rate, *independent_rate), "2 independent processes"});
    }
  }
  return runs;
}

// What ddp's options cost: the shipped ddp run again with each turned on,
// against the same run without.
void AddDdpOptionRows(BenchContext& context, const DdpRun& plain) {
  if (!plain.images_per_sec) return;
  for (const auto& [option, what] :
       {std::pair{"sync_batch_norm", "BatchNorm statistics all-gathered in every layer's "
                                     "forward, and their gradients all-reduced in backward"},
        std::pair{"shard_optimizer_state", "ZeRO-1: each rank steps half the optimizer state, "
                                           "then broadcasts its new weights"}}) {
    PipelineConfig run = plain.config;
    run.set_output_dir(absl::StrCat(context.options.work_dir, "/ddp_", option));
    const absl::Status set =
        ApplyOverride(absl::StrCat("strategy.options.", option, "=true"), DefaultOptionsOf, &run);
    if (!set.ok()) Die(set);
    const std::string label = absl::StrFormat("  ddp as above (%d each) + %s (%s)",
                                              run.train_data().batch_size(), option, what);
    const std::optional<double> rate =
        Train(context, absl::StrCat("ddp_", option, ".textproto"), run, label);
    if (!rate) continue;
    context.table.Add({label, absl::StrFormat("%.1f", *rate), Ratio(*rate, *plain.images_per_sec),
                       "the same ddp run without it"});
  }
}

}  // namespace

void RunDdpSection(BenchContext& context) {
  const PipelineConfig single = RunConfig(context.options, false, "single");
  const std::optional<double> single_rate = AddSingleRow(context, single);
  const std::optional<double> independent_rate = AddIndependentRow(context, single_rate);
  const std::vector<DdpRun> runs = AddDdpRows(context, single, single_rate, independent_rate);
  AddDdpOptionRows(context, runs.front());
  AddPytorchDdpRows(context, runs, single_rate);
}

}  // namespace bench
}  // namespace pipeline
