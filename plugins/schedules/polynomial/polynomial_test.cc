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

constexpr char kTestdata[] = "plugins/schedules/polynomial/testdata/";
using testing::kFixtureBaseLr;
using testing::kFixtureTotalSteps;
using testing::ReadLearningRates;

absl::StatusOr<std::unique_ptr<LearningRateSchedule>> MakePolynomial(const std::string& options) {
  return testing::CreatePlugin<LearningRateSchedule>(absl::StrCat(
      "name: \"polynomial\" options { [type.googleapis.com/pipeline.PolynomialScheduleOptions] { ",
      options, " } }"));
}

struct FixtureCase {
  std::string options;
  std::string fixture;
};

void PrintTo(const FixtureCase& fixture_case, std::ostream* out) { *out << fixture_case.fixture; }


class PolynomialFixtureTest : public ::testing::TestWithParam<FixtureCase> {};

TEST_P(PolynomialFixtureTest, MatchesTorchPolynomialLR) {
  auto schedule = MakePolynomial(GetParam().options);
  ASSERT_TRUE(schedule.ok()) << schedule.status();
  const std::vector<double> expected =
      ReadLearningRates(absl::StrCat(kTestdata, GetParam().fixture));
  ASSERT_EQ(expected.size(), kFixtureTotalSteps);
  for (int64_t step = 0; step < kFixtureTotalSteps; ++step) {
    const double lr = (*schedule)->Factor(step, kFixtureTotalSteps, 10) * kFixtureBaseLr;
    // PyTorch chains each step's rate from the previous one, which rounds a
    // little differently from the closed form; 37 steps stay far within 1e-12.
    EXPECT_NEAR(lr, expected[step], 1e-12 * std::abs(expected[step])) << "step " << step;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, PolynomialFixtureTest,
    ::testing::Values(FixtureCase{"", "torch_polynomial_power_1.txt"},
                      FixtureCase{"power: 2 total_iters: 37", "torch_polynomial_power_2.txt"},
                      FixtureCase{"power: 0.9 total_iters: 20",
                                  "torch_polynomial_power_0.9_total_iters_20.txt"}));

TEST(PolynomialScheduleTest, TotalItersZeroMeansTheWholeRun) {
  auto schedule = MakePolynomial("power: 2");
  ASSERT_TRUE(schedule.ok()) << schedule.status();
  EXPECT_DOUBLE_EQ((*schedule)->Factor(0, 100, 10), 1.0);
  EXPECT_DOUBLE_EQ((*schedule)->Factor(50, 100, 10), 0.25);
  EXPECT_DOUBLE_EQ((*schedule)->Factor(100, 100, 10), 0.0);
}

TEST(PolynomialScheduleTest, RejectsNonPositivePower) {
  EXPECT_EQ(MakePolynomial("power: 0").status().message(), "options: power: 0; must be > 0");
}

TEST(PolynomialScheduleTest, RejectsNegativeTotalIters) {
  EXPECT_EQ(MakePolynomial("total_iters: -1").status().message(),
            "options: total_iters: -1; must be >= 0 (0 = all steps of the run)");
}

}  // namespace
}  // namespace pipeline
