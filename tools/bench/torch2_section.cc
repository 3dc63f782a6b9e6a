// torch2: the compute ceiling against PyTorch 2.x's own step (eager and
// torch.compile, float32 and the precision AUTO picks here), in the Debian
// 13 root (tools/debian13.sh, tools/bench_torch2.py), alternating round by
// round so the machine's drift hits all rows alike.

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "pipeline/trainer/compute_format.h"
#include "pipeline/util/torch_version.h"
#include "tools/bench/bench_sections.h"
#include "tools/bench/compute_ceiling.h"
#include "tools/bench/or_die.h"

namespace pipeline {
namespace bench {
namespace {

struct Row {
  std::string label;
  std::function<std::optional<double>()> measure;
  std::vector<double> rates;  // one a round
};

// The source tree: tools/debian13.sh runs there, not in the runfiles.
std::string Repo() {
  const char* workspace = std::getenv("BUILD_WORKSPACE_DIRECTORY");
  return workspace != nullptr ? workspace : std::filesystem::current_path().string();
}

// tools/bench_torch2.py in the Debian 13 root (PyTorch 2.x): its images/s,
// or nullopt with the reason on stderr.
std::optional<double> Torch2Rate(const BenchContext& context, int threads, bool bf16,
                                 bool compile) {
  std::vector<std::string> argv = {
      Repo() + "/tools/debian13.sh", "env",
      absl::StrCat("LD_PRELOAD=", kTcmallocLibrary), "python3",
      Repo() + "/tools/bench_torch2.py", absl::StrCat("--batch_size=", context.options.batch_size),
      absl::StrCat("--threads=", threads), bf16 ? "--precision=BF16" : "--precision=FP32"};
  if (compile) argv.push_back("--compile");
  const ProcessResult python = RunChild(context, argv);
  const std::optional<double> rate = JsonNumber(python.output, "images_per_sec", "images_per_sec");
  if (python.exit_code != 0 || !rate) {
    std::cerr << "bench: tools/bench_torch2.py failed:\n" << Tail(python.output) << "\n";
  }
  return rate;
}

// For each precision, the runner's row, then PyTorch's eager and compiled.
std::vector<Row> Rows(const BenchContext& context, const std::string& version, bool auto_bf16) {
  const int threads = context.jpeg.trainer().threads();
  std::vector<Row> rows;
  for (const bool bf16 : auto_bf16 ? std::vector<bool>{false, true} : std::vector<bool>{false}) {
    const std::string precision = bf16 ? "AUTO = bf16 autocast + channels-last" : "float32";
    rows.push_back({absl::StrCat("runner (LibTorch ", kLibTorchVersion, "), ", precision),
                    [&context, bf16] {
                      return std::optional(ComputeCeiling(context.jpeg, context.options.batch_size,
                                                          context.options.min_seconds, bf16, bf16)
                                               .images_per_sec);
                    }});
    for (const bool compile : {false, true}) {
      rows.push_back({absl::StrCat("PyTorch ", version, compile ? " torch.compile" : " eager",
                                   ", ", precision),
                      [&context, threads, bf16, compile] {
                        return Torch2Rate(context, threads, bf16, compile);
                      }});
    }
  }
  return rows;
}

// Each row against the runner's row of the same precision.
void AddRows(BenchContext& context, const std::vector<Row>& rows) {
  const int threads = context.jpeg.trainer().threads();
  double runner = 0;
  for (const Row& row : rows) {
    std::vector<std::string> each;
    for (const double rate : row.rates) each.push_back(absl::StrFormat("%.1f", rate));
    const double mean =
        row.rates.empty()
            ? 0
            : std::accumulate(row.rates.begin(), row.rates.end(), 0.0) / row.rates.size();
    if (absl::StartsWith(row.label, "runner")) runner = mean;
    context.table.Add({absl::StrFormat("%s, %d threads, mean of %d rounds (%s)", row.label,
                                       threads, row.rates.size(), absl::StrJoin(each, ", ")),
                       row.rates.empty() ? "failed" : absl::StrFormat("%.1f", mean),
                       Ratio(mean, runner), "the runner's row above"});
  }
}

}  // namespace

void RunTorch2Section(BenchContext& context) {
  const ProcessResult probe =
      RunChild(context, {Repo() + "/tools/debian13.sh", "python3", "-c",
                         "import torch, torchvision; print(torch.__version__)"});
  if (probe.exit_code != 0) {
    std::cerr << "bench: " << Tail(probe.output) << "\n";
    context.table.Add({"PyTorch 2.x (Debian 13 root)",
                       "skipped: tools/debian13.sh could not run python3 with torch and "
                       "torchvision (needs root and Debian's archive)",
                       "-", "-"});
    return;
  }
  TrainerConfig auto_precision;
  auto_precision.set_precision(TrainerConfig::AUTO);
  const ComputeFormat autopick = OrDie(ChooseComputeFormat(
      auto_precision, DescribeDevice(torch::Device(torch::kCPU)), MeasureCpuBf16Slowdown));
  const bool auto_bf16 = autopick.precision == TrainerConfig::BF16_AUTOCAST;
  std::vector<Row> rows = Rows(context, LastLine(probe.output), auto_bf16);
  for (int round = 0; round < context.options.torch2_rounds; ++round) {
    for (Row& row : rows) {
      if (const std::optional<double> rate = row.measure()) row.rates.push_back(*rate);
    }
  }
  AddRows(context, rows);
  if (!auto_bf16) {
    context.table.Add({"AUTO picks float32 on this CPU (" + autopick.reason + "): no bf16 rows",
                       "-", "-", "-"});
  }
}

}  // namespace bench
}  // namespace pipeline
