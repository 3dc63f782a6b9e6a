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
    return Shard(Shuffled(dataset_size, epoch), /*start=*/0);
  }

  // Rank r's k-th sample is the global order's (k * world size + r)-th, so
  // the earlier run's ranks took a prefix of it: the rest is dealt between
  // this run's ranks. With the same world size that is exactly what each
  // rank had left.
  std::vector<int64_t> RemainingEpochIndices(int64_t dataset_size, int64_t epoch,
                                             const EpochProgress& done) const override {
    return Shard(Shuffled(dataset_size, epoch),
                 done.samples_per_rank * std::max(done.world_size, 1));
  }

 private:
  std::vector<int64_t> Shuffled(int64_t dataset_size, int64_t epoch) const {
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
    return order;
  }

  // This rank's every world_size-th sample of `order` from position
  // `start` on: the same count on every rank, the last ones repeating the
  // order's start (or left out, with drop_last), as torch's
  // DistributedSampler.
  std::vector<int64_t> Shard(const std::vector<int64_t>& order, int64_t start) const {
    const int64_t size = static_cast<int64_t>(order.size());
    const int64_t left = std::max<int64_t>(size - start, 0);
    const int64_t per_rank =
        options_.drop_last() ? left / world_size_ : (left + world_size_ - 1) / world_size_;
    std::vector<int64_t> shard;
    shard.reserve(per_rank);
    for (int64_t k = 0; k < per_rank; ++k) {
      const int64_t i = start + k * world_size_ + rank_;
      shard.push_back(i < size ? order[i] : order[(i - size) % size]);
    }
    return shard;
  }

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
