#ifndef TOOLS_BENCH_DDP_REFERENCE_H_
#define TOOLS_BENCH_DDP_REFERENCE_H_

// The ddp section's Python reference: PyTorch's DistributedDataParallel
// (tools/bench_reference.py --ddp_steps) on the settings of the runner's
// ddp runs.

#include <optional>
#include <vector>

#include "pipeline/config/pipeline.pb.h"
#include "tools/bench/bench_context.h"

namespace pipeline {
namespace bench {

// One of the runner's ddp runs: its config and images/s (unset: failed).
struct DdpRun {
  PipelineConfig config;
  std::optional<double> images_per_sec;
};

// A row for PyTorch's DDP on each of `runs`' settings, against 2 x the
// single process (`single_rate`), each followed by the runner's ddp against
// it; or one row saying why the reference cannot run.
void AddPytorchDdpRows(BenchContext& context, const std::vector<DdpRun>& runs,
                       std::optional<double> single_rate);

}  // namespace bench
}  // namespace pipeline

#endif  // TOOLS_BENCH_DDP_REFERENCE_H_
