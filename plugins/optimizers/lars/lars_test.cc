#include <string>

#include "gtest/gtest.h"
#include "pipeline/interfaces/optimizer.h"
#include "pipeline/testing/optimizer_fixture.h"
#include "pipeline/testing/plugin_test_util.h"

namespace pipeline {
namespace {

// A NumPy copy of timm's Lars.step (tools/fixtures/optimizers.py), the
// bias in a param group with weight_decay 0 where exclude_1d is true.
class LarsFixtureTest : public ::testing::TestWithParam<std::string> {};

TEST_P(LarsFixtureTest, StepsAsTimm) {
  testing::ExpectStepsMatchFixture("lars",
                                   "plugins/optimizers/lars/testdata/" + GetParam() + ".txt");
}

INSTANTIATE_TEST_SUITE_P(Fixtures, LarsFixtureTest,
                         ::testing::Values("momentum_weight_decay", "nesterov",
                                           "trust_clip_dampening", "always_adapt_no_momentum",
                                           "decay_on_1d_too"));

TEST(LarsTest, RejectsBadOptions) {
  EXPECT_EQ(testing::CreatePlugin<Optimizer>(
                R"pb(name: "lars"
                     options { [type.googleapis.com/pipeline.LarsOptions] { trust_coeff: 0 } })pb")
                .status()
                .message(),
            "options: trust_coeff: 0; must be > 0");
  EXPECT_EQ(testing::CreatePlugin<Optimizer>(
                R"pb(name: "lars"
                     options { [type.googleapis.com/pipeline.LarsOptions] { nesterov: true } })pb")
                .status()
                .message(),
            "options: nesterov: needs momentum > 0 and dampening 0 (as torch.optim.SGD)");
}

}  // namespace
}  // namespace pipeline
