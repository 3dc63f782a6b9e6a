// sampler `sequential`: visits samples 0, 1, ..., N-1 in every epoch.
//
//   sampler { name: "sequential" }

#include <numeric>

#include "pipeline/interfaces/sampler.h"
#include "plugins/samplers/sequential/sequential_sampler.pb.h"

namespace pipeline {
namespace {

class SequentialSampler : public Sampler {
 public:
  std::vector<int64_t> EpochIndices(int64_t dataset_size, int64_t epoch) const override {
    std::vector<int64_t> indices(dataset_size);
    std::iota(indices.begin(), indices.end(), 0);
    return indices;
  }
};

// Validation keeps the order of what it measures where the config names no
// sampler.
PIPELINE_DEFAULT_PLUGIN(Sampler, "validation_data.sampler", "sequential");
PIPELINE_REGISTER_PLUGIN(Sampler, "sequential", SequentialSamplerOptions,
                         "Every sample in index order",
                         [](const SequentialSamplerOptions&, const SamplerContext&)
                             -> absl::StatusOr<std::unique_ptr<Sampler>> {
                           return std::make_unique<SequentialSampler>();
                         });

}  // namespace
}  // namespace pipeline
