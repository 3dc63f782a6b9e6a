#include "gtest/gtest.h"
#include "pipeline/interfaces/sampler.h"
#include "pipeline/testing/plugin_test_util.h"

namespace pipeline {
namespace {

TEST(SequentialSamplerTest, VisitsEveryIndexInOrderEachEpoch) {
  auto sampler = testing::CreatePlugin<Sampler>(R"pb(name: "sequential")pb");
  ASSERT_TRUE(sampler.ok()) << sampler.status();
  EXPECT_EQ((*sampler)->EpochIndices(5, 0), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ((*sampler)->EpochIndices(5, 3), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_TRUE((*sampler)->EpochIndices(0, 0).empty());
}

}  // namespace
}  // namespace pipeline
