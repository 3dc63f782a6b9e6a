#include "pipeline/testing/sampler_conformance.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "pipeline/interfaces/sampler.h"
#include "pipeline/testing/conformance_config.h"

namespace pipeline {
namespace testing {

void PrintTo(const SamplerConformanceParams& params, std::ostream* out) {
  *out << "sampler \"" << params.plugin << "\" with options {" << params.options << "}, "
       << (params.shards ? "sharding" : "the whole epoch on every rank");
}

std::string SamplerConformanceTestName(
    const ::testing::TestParamInfo<SamplerConformanceParams>& info) {
  return ConformanceInstanceName(info.index);
}

namespace {

using Indices = std::vector<int64_t>;
// One sampler per rank of a world.
using World = std::vector<std::unique_ptr<Sampler>>;

constexpr uint64_t kSeed = 17;
// Empty, one sample, and sizes no world size divides.
constexpr int64_t kSizes[] = {0, 1, 2, 5, 7, 13, 31};
constexpr int kWorldSizes[] = {1, 2, 3};
constexpr int64_t kEpochs[] = {0, 1, 4};

std::string Show(const Indices& indices) {
  return absl::StrCat("{", absl::StrJoin(indices, ", "), "}");
}

std::string Where(int64_t size, int world_size, int64_t epoch) {
  return absl::StrCat(size, " samples, epoch ", epoch, ", a world of ", world_size);
}

absl::StatusOr<World> MakeWorld(const SamplerConformanceParams& params, int world_size,
                                uint64_t seed = kSeed) {
  absl::StatusOr<PluginConfig> config = ConformanceConfig<Sampler>(params.plugin, params.options);
  if (!config.ok()) return config.status();
  World world;
  for (int rank = 0; rank < world_size; ++rank) {
    absl::StatusOr<std::unique_ptr<Sampler>> sampler =
        Registry<Sampler>::Global().Create(*config, SamplerContext{seed, rank, world_size});
    if (!sampler.ok()) return sampler.status();
    world.push_back(*std::move(sampler));
  }
  return world;
}

#define WORLD_OR_RETURN(world, ...)                                         \
  absl::StatusOr<World> world##_made_ = MakeWorld(GetParam(), __VA_ARGS__); \
  ASSERT_TRUE(world##_made_.ok()) << world##_made_.status();                \
  const World& world = *world##_made_

std::vector<Indices> EpochOfEveryRank(const World& world, int64_t size, int64_t epoch) {
  std::vector<Indices> shards;
  for (const auto& sampler : world) shards.push_back(sampler->EpochIndices(size, epoch));
  return shards;
}

std::vector<Indices> RestOfEveryRank(const World& world, int64_t size, int64_t epoch,
                                     const EpochProgress& done) {
  std::vector<Indices> shards;
  for (const auto& sampler : world) {
    shards.push_back(sampler->RemainingEpochIndices(size, epoch, done));
  }
  return shards;
}

// Distinct progress counts from 0 to past `length`, the end of an epoch.
std::vector<int64_t> Progress(int64_t length) {
  std::set<int64_t> counts = {0,      1,         length / 2, std::max<int64_t>(length - 1, 0),
                              length, length + 1};
  return {counts.begin(), counts.end()};
}

std::string OutOfRange(const Indices& indices, int64_t size) {
  for (int64_t index : indices) {
    if (index < 0 || index >= size) return absl::StrCat(index, " in ", Show(indices));
  }
  return "";
}

TEST_P(SamplerConformanceTest, IndicesAreInRange) {
  for (int world_size : kWorldSizes) {
    WORLD_OR_RETURN(world, world_size);
    for (int64_t size : kSizes) {
      for (int64_t epoch : kEpochs) {
        const std::string where = Where(size, world_size, epoch);
        for (int rank = 0; rank < world_size; ++rank) {
          const Sampler& sampler = *world[rank];
          ASSERT_EQ(OutOfRange(sampler.EpochIndices(size, epoch), size), "")
              << where << ", rank " << rank << ": EpochIndices";
          for (int old_world_size : kWorldSizes) {
            for (int64_t done : Progress(size)) {
              ASSERT_EQ(
                  OutOfRange(sampler.RemainingEpochIndices(size, epoch, {done, old_world_size}),
                             size),
                  "")
                  << where << ", rank " << rank << ": RemainingEpochIndices after " << done
                  << " samples per rank of a world of " << old_world_size;
            }
          }
        }
      }
    }
  }
}

TEST_P(SamplerConformanceTest, TheSameContextGivesTheSameOrder) {
  for (uint64_t seed : {uint64_t{0}, kSeed, ~uint64_t{0}}) {
    for (int world_size : kWorldSizes) {
      WORLD_OR_RETURN(first, world_size, seed);
      WORLD_OR_RETURN(second, world_size, seed);
      for (int64_t size : kSizes) {
        for (int rank = 0; rank < world_size; ++rank) {
          // The first instance asks for the epochs forward, the second
          // backward, then the first again.
          std::map<int64_t, Indices> forward, backward;
          for (int64_t epoch : kEpochs) forward[epoch] = first[rank]->EpochIndices(size, epoch);
          for (auto e = std::rbegin(kEpochs); e != std::rend(kEpochs); ++e) {
            backward[*e] = second[rank]->EpochIndices(size, *e);
          }
          for (int64_t epoch : kEpochs) {
            const std::string where =
                absl::StrCat(Where(size, world_size, epoch), ", rank ", rank, ", seed ", seed);
            ASSERT_EQ(backward[epoch], forward[epoch])
                << where << ": a second instance, asked in another order, gives another order";
            ASSERT_EQ(first[rank]->EpochIndices(size, epoch), forward[epoch])
                << where << ": asked again, the instance gives another order";
            const EpochProgress done = {1, world_size};
            ASSERT_EQ(second[rank]->RemainingEpochIndices(size, epoch, done),
                      first[rank]->RemainingEpochIndices(size, epoch, done))
                << where << ": a second instance gives another rest of the epoch";
          }
        }
      }
    }
  }
}

// "" when every shard has the same length, else the lengths.
std::string UnequalLengths(const std::vector<Indices>& shards) {
  std::vector<size_t> lengths;
  for (const Indices& shard : shards) lengths.push_back(shard.size());
  if (std::adjacent_find(lengths.begin(), lengths.end(), std::not_equal_to<>()) == lengths.end()) {
    return "";
  }
  return absl::StrCat("the ranks get ", absl::StrJoin(lengths, ", "), " samples");
}

TEST_P(SamplerConformanceTest, EveryRankGetsEquallyMany) {
  for (int world_size : kWorldSizes) {
    WORLD_OR_RETURN(world, world_size);
    for (int64_t size : kSizes) {
      for (int64_t epoch : kEpochs) {
        const std::string where = Where(size, world_size, epoch);
        ASSERT_EQ(UnequalLengths(EpochOfEveryRank(world, size, epoch)), "")
            << where << ": EpochIndices";
        for (int old_world_size : kWorldSizes) {
          for (int64_t done : Progress(size)) {
            ASSERT_EQ(UnequalLengths(RestOfEveryRank(world, size, epoch, {done, old_world_size})),
                      "")
                << where << ": RemainingEpochIndices after " << done
                << " samples per rank of a world of " << old_world_size;
          }
        }
      }
    }
  }
}

// What a sharding sampler does with the tail of an epoch that the world size
// does not divide, as it does for a whole epoch of this size and world:
// pads the shards to one length, or drops the tail (kEither: no tail).
enum class Tail { kPadded, kDropped, kEither };

Tail TailOf(const std::vector<Indices>& epoch, int64_t size) {
  int64_t dealt = 0;
  for (const Indices& shard : epoch) dealt += static_cast<int64_t>(shard.size());
  return dealt > size ? Tail::kPadded : dealt < size ? Tail::kDropped : Tail::kEither;
}

// "" when `shards` (one per rank) deal the samples `left` as a sharding
// sampler must: each to exactly one rank, except that fewer than one per
// rank are repeated (padding) or left out (dropping), as `tail` allows.
std::string NotDealtOnce(const std::vector<Indices>& shards, const std::set<int64_t>& left,
                         Tail tail) {
  std::map<int64_t, int> dealt;
  int64_t total = 0;
  for (const Indices& shard : shards) {
    for (int64_t index : shard) ++dealt[index];
    total += static_cast<int64_t>(shard.size());
  }
  const int64_t count = static_cast<int64_t>(left.size());
  const int64_t world_size = static_cast<int64_t>(shards.size());
  const std::string all = absl::StrCat(
      " (of ", count, " samples, ", total, " dealt: ",
      absl::StrJoin(shards, " | ",
                    [](std::string* out, const Indices& shard) { out->append(Show(shard)); }),
      ")");
  if (total > count) {
    if (tail == Tail::kDropped) return "the sampler drops, yet pads here" + all;
    if (total - count >= world_size) return "more than one padding sample per rank" + all;
    for (int64_t index : left) {
      if (dealt.count(index) == 0) return absl::StrCat(index, " is dealt to no rank", all);
    }
    return "";
  }
  if (tail == Tail::kPadded && total < count) return "the sampler pads, yet drops here" + all;
  if (count - total >= world_size) return "more than one dropped sample per rank" + all;
  for (const auto& [index, times] : dealt) {
    if (times > 1) return absl::StrCat(index, " is dealt ", times, " times", all);
    if (left.count(index) == 0) return absl::StrCat(index, " is dealt, but not left", all);
  }
  return "";
}

// "" when the padding of equal shards repeats the start of the order they
// deal, interleaved as torch's DistributedSampler deals it.
std::string PaddingDoesNotWrap(const std::vector<Indices>& shards, int64_t size) {
  if (!UnequalLengths(shards).empty() || shards.empty()) return "";
  if (size == 0) return shards[0].empty() ? "" : "samples dealt of an empty dataset";
  const int64_t world_size = static_cast<int64_t>(shards.size());
  Indices dealt;
  for (size_t k = 0; k < shards[0].size(); ++k) {
    for (const Indices& shard : shards) dealt.push_back(shard[k]);
  }
  for (int64_t i = size; i < static_cast<int64_t>(dealt.size()); ++i) {
    if (dealt[i] != dealt[i % size]) {
      return absl::StrCat("padding sample ", i - size, " (rank ", i % world_size, "'s sample ",
                          i / world_size, ") is ", dealt[i], ", not ", dealt[i % size],
                          ", the dealt order's sample ", i % size, "; dealt: ", Show(dealt));
    }
  }
  return "";
}

std::set<int64_t> AllOf(int64_t size) {
  std::set<int64_t> all;
  for (int64_t i = 0; i < size; ++i) all.insert(i);
  return all;
}

Indices Sorted(Indices indices) {
  std::sort(indices.begin(), indices.end());
  return indices;
}

TEST_P(SamplerConformanceTest, TheRanksTogetherCoverTheEpoch) {
  for (int world_size : kWorldSizes) {
    WORLD_OR_RETURN(world, world_size);
    for (int64_t size : kSizes) {
      for (int64_t epoch : kEpochs) {
        const std::string where = Where(size, world_size, epoch);
        const std::vector<Indices> shards = EpochOfEveryRank(world, size, epoch);
        if (GetParam().shards) {
          ASSERT_EQ(NotDealtOnce(shards, AllOf(size), Tail::kEither), "") << where;
          ASSERT_EQ(PaddingDoesNotWrap(shards, size), "") << where;
          continue;
        }
        Indices all(size);
        std::iota(all.begin(), all.end(), 0);
        for (int rank = 0; rank < world_size; ++rank) {
          ASSERT_EQ(Sorted(shards[rank]), all)
              << where << ", rank " << rank
              << ": not a permutation of every index: " << Show(shards[rank]);
        }
      }
    }
  }
}

TEST_P(SamplerConformanceTest, ResumingInTheSameWorldContinuesEachRanksOrder) {
  for (int world_size : kWorldSizes) {
    WORLD_OR_RETURN(world, world_size);
    for (int64_t size : kSizes) {
      for (int64_t epoch : kEpochs) {
        for (int rank = 0; rank < world_size; ++rank) {
          const Indices whole = world[rank]->EpochIndices(size, epoch);
          const int64_t length = static_cast<int64_t>(whole.size());
          for (int64_t done : Progress(length)) {
            const Indices want(whole.begin() + std::min(done, length), whole.end());
            ASSERT_EQ(world[rank]->RemainingEpochIndices(size, epoch, {done, world_size}), want)
                << Where(size, world_size, epoch) << ", rank " << rank << ", after " << done
                << " samples per rank of " << Show(whole);
          }
        }
      }
    }
  }
}

TEST_P(SamplerConformanceTest, ResumingInAnotherWorldVisitsWhatNoRankTook) {
  for (int old_size : kWorldSizes) {
    WORLD_OR_RETURN(old_world, old_size);
    for (int new_size : kWorldSizes) {
      if (new_size == old_size) continue;
      WORLD_OR_RETURN(new_world, new_size);
      for (int64_t size : kSizes) {
        for (int64_t epoch : kEpochs) {
          const std::vector<Indices> before = EpochOfEveryRank(old_world, size, epoch);
          const Tail tail = TailOf(EpochOfEveryRank(new_world, size, epoch), size);
          for (int64_t done : Progress(static_cast<int64_t>(before[0].size()))) {
            if (done > static_cast<int64_t>(before[0].size())) continue;  // past the epoch
            std::set<int64_t> left = AllOf(size);
            for (const Indices& shard : before) {
              const int64_t taken = std::min<int64_t>(done, shard.size());
              for (int64_t k = 0; k < taken; ++k) left.erase(shard[k]);
            }
            const std::vector<Indices> rest =
                RestOfEveryRank(new_world, size, epoch, {done, old_size});
            const std::string where = absl::StrCat(size, " samples, epoch ", epoch, ": a world of ",
                                                   new_size, " resuming after ", done,
                                                   " samples per rank of a world of ", old_size);
            if (GetParam().shards) {
              ASSERT_EQ(NotDealtOnce(rest, left, tail), "") << where;
              continue;
            }
            const Indices want(left.begin(), left.end());
            for (int rank = 0; rank < new_size; ++rank) {
              ASSERT_EQ(Sorted(rest[rank]), want)
                  << where << ", rank " << rank
                  << ": not the samples left, each once: " << Show(rest[rank]);
            }
          }
        }
      }
    }
  }
}

#undef WORLD_OR_RETURN

}  // namespace

// Plugins instantiate the suite from their own BUILD (conformance.bzl).
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(SamplerConformanceTest);

}  // namespace testing
}  // namespace pipeline
