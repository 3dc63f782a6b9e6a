#ifndef PIPELINE_INTERFACES_SAMPLER_H_
#define PIPELINE_INTERFACES_SAMPLER_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "pipeline/registry/registry.h"

namespace pipeline {

// How far into an epoch the run that wrote a checkpoint got, for resuming
// inside it, perhaps with another number of processes.
struct EpochProgress {
  int64_t samples_per_rank = 0;  // samples each of its ranks had taken
  int world_size = 1;            // how many ranks it had
};

// Decides which samples this process visits in an epoch, and in what order.
class Sampler {
 public:
  virtual ~Sampler() = default;
  // Dataset indices for `epoch` (0-based). Must depend only on the
  // construction context, `dataset_size` and `epoch`, so runs reproduce.
  virtual std::vector<int64_t> EpochIndices(int64_t dataset_size, int64_t epoch) const = 0;

  // What this rank visits of the rest of `epoch` after `done`. A sampler
  // that shards the epoch between the ranks deals the samples no rank of
  // the earlier run took between this run's ranks, so none is seen twice
  // or skipped when the world size changed. By default (an order that does
  // not depend on the world size): EpochIndices without its first
  // done.samples_per_rank.
  virtual std::vector<int64_t> RemainingEpochIndices(int64_t dataset_size, int64_t epoch,
                                                     const EpochProgress& done) const {
    std::vector<int64_t> order = EpochIndices(dataset_size, epoch);
    order.erase(order.begin(),
                order.begin() + std::min<int64_t>(done.samples_per_rank, order.size()));
    return order;
  }
};

struct SamplerContext {
  uint64_t seed = 0;
  // This process's place among the training processes.
  int rank = 0;
  int world_size = 1;
};

template <>
struct PluginKind<Sampler> {
  static constexpr const char* kName = "sampler";
  using Context = SamplerContext;
};

}  // namespace pipeline

#endif  // PIPELINE_INTERFACES_SAMPLER_H_
