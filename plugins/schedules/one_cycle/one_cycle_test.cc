#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pipeline/interfaces/schedule.h"
#include "pipeline/testing/plugin_test_util.h"
#include "pipeline/testing/schedule_fixture.h"

namespace pipeline {
namespace {

constexpr char kTestdata[] = "plugins/schedules/one_cycle/testdata/";
using testing::kFixtureBaseLr;
using testing::kFixtureTotalSteps;
using testing::ReadLearningRates;

absl::StatusOr<std::unique_ptr<LearningRateSchedule>> MakeOneCycle(const std::string& options) {
  return testing::CreatePlugin<LearningRateSchedule>(absl::StrCat(
      "name: \"one_cycle\" options { [type.googleapis.com/pipeline.OneCycleScheduleOptions] { ",
      options, " } }"));
}

struct FixtureCase {
  std::string options;
  std::string fixture;
};

void PrintTo(const FixtureCase& fixture_case, std::ostream* out) { *out << fixture_case.fixture; }


class OneCycleFixtureTest : public ::testing::TestWithParam<FixtureCase> {};

TEST_P(OneCycleFixtureTest, MatchesTorchOneCycleLR) {
  auto schedule = MakeOneCycle(GetParam().options);
  ASSERT_TRUE(schedule.ok()) << schedule.status();
  const std::vector<double> expected =
      ReadLearningRates(absl::StrCat(kTestdata, GetParam().fixture));
  ASSERT_EQ(expected.size(), kFixtureTotalSteps);
  for (int64_t step = 0; step < kFixtureTotalSteps; ++step) {
    const double lr = (*schedule)->Factor(step, kFixtureTotalSteps, 10) * kFixtureBaseLr;
    // 1e-12 relative, except where OneCycleLR's anneal cancels: the linear
    // one ends as (min_lr - max_lr) * 1 + max_lr, whose terms are ~max_lr, so
    // its rounding (~1e-17 * max_lr, in PyTorch's and in ours, which computes
    // with max_lr = 1 and scales after) is ~1e-11 of min_lr = max_lr / 2.5e5.
    const double tolerance = std::max(1e-12 * std::abs(expected[step]), 1e-15 * kFixtureBaseLr);
    EXPECT_NEAR(lr, expected[step], tolerance) << "step " << step;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, OneCycleFixtureTest,
    ::testing::Values(
        FixtureCase{"", "torch_one_cycle_cos.txt"},
        FixtureCase{"anneal_strategy: LINEAR", "torch_one_cycle_linear.txt"},
        FixtureCase{"three_phase: true", "torch_one_cycle_cos_three_phase.txt"},
        FixtureCase{"anneal_strategy: LINEAR three_phase: true pct_start: 0.25 div_factor: 10 "
                    "final_div_factor: 100",
                    "torch_one_cycle_linear_three_phase_pct_start_0.25_div_factor_10_final_div_"
                    "factor_100.txt"}));

TEST(OneCycleScheduleTest, PeaksAtTheOptimizersLearningRate) {
  auto schedule = MakeOneCycle("");
  ASSERT_TRUE(schedule.ok()) << schedule.status();
  // 100 steps, pct_start 0.3: the rise ends at step 29.
  // Step 0 rounds as in PyTorch: max_lr + (initial - max_lr) is not exact.
  EXPECT_NEAR((*schedule)->Factor(0, 100, 10), 1.0 / 25, 1e-15);
  EXPECT_DOUBLE_EQ((*schedule)->Factor(29, 100, 10), 1.0);
  EXPECT_DOUBLE_EQ((*schedule)->Factor(99, 100, 10), 1.0 / 25 / 1e4);
}

TEST(OneCycleScheduleTest, PhaseOfNoLengthEndsAtItsEnd) {
  auto schedule = MakeOneCycle("pct_start: 0.5");
  ASSERT_TRUE(schedule.ok()) << schedule.status();
  // 2 steps: the rise is step 0 alone, where PyTorch would divide by zero.
  EXPECT_DOUBLE_EQ((*schedule)->Factor(0, 2, 1), 1.0);
  EXPECT_DOUBLE_EQ((*schedule)->Factor(1, 2, 1), 1.0 / 25 / 1e4);
}

TEST(OneCycleScheduleTest, RejectsPctStartAboveOne) {
  EXPECT_EQ(MakeOneCycle("pct_start: 1.5").status().message(),
            "options: pct_start: 1.5; must be in [0, 1]");
}

TEST(OneCycleScheduleTest, RejectsNonPositiveDivFactors) {
  EXPECT_EQ(MakeOneCycle("div_factor: 0").status().message(),
            "options: div_factor: 0; must be > 0");
  EXPECT_EQ(MakeOneCycle("final_div_factor: -1").status().message(),
            "options: final_div_factor: -1; must be > 0");
}

}  // namespace
}  // namespace pipeline
