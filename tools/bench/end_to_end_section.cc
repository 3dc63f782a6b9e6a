// end_to_end: `train` on the JPEG ImageFolder, images/s against the compute
// ceiling, and its peak memory. This machine's speed drifts over minutes,
// so each training run is set against a compute ceiling measured just
// before it, and the median of the rounds' ratios is reported.

#include <algorithm>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tools/bench/bench_configs.h"
#include "tools/bench/bench_sections.h"
#include "tools/bench/compute_ceiling.h"

namespace pipeline {
namespace bench {
namespace {

struct Round {
  double ratio = 0;  // to the compute ceiling just before it
  double images_per_sec = 0;
};

// The JPEG config as a training run of --end_to_end_steps steps; returns
// the written config's path.
std::string EndToEndConfig(const BenchContext& context) {
  PipelineConfig run = context.jpeg;
  run.mutable_trainer()->set_max_steps(context.options.end_to_end_steps);
  run.mutable_trainer()->set_epochs(1000);
  run.mutable_checkpoint()->set_every_epochs(0);
  run.set_output_dir(context.options.work_dir + "/end_to_end");
  return WriteConfig(context.options.work_dir, "end_to_end.textproto", run);
}

// Every round, or none when a training run failed; `peak_rss_mb` is the
// largest of the runs'.
std::vector<Round> MeasureRounds(const BenchContext& context, double& peak_rss_mb) {
  const BenchOptions& options = context.options;
  const std::string config = EndToEndConfig(context);
  std::vector<Round> rounds;
  for (int round = 0; round < options.end_to_end_rounds; ++round) {
    const double before =
        ComputeCeiling(context.jpeg, options.batch_size, options.min_seconds).images_per_sec;
    const ProcessResult child = RunChild(context, {context.train_binary, "--config=" + config});
    const auto rate = JsonNumber(child.output, "\"summary\"", "images_per_sec");
    if (child.exit_code != 0 || !rate) {
      std::cerr << "bench: train failed:\n" << Tail(child.output) << "\n";
      return {};
    }
    rounds.push_back({*rate / before, *rate});
    peak_rss_mb = std::max(peak_rss_mb, child.peak_rss_mb);
  }
  return rounds;
}

}  // namespace

void RunEndToEndSection(BenchContext& context) {
  double peak_rss_mb = 0;
  const std::vector<Round> rounds = MeasureRounds(context, peak_rss_mb);
  if (rounds.empty()) {
    context.table.Add({"end-to-end training", "failed", "-", "-"});
    return;
  }
  std::vector<Round> sorted = rounds;
  std::sort(sorted.begin(), sorted.end(), [](const Round& a, const Round& b) {
    return std::pair(a.ratio, a.images_per_sec) < std::pair(b.ratio, b.images_per_sec);
  });
  const Round& median = sorted[sorted.size() / 2];
  std::vector<std::string> each;
  for (const Round& round : rounds) each.push_back(absl::StrFormat("%.2f", round.ratio));
  context.table.Add({absl::StrFormat("end-to-end: train on the JPEG folder, %d steps, median of %d "
                                     "rounds (ratios %s) (peak RSS %.0f MB)",
                                     context.options.end_to_end_steps, rounds.size(),
                                     absl::StrJoin(each, ", "), peak_rss_mb),
                     absl::StrFormat("%.1f", median.images_per_sec),
                     absl::StrFormat("%.2f", median.ratio),
                     "compute ceiling just before each run"});
}

}  // namespace bench
}  // namespace pipeline
