#include <algorithm>

#include "gtest/gtest.h"
#include "pipeline/interfaces/sampler.h"
#include "pipeline/testing/plugin_test_util.h"

namespace pipeline {
namespace {

std::unique_ptr<Sampler> MakeSampler(uint64_t seed, const std::string& options = "") {
  SamplerContext context;
  context.seed = seed;
  auto sampler = testing::CreatePlugin<Sampler>(
      "name: \"random\" " + options, context);
  EXPECT_TRUE(sampler.ok()) << sampler.status();
  return std::move(sampler).value();
}

TEST(RandomSamplerTest, EachEpochIsAPermutationOfAllIndices) {
  auto sampler = MakeSampler(7);
  std::vector<int64_t> indices = sampler->EpochIndices(1000, 0);
  std::sort(indices.begin(), indices.end());
  for (int64_t i = 0; i < 1000; ++i) ASSERT_EQ(indices[i], i);
}

TEST(RandomSamplerTest, ReshufflesEveryEpochAndReproducesForTheSameSeed) {
  auto sampler = MakeSampler(7);
  const auto epoch0 = sampler->EpochIndices(1000, 0);
  const auto epoch1 = sampler->EpochIndices(1000, 1);
  EXPECT_NE(epoch0, epoch1);
  EXPECT_EQ(epoch0, MakeSampler(7)->EpochIndices(1000, 0));
  EXPECT_NE(epoch0, MakeSampler(8)->EpochIndices(1000, 0));
  std::vector<int64_t> identity(1000);
  for (int64_t i = 0; i < 1000; ++i) identity[i] = i;
  EXPECT_NE(epoch0, identity);
}

TEST(RandomSamplerTest, SeedOffsetChangesTheOrder) {
  EXPECT_NE(MakeSampler(7)->EpochIndices(100, 0),
            MakeSampler(7, R"pb(options {
                                  [type.googleapis.com/pipeline.RandomSamplerOptions] {
                                    seed_offset: 1
                                  }
                                })pb")
                ->EpochIndices(100, 0));
}

}  // namespace
}  // namespace pipeline
