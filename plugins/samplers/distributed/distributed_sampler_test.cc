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

}  // namespace
}  // namespace pipeline
