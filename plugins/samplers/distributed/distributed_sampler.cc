// sampler `distributed`: this rank's shard of a (shuffled) epoch, the same
// length on every rank so that DDP ranks take the same number of steps.
//
//   train_data {
//     sampler {
//       name: "distributed"
//       options { [type.googleapis.com/pipeline.DistributedSamplerOptions] { shuffle: true } }
//     }
//   }
//
// Validation needs no such sampler: the trainer splits whatever order the
// validation sampler gives between the ranks without padding, so every
// sample is counted exactly once.

#include <numeric>
#include <utility>

#include "pipeline/interfaces/random.h"
#include "pipeline/interfaces/sampler.h"
#include "plugins/samplers/distributed/distributed_sampler.pb.h"

namespace pipeline {
namespace {

class DistributedSampler : public Sampler {
 public:
  DistributedSampler(const DistributedSamplerOptions& options, const SamplerContext& context)
      : options_(options),
        seed_(context.seed + options.seed_offset()),
        rank_(context.rank),
        world_size_(context.world_size) {}

  std::vector<int64_t> EpochIndices(int64_t dataset_size, int64_t epoch) const override {
    std::vector<int64_t> order(dataset_size);
    std::iota(order.begin(), order.end(), 0);
    if (options_.shuffle()) {
      // The same draws as the `random` sampler, so a one-rank run shuffles
      // exactly like it.
      SampleRandom random(seed_, static_cast<uint64_t>(epoch), /*index=*/0x5eed);
      for (int64_t i = dataset_size - 1; i > 0; --i) {
        std::swap(order[i], order[random.Below(static_cast<uint64_t>(i) + 1)]);
      }
    }
    const int64_t per_rank = options_.drop_last()
                                 ? dataset_size / world_size_
                                 : (dataset_size + world_size_ - 1) / world_size_;
    const int64_t total = per_rank * world_size_;
    for (int64_t i = dataset_size; i < total && dataset_size > 0; ++i) {
      order.push_back(order[(i - dataset_size) % dataset_size]);
    }
    std::vector<int64_t> shard;
    shard.reserve(per_rank);
    for (int64_t i = rank_; i < total; i += world_size_) shard.push_back(order[i]);
    return shard;
  }

 private:
  DistributedSamplerOptions options_;
  uint64_t seed_;
  int rank_;
  int world_size_;
};

PIPELINE_REGISTER_PLUGIN(Sampler, "distributed", DistributedSamplerOptions,
                         "This rank's disjoint shard of a seeded shuffle (torch's "
                         "DistributedSampler)",
                         [](const DistributedSamplerOptions& options,
                            const SamplerContext& context)
                             -> absl::StatusOr<std::unique_ptr<Sampler>> {
                           return std::make_unique<DistributedSampler>(options, context);
                         });

}  // namespace
}  // namespace pipeline
