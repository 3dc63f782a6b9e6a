#ifndef TOOLS_BENCH_COMPUTE_CEILING_H_
#define TOOLS_BENCH_COMPUTE_CEILING_H_

// The compute ceiling: the images/s a config's model and optimizer train at
// with no loader and nothing else competing for the cores, the most that
// end-to-end training can reach. Several sections measure it: compute (and
// its variants), the allocator children, end_to_end before each round, and
// torch2.

#include "pipeline/config/pipeline.pb.h"

namespace pipeline {
namespace bench {

struct ComputeResult {
  double images_per_sec = 0;
  int threads = 0;
};

// Forward, backward and `config`'s optimizer step on one in-memory batch of
// `batch_size` random 224x224 RGB images of 2 classes (the JPEG corpus's),
// on trainer.threads threads, repeated for at least `min_seconds`.
// `channels_last` and `bf16` as trainer.memory_format: CHANNELS_LAST and
// trainer.precision: BF16_AUTOCAST run the step.
ComputeResult ComputeCeiling(const PipelineConfig& config, int batch_size, double min_seconds,
                             bool channels_last = false, bool bf16 = false);

}  // namespace bench
}  // namespace pipeline

#endif  // TOOLS_BENCH_COMPUTE_CEILING_H_
