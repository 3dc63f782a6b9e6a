#include <algorithm>
#include <set>

#include "gtest/gtest.h"
#include "pipeline/interfaces/sampler.h"
#include "pipeline/testing/plugin_test_util.h"

namespace pipeline {
namespace {

std::vector<int64_t> Shard(int rank, int world_size, int64_t n, int64_t epoch,
                           const std::string& options = "") {
  auto sampler = testing::CreatePlugin<Sampler>(
      "name: \"distributed\" " + options, {.seed = 4, .rank = rank, .world_size = world_size});
  EXPECT_TRUE(sampler.ok()) << sampler.status();
  return (*sampler)->EpochIndices(n, epoch);
}

TEST(DistributedSamplerTest, ShardsAreDisjointAndCoverEverything) {
  std::set<int64_t> seen;
  for (int rank = 0; rank < 4; ++rank) {
    std::vector<int64_t> shard = Shard(rank, 4, 100, 0);
    EXPECT_EQ(shard.size(), 25u);
    for (int64_t i : shard) EXPECT_TRUE(seen.insert(i).second) << i << " in two shards";
  }
  EXPECT_EQ(seen.size(), 100u);
}

TEST(DistributedSamplerTest, PadsOrDropsToEqualLengths) {
  // 10 samples over 3 ranks: padded to 4 each (2 repeats) or dropped to 3 each.
  std::vector<int64_t> all;
  for (int rank = 0; rank < 3; ++rank) {
    std::vector<int64_t> shard = Shard(rank, 3, 10, 0);
    EXPECT_EQ(shard.size(), 4u);
    all.insert(all.end(), shard.begin(), shard.end());
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::set<int64_t>(all.begin(), all.end()).size(), 10u);
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(Shard(rank, 3, 10, 0,
                    R"pb(options {
                           [type.googleapis.com/pipeline.DistributedSamplerOptions] {
                             drop_last: true
                           }
                         })pb")
                  .size(),
              3u);
  }
}

TEST(DistributedSamplerTest, ReshufflesPerEpochAndCanKeepOrder) {
  EXPECT_NE(Shard(0, 2, 50, 0), Shard(0, 2, 50, 1));
  EXPECT_EQ(Shard(0, 2, 50, 1), Shard(0, 2, 50, 1));
  EXPECT_EQ(Shard(1, 2, 6, 0,
                  R"pb(options {
                         [type.googleapis.com/pipeline.DistributedSamplerOptions] { shuffle: false }
                       })pb"),
            (std::vector<int64_t>{1, 3, 5}));
}

std::vector<int64_t> Remaining(int rank, int world_size, int64_t n, const EpochProgress& done,
                               const std::string& options = "") {
  auto sampler = testing::CreatePlugin<Sampler>(
      "name: \"distributed\" " + options, {.seed = 4, .rank = rank, .world_size = world_size});
  EXPECT_TRUE(sampler.ok()) << sampler.status();
  return (*sampler)->RemainingEpochIndices(n, 1, done);
}

// Resuming with the world size that wrote the checkpoint: each rank gets
// exactly the rest of its own shard, padding included.
TEST(DistributedSamplerTest, TheRestOfAnEpochInTheSameWorldIsTheRestOfEachShard) {
  for (const std::string& options :
       {std::string(), std::string("options { [type.googleapis.com/pipeline.DistributedSamplerOptions] "
                                   "{ drop_last: true } }")}) {
    for (int rank = 0; rank < 3; ++rank) {
      const std::vector<int64_t> whole = Shard(rank, 3, 100, 1, options);
      const std::vector<int64_t> rest = Remaining(rank, 3, 100, {.samples_per_rank = 5, .world_size = 3}, options);
      EXPECT_EQ(rest, std::vector<int64_t>(whole.begin() + 5, whole.end())) << rank << options;
    }
  }
}

// 2 ranks took 6 samples each of 30; 1 rank, then 3, go on with exactly the
// 18 nobody took, each once.
TEST(DistributedSamplerTest, AnotherWorldSizeTakesExactlyTheSamplesNobodyTook) {
  const EpochProgress done = {.samples_per_rank = 6, .world_size = 2};
  std::set<int64_t> taken;
  for (int rank = 0; rank < 2; ++rank) {
    const std::vector<int64_t> shard = Shard(rank, 2, 30, 1);
    taken.insert(shard.begin(), shard.begin() + 6);
  }
  ASSERT_EQ(taken.size(), 12u);
  for (int world_size : {1, 3}) {
    std::multiset<int64_t> rest;
    for (int rank = 0; rank < world_size; ++rank) {
      const std::vector<int64_t> shard = Remaining(rank, world_size, 30, done);
      EXPECT_EQ(shard.size(), 18u / world_size);
      rest.insert(shard.begin(), shard.end());
    }
    EXPECT_EQ(rest.size(), 18u);
    for (int64_t i = 0; i < 30; ++i) {
      EXPECT_EQ(rest.count(i), taken.count(i) ? 0u : 1u) << "sample " << i << ", world " << world_size;
    }
  }
  // Past the end of the epoch nothing is left.
  EXPECT_TRUE(Remaining(0, 1, 30, {.samples_per_rank = 15, .world_size = 2}).empty());
}

}  // namespace
}  // namespace pipeline
