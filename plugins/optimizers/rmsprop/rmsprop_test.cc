#include <string>

#include "gtest/gtest.h"
#include "pipeline/interfaces/optimizer.h"
#include "pipeline/testing/optimizer_fixture.h"
#include "pipeline/testing/plugin_test_util.h"

namespace pipeline {
namespace {

// torch.optim.RMSprop's own steps (tools/fixtures/optimizers.py); with
// eps_inside_sqrt, torch's update with TensorFlow's epsilon.
class RmspropFixtureTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RmspropFixtureTest, StepsAsTheReference) {
  testing::ExpectStepsMatchFixture("rmsprop",
                                   "plugins/optimizers/rmsprop/testdata/" + GetParam() + ".txt");
}

INSTANTIATE_TEST_SUITE_P(Fixtures, RmspropFixtureTest,
                         ::testing::Values("defaults", "momentum_centered_weight_decay",
                                           "torchvision_recipe", "tf_epsilon",
                                           "tf_epsilon_centered"));

TEST(RmspropTest, RejectsBadOptions) {
  EXPECT_EQ(testing::CreatePlugin<Optimizer>(
                R"pb(name: "rmsprop"
                     options { [type.googleapis.com/pipeline.RmspropOptions] { alpha: 1 } })pb")
                .status()
                .message(),
            "options: alpha: 1 is outside [0, 1)");
  EXPECT_EQ(testing::CreatePlugin<Optimizer>(
                R"pb(name: "rmsprop"
                     options { [type.googleapis.com/pipeline.RmspropOptions] { eps: 0 } })pb")
                .status()
                .message(),
            "options: eps: 0; must be > 0");
}

}  // namespace
}  // namespace pipeline
