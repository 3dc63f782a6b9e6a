// sampler `random`: a new seeded permutation of every sample in each epoch.
// The permutation depends only on (seed, epoch), so a run reproduces, and a
// resumed run sees the same order as an uninterrupted one.
//
//   sampler {
//     name: "random"
//     options { [type.googleapis.com/pipeline.RandomSamplerOptions] { seed_offset: 1 } }
//   }

#include <numeric>
#include <utility>

#include "pipeline/interfaces/random.h"
#include "pipeline/interfaces/sampler.h"
#include "plugins/samplers/random/random_sampler.pb.h"

namespace pipeline {
namespace {

class RandomSampler : public Sampler {
 public:
  explicit RandomSampler(uint64_t seed) : seed_(seed) {}

  std::vector<int64_t> EpochIndices(int64_t dataset_size, int64_t epoch) const override {
    std::vector<int64_t> indices(dataset_size);
    std::iota(indices.begin(), indices.end(), 0);
    // Fisher-Yates with our own draws: std::shuffle's use of the engine is
    // not specified, and the order must not change with the standard library.
    SampleRandom random(seed_, static_cast<uint64_t>(epoch), /*index=*/0x5eed);
    for (int64_t i = dataset_size - 1; i > 0; --i) {
      std::swap(indices[i], indices[random.Below(static_cast<uint64_t>(i) + 1)]);
    }
    return indices;
  }

 private:
  uint64_t seed_;
};

// Training shuffles where the config names no sampler.
PIPELINE_DEFAULT_PLUGIN(Sampler, "train_data.sampler", "random");
PIPELINE_REGISTER_PLUGIN(Sampler, "random", RandomSamplerOptions,
                         "A seeded permutation of every sample, new each epoch",
                         [](const RandomSamplerOptions& options, const SamplerContext& context)
                             -> absl::StatusOr<std::unique_ptr<Sampler>> {
                           return std::make_unique<RandomSampler>(context.seed +
                                                                  options.seed_offset());
                         });

}  // namespace
}  // namespace pipeline
