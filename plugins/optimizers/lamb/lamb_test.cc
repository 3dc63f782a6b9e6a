#include <string>

#include "gtest/gtest.h"
#include "pipeline/interfaces/optimizer.h"
#include "pipeline/testing/optimizer_fixture.h"
#include "pipeline/testing/plugin_test_util.h"

namespace pipeline {
namespace {

// A NumPy copy of timm's Lamb.step (tools/fixtures/optimizers.py), the
// bias in a param group with weight_decay 0 where exclude_1d is true.
class LambFixtureTest : public ::testing::TestWithParam<std::string> {};

TEST_P(LambFixtureTest, StepsAsTimm) {
  testing::ExpectStepsMatchFixture("lamb",
                                   "plugins/optimizers/lamb/testdata/" + GetParam() + ".txt");
}

INSTANTIATE_TEST_SUITE_P(Fixtures, LambFixtureTest,
                         ::testing::Values("clipped", "unclipped_trust_clip_no_correction",
                                           "always_adapt_no_decay", "decay_on_1d_too"));

TEST(LambTest, RejectsBadOptions) {
  EXPECT_EQ(testing::CreatePlugin<Optimizer>(
                R"pb(name: "lamb"
                     options { [type.googleapis.com/pipeline.LambOptions] { beta1: 1 } })pb")
                .status()
                .message(),
            "options: beta1, beta2: 1 is outside [0, 1)");
  EXPECT_EQ(testing::CreatePlugin<Optimizer>(
                R"pb(name: "lamb"
                     options { [type.googleapis.com/pipeline.LambOptions] { max_grad_norm: -1 } })pb")
                .status()
                .message(),
            "options: weight_decay and max_grad_norm must be >= 0");
}

}  // namespace
}  // namespace pipeline
