#include <cmath>
#include <cstdint>
#include <fstream>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pipeline/interfaces/schedule.h"
#include "pipeline/testing/plugin_test_util.h"
#include "pipeline/testing/schedule_fixture.h"

namespace pipeline {
namespace {

constexpr char kTestdata[] = "plugins/schedules/plateau/testdata/";
using testing::kFixtureBaseLr;

absl::StatusOr<std::unique_ptr<LearningRateSchedule>> MakePlateau(const std::string& options) {
  return testing::CreatePlugin<LearningRateSchedule>(
      absl::StrCat("name: \"plateau\" options { "
                   "[type.googleapis.com/pipeline.PlateauScheduleOptions] { ",
                   options, " } }"),
      ScheduleContext{kFixtureBaseLr});
}

// Each fixture line: the value the scheduler was stepped with, and the
// learning rate after that step.
std::vector<std::pair<double, double>> ReadSteps(const std::string& fixture) {
  std::ifstream file(absl::StrCat(kTestdata, fixture));
  EXPECT_TRUE(file.good()) << fixture;
  std::vector<std::pair<double, double>> steps;
  for (std::string line; std::getline(file, line);) {
    if (line.empty() || line[0] == '#') continue;
    double value = 0, rate = 0;
    EXPECT_EQ(std::sscanf(line.c_str(), "%lf %lf", &value, &rate), 2) << line;
    steps.emplace_back(value, rate);
  }
  return steps;
}

struct FixtureCase {
  std::string options;
  std::string fixture;
  bool higher_is_better;  // the monitored figure's own direction
};

void PrintTo(const FixtureCase& fixture_case, std::ostream* out) { *out << fixture_case.fixture; }

class PlateauFixtureTest : public ::testing::TestWithParam<FixtureCase> {};

TEST_P(PlateauFixtureTest, MatchesTorchReduceLROnPlateau) {
  auto schedule = MakePlateau(GetParam().options);
  ASSERT_TRUE(schedule.ok()) << schedule.status();
  EXPECT_DOUBLE_EQ((*schedule)->Factor(0, 100, 10), 1.0);
  const auto steps = ReadSteps(GetParam().fixture);
  ASSERT_GT(steps.size(), 10u);
  bool reduced = false;
  for (size_t i = 0; i < steps.size(); ++i) {
    (*schedule)->Observe(steps[i].first, GetParam().higher_is_better);
    const double lr = (*schedule)->Factor(i, 100, 10) * kFixtureBaseLr;
    EXPECT_NEAR(lr, steps[i].second, 1e-12 * steps[i].second) << "validation " << i;
    reduced |= steps[i].second < kFixtureBaseLr;
  }
  EXPECT_TRUE(reduced) << "a fixture that never reduces checks little";
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, PlateauFixtureTest,
    ::testing::Values(
        FixtureCase{"mode: MIN patience: 1 factor: 0.5",
                    "torch_plateau_min_patience_1_factor_0.5.txt", false},
        FixtureCase{"mode: MIN patience: 0 cooldown: 2 min_lr: 0.02",
                    "torch_plateau_min_patience_0_cooldown_2_min_lr_0.02.txt", false},
        FixtureCase{"mode: MAX patience: 2 threshold: 0.05 threshold_mode: ABS",
                    "torch_plateau_max_patience_2_abs_threshold_0.05.txt", false},
        // AUTO follows the figure: a loss is minimised, as mode='min'.
        FixtureCase{"", "torch_plateau_min_defaults.txt", false}));

TEST(PlateauScheduleTest, AutoModeFollowsTheFiguresDirection) {
  auto schedule = MakePlateau("patience: 0 factor: 0.5 metric: \"val_acc\"");
  ASSERT_TRUE(schedule.ok()) << schedule.status();
  EXPECT_EQ((*schedule)->MonitoredFigure(), "val_acc");
  (*schedule)->Observe(0.5, /*higher_is_better=*/true);
  (*schedule)->Observe(0.6, true);  // better: no reduction
  EXPECT_DOUBLE_EQ((*schedule)->Factor(0, 1, 1), 1.0);
  (*schedule)->Observe(0.55, true);  // worse: reduced at once (patience 0)
  EXPECT_DOUBLE_EQ((*schedule)->Factor(0, 1, 1), 0.5);
}

// A resumed run restores the state and continues as an uninterrupted one.
TEST(PlateauScheduleTest, StateRoundTripsMidRun) {
  const auto steps = ReadSteps("torch_plateau_min_patience_0_cooldown_2_min_lr_0.02.txt");
  const std::string options = "mode: MIN patience: 0 cooldown: 2 min_lr: 0.02";
  auto through = MakePlateau(options);
  ASSERT_TRUE(through.ok());
  for (size_t i = 0; i < 7; ++i) (*through)->Observe(steps[i].first, false);
  auto resumed = MakePlateau(options);
  ASSERT_TRUE(resumed.ok());
  ASSERT_TRUE((*resumed)->Restore((*through)->State()).ok());
  for (size_t i = 7; i < steps.size(); ++i) {
    (*through)->Observe(steps[i].first, false);
    (*resumed)->Observe(steps[i].first, false);
    EXPECT_EQ((*resumed)->Factor(0, 1, 1), (*through)->Factor(0, 1, 1)) << i;
  }
  EXPECT_FALSE((*resumed)->Restore({1.0}).ok());
}

// A damaged checkpoint is an error, not a NaN learning rate; the best value
// may be NaN (none yet) or infinite.
TEST(PlateauScheduleTest, RestoreRefusesAStateItCannotHaveWritten) {
  auto schedule = MakePlateau("patience: 1");
  ASSERT_TRUE(schedule.ok());
  const double nan = std::nan("");
  const double inf = INFINITY;
  for (const std::vector<double>& bad :
       std::vector<std::vector<double>>{{nan, 1, 0, 0},
                                        {inf, 1, 0, 0},
                                        {-0.1, 1, 0, 0},
                                        {0.1, 1, nan, 0},
                                        {0.1, 1, -1, 0},
                                        {0.1, 1, 1.5, 0},
                                        {0.1, 1, 1e300, 0},
                                        {0.1, 1, 0, nan},
                                        {0.1, 1, 0, inf}}) {
    EXPECT_FALSE((*schedule)->Restore(bad).ok())
        << bad[0] << " " << bad[1] << " " << bad[2] << " " << bad[3];
  }
  EXPECT_EQ((*schedule)->Factor(0, 1, 1), 1.0) << "a refused state was taken";
  for (double best : {nan, inf, -inf, 0.5}) {
    EXPECT_TRUE((*schedule)->Restore({0.05, best, 1, 2}).ok()) << best;
    EXPECT_DOUBLE_EQ((*schedule)->Factor(0, 1, 1), 0.5);
  }
}

TEST(PlateauScheduleTest, RejectsOutOfRangeOptions) {
  EXPECT_EQ(MakePlateau("factor: 1").status().message(),
            "options: factor: 1; must be in (0, 1) (default 0.1)");
  EXPECT_EQ(MakePlateau("patience: -1").status().message(),
            "options: patience: -1; must be >= 0 (default 10)");
  EXPECT_EQ(MakePlateau("metric: \"train_loss\"").status().message(),
            "options: metric: \"train_loss\"; must be a validation figure (\"val_loss\", "
            "\"val_acc\", ...)");
}

}  // namespace
}  // namespace pipeline
