// Samplers that each break one rule of the sampler conformance suite,
// instantiated with it; part of conformance_broken_plugins, whose output
// conformance_self_test checks.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <numeric>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "google/protobuf/empty.pb.h"
#include "pipeline/interfaces/random.h"
#include "pipeline/interfaces/sampler.h"
#include "pipeline/testing/sampler_conformance.h"

namespace pipeline {
namespace testing {
namespace {

using google::protobuf::Empty;
using Indices = std::vector<int64_t>;

Indices Shuffled(int64_t size, uint64_t seed, int64_t epoch) {
  Indices order(size);
  std::iota(order.begin(), order.end(), 0);
  SampleRandom random(seed, static_cast<uint64_t>(epoch), 0);
  for (int64_t i = size - 1; i > 0; --i) {
    std::swap(order[i], order[random.Below(static_cast<uint64_t>(i) + 1)]);
  }
  return order;
}

// Seeds itself from how many samplers were built before it, not from the
// context alone.
class SeededByACounter : public Sampler {
 public:
  explicit SeededByACounter(const SamplerContext& context) : seed_(context.seed + built_++) {}
  Indices EpochIndices(int64_t size, int64_t epoch) const override {
    return Shuffled(size, seed_, epoch);
  }

 private:
  static inline std::atomic<uint64_t> built_{0};
  uint64_t seed_;
};

// Counts the samples from 1.
class OneBased : public Sampler {
 public:
  explicit OneBased(const SamplerContext& context) : seed_(context.seed) {}
  Indices EpochIndices(int64_t size, int64_t epoch) const override {
    Indices order = Shuffled(size, seed_, epoch);
    for (int64_t& index : order) ++index;
    return order;
  }

 private:
  uint64_t seed_;
};

// Starts the epoch over on resuming, whatever was done.
class RestartsTheEpoch : public Sampler {
 public:
  explicit RestartsTheEpoch(const SamplerContext& context) : seed_(context.seed) {}
  Indices EpochIndices(int64_t size, int64_t epoch) const override {
    return Shuffled(size, seed_, epoch);
  }
  Indices RemainingEpochIndices(int64_t size, int64_t epoch, const EpochProgress&) const override {
    return EpochIndices(size, epoch);
  }

 private:
  uint64_t seed_;
};

// torch's DistributedSampler (without drop_last), dealing the rest of an
// epoch from where the old world stopped; the classes below each get one
// part of it wrong.
class Shards : public Sampler {
 public:
  explicit Shards(const SamplerContext& context)
      : seed_(context.seed), rank_(context.rank), world_size_(context.world_size) {}
  Indices EpochIndices(int64_t size, int64_t epoch) const override {
    return Deal(Shuffled(size, seed_, epoch), 0);
  }
  Indices RemainingEpochIndices(int64_t size, int64_t epoch,
                                const EpochProgress& done) const override {
    return Deal(Shuffled(size, seed_, epoch), done.samples_per_rank * done.world_size);
  }

 protected:
  // The position in the order of this rank's k-th sample from `start`;
  // from `size` on, the padding wraps round to the order's start.
  virtual int64_t Position(int64_t start, int64_t k, int64_t size) const {
    return (start + k * world_size_ + rank_) % size;
  }
  // How many samples this rank deals of the `left` from the start on.
  virtual int64_t Count(int64_t left) const { return (left + world_size_ - 1) / world_size_; }

  Indices Deal(const Indices& order, int64_t start) const {
    const int64_t size = static_cast<int64_t>(order.size());
    Indices shard;
    for (int64_t k = 0; k < Count(std::max<int64_t>(size - start, 0)); ++k) {
      shard.push_back(order[Position(start, k, size)]);
    }
    return shard;
  }

  uint64_t seed_;
  int rank_;
  int world_size_;
};

// The last rank of a world deals the first rank's samples as well.
class OverlappingShards : public Shards {
 public:
  using Shards::Shards;

 protected:
  int64_t Position(int64_t start, int64_t k, int64_t size) const override {
    const int rank = world_size_ > 1 && rank_ == world_size_ - 1 ? 0 : rank_;
    return (start + k * world_size_ + rank) % size;
  }
};

// Pads with the order's last sample instead of wrapping round to its start.
class PadsWithTheLast : public Shards {
 public:
  using Shards::Shards;

 protected:
  int64_t Position(int64_t start, int64_t k, int64_t size) const override {
    return std::min(start + k * world_size_ + rank_, size - 1);
  }
};

// Leaves the shards unequal instead of padding them.
class UnpaddedShards : public Shards {
 public:
  using Shards::Shards;

 protected:
  int64_t Count(int64_t left) const override {
    return left > rank_ ? (left - rank_ + world_size_ - 1) / world_size_ : 0;
  }
};

// Counts what the old world took in this world's ranks.
class ResumesInItsOwnWorld : public Shards {
 public:
  using Shards::Shards;
  Indices RemainingEpochIndices(int64_t size, int64_t epoch,
                                const EpochProgress& done) const override {
    return Deal(Shuffled(size, seed_, epoch), done.samples_per_rank * world_size_);
  }
};

template <typename T>
void RegisterSampler(const char* name) {
  static const PluginRegistration<Sampler, Empty> registration(
      name, "broken on purpose",
      [](const Empty&, const SamplerContext& context) -> absl::StatusOr<std::unique_ptr<Sampler>> {
        return std::make_unique<T>(context);
      });
}

const bool kRegistered = [] {
  RegisterSampler<OneBased>("broken_sampler_one_based");
  RegisterSampler<SeededByACounter>("broken_sampler_counter_seed");
  RegisterSampler<RestartsTheEpoch>("broken_sampler_restarts_epoch");
  RegisterSampler<OverlappingShards>("broken_sampler_overlapping_shards");
  RegisterSampler<PadsWithTheLast>("broken_sampler_pads_with_last");
  RegisterSampler<UnpaddedShards>("broken_sampler_unpadded_shards");
  RegisterSampler<ResumesInItsOwnWorld>("broken_sampler_resume_world");
  return true;
}();

#define BROKEN_SAMPLER(name, shards)                                                       \
  INSTANTIATE_TEST_SUITE_P(name, SamplerConformanceTest,                                   \
                           ::testing::Values(SamplerConformanceParams{#name, "", shards}), \
                           SamplerConformanceTestName)

BROKEN_SAMPLER(broken_sampler_one_based, false);
BROKEN_SAMPLER(broken_sampler_counter_seed, false);
BROKEN_SAMPLER(broken_sampler_restarts_epoch, false);
BROKEN_SAMPLER(broken_sampler_overlapping_shards, true);
BROKEN_SAMPLER(broken_sampler_pads_with_last, true);
BROKEN_SAMPLER(broken_sampler_unpadded_shards, true);
BROKEN_SAMPLER(broken_sampler_resume_world, true);

}  // namespace
}  // namespace testing
}  // namespace pipeline
