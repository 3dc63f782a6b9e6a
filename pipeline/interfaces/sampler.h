#ifndef PIPELINE_INTERFACES_SAMPLER_H_
#define PIPELINE_INTERFACES_SAMPLER_H_

#include <cstdint>
#include <vector>

#include "pipeline/registry/registry.h"

namespace pipeline {

// Decides which samples this process visits in an epoch, and in what order.
class Sampler {
 public:
  virtual ~Sampler() = default;
  // Dataset indices for `epoch` (0-based). Must depend only on the
  // construction context, `dataset_size` and `epoch`, so runs reproduce.
  virtual std::vector<int64_t> EpochIndices(int64_t dataset_size, int64_t epoch) const = 0;
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
