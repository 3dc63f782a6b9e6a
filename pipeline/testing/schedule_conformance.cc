#include "pipeline/testing/schedule_conformance.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "pipeline/interfaces/schedule.h"
#include "pipeline/testing/conformance_config.h"

namespace pipeline {
namespace testing {

void PrintTo(const ScheduleConformanceParams& params, std::ostream* out) {
  *out << "schedule \"" << params.plugin << "\" with options {" << params.options << "}, shape \""
       << params.shape << "\"";
}

std::string ScheduleConformanceTestName(
    const ::testing::TestParamInfo<ScheduleConformanceParams>& info) {
  return ConformanceInstanceName(info.index);
}

namespace {

constexpr double kBaseLr = 0.1;
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

struct RunLength {
  int64_t total_steps;
  int64_t steps_per_epoch;
};

// One step; one step an epoch; a run shorter than its epoch; epochs that do
// not divide the run; long runs.
constexpr RunLength kRuns[] = {{1, 1},   {2, 1},  {1, 4},   {5, 10},   {7, 3},
                               {37, 10}, {50, 1}, {100, 7}, {1000, 64}};

std::string Describe(const RunLength& run) {
  return absl::StrCat("a run of ", run.total_steps, " steps, ", run.steps_per_epoch, " per epoch");
}

int64_t Epochs(const RunLength& run) {
  return (run.total_steps + run.steps_per_epoch - 1) / run.steps_per_epoch;
}

// Every bit of a double: factors that print alike may still differ.
std::string Exact(double value) { return absl::StrFormat("%.17g", value); }

std::string Values(const std::vector<double>& values) {
  return absl::StrCat(
      "{", absl::StrJoin(values, ", ", [](std::string* out, double v) { out->append(Exact(v)); }),
      "}");
}

bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof(double)) == 0; }

// "" when `got` holds bitwise the values of `want`, else the first
// difference.
std::string Difference(const std::vector<double>& want, const std::vector<double>& got) {
  if (want.size() != got.size()) {
    return absl::StrCat(got.size(), " values instead of ", want.size());
  }
  for (size_t i = 0; i < want.size(); ++i) {
    if (!SameBits(want[i], got[i])) {
      return absl::StrCat("at ", i, ": ", Exact(got[i]), " instead of ", Exact(want[i]));
    }
  }
  return "";
}

// The validation figure reported after `epoch`: a step better every fourth
// epoch and a little worse in between, so a schedule that follows it both
// keeps and cuts its rate. A loss, or its complement as an accuracy.
void ObserveEpoch(LearningRateSchedule& schedule, int64_t epoch, bool higher_is_better) {
  const double loss =
      1.0 / (1.0 + static_cast<double>(epoch / 4)) + 0.02 * static_cast<double>(epoch % 4);
  schedule.Observe(higher_is_better ? 1.0 - loss : loss, higher_is_better);
}

// Epochs [first, end) of `run` as the trainer steps them: the factor of every
// step, then, for a schedule that monitors a figure, Observe at the epoch's
// end. Returns the factors in step order.
std::vector<double> Walk(LearningRateSchedule& schedule, const RunLength& run,
                         bool higher_is_better, int64_t first, int64_t end) {
  const bool monitors = !schedule.MonitoredFigure().empty();
  std::vector<double> factors;
  for (int64_t epoch = first; epoch < end; ++epoch) {
    const int64_t stop = std::min((epoch + 1) * run.steps_per_epoch, run.total_steps);
    for (int64_t step = epoch * run.steps_per_epoch; step < stop; ++step) {
      factors.push_back(schedule.Factor(step, run.total_steps, run.steps_per_epoch));
    }
    if (monitors) ObserveEpoch(schedule, epoch, higher_is_better);
  }
  return factors;
}

// The whole run, and the factor after its last Observe.
std::vector<double> WalkAll(LearningRateSchedule& schedule, const RunLength& run,
                            bool higher_is_better) {
  std::vector<double> factors = Walk(schedule, run, higher_is_better, 0, Epochs(run));
  factors.push_back(schedule.Factor(run.total_steps - 1, run.total_steps, run.steps_per_epoch));
  return factors;
}

absl::StatusOr<std::unique_ptr<LearningRateSchedule>> Create(
    const ScheduleConformanceParams& params) {
  absl::StatusOr<PluginConfig> config =
      ConformanceConfig<LearningRateSchedule>(params.plugin, params.options);
  if (!config.ok()) return config.status();
  return Registry<LearningRateSchedule>::Global().Create(*config, ScheduleContext{kBaseLr});
}

#define FRESH_OR_RETURN(schedule)                                                                 \
  absl::StatusOr<std::unique_ptr<LearningRateSchedule>> schedule##_created_ = Create(GetParam()); \
  ASSERT_TRUE(schedule##_created_.ok()) << schedule##_created_.status();                          \
  LearningRateSchedule& schedule = **schedule##_created_

TEST_P(ScheduleConformanceTest, FactorsAreFiniteAndNotNegative) {
  for (const RunLength& run : kRuns) {
    for (bool higher_is_better : {false, true}) {
      FRESH_OR_RETURN(schedule);
      const std::vector<double> factors = WalkAll(schedule, run, higher_is_better);
      for (size_t step = 0; step < factors.size(); ++step) {
        ASSERT_TRUE(std::isfinite(factors[step]) && factors[step] >= 0)
            << Describe(run) << ": the factor at step "
            << std::min<int64_t>(step, run.total_steps - 1)
            << (step == factors.size() - 1 ? " (after the last Observe)" : "") << " is "
            << Exact(factors[step]);
      }
    }
  }
}

// The factors of every step of `run`, asked for in `order`, by step.
std::vector<double> FactorsAskedInOrder(const LearningRateSchedule& schedule, const RunLength& run,
                                        const std::vector<int64_t>& order) {
  std::vector<double> factors(run.total_steps);
  for (int64_t step : order) {
    factors[step] = schedule.Factor(step, run.total_steps, run.steps_per_epoch);
  }
  return factors;
}

// Forward, backward, and the odd steps before the even ones.
std::vector<std::pair<std::string, std::vector<int64_t>>> Orders(const RunLength& run) {
  std::vector<int64_t> forward, backward, odd_first;
  for (int64_t step = 0; step < run.total_steps; ++step) {
    forward.push_back(step);
    backward.push_back(run.total_steps - 1 - step);
  }
  for (int64_t parity : {1, 0}) {
    for (int64_t step = parity; step < run.total_steps; step += 2) odd_first.push_back(step);
  }
  return {{"forward", forward}, {"backward", backward}, {"odd steps first", odd_first}};
}

TEST_P(ScheduleConformanceTest, FactorDependsOnlyOnItsArgumentsAndTheState) {
  for (const RunLength& run : kRuns) {
    FRESH_OR_RETURN(schedule);
    FRESH_OR_RETURN(second);
    const std::vector<std::pair<std::string, std::vector<int64_t>>> orders = Orders(run);
    // Before any Observe, and again halfway through the run's validations.
    for (int64_t observed : {int64_t{0}, Epochs(run) / 2}) {
      Walk(schedule, run, false, 0, observed);
      Walk(second, run, false, 0, observed);
      const std::vector<double> reference = FactorsAskedInOrder(schedule, run, orders[0].second);
      for (const auto& [name, order] : orders) {
        ASSERT_EQ(Difference(reference, FactorsAskedInOrder(schedule, run, order)), "")
            << Describe(run) << ", " << observed
            << " epochs observed: the factors asked for again, in " << name
            << " order, differ, by step";
      }
      ASSERT_EQ(Difference(reference, FactorsAskedInOrder(second, run, orders[0].second)), "")
          << Describe(run) << ", " << observed
          << " epochs observed: a second instance gives other factors, by step";
    }
  }
}

TEST_P(ScheduleConformanceTest, FactorsFollowTheDeclaredShape) {
  const std::string& shape = GetParam().shape;
  if (shape.empty()) GTEST_SKIP() << "the instance declares no shape";
  ASSERT_TRUE(shape == "non_increasing" || shape == "rises_then_falls")
      << "unknown shape \"" << shape << "\"; \"non_increasing\", \"rises_then_falls\" or \"\"";
  for (const RunLength& run : kRuns) {
    for (bool higher_is_better : {false, true}) {
      FRESH_OR_RETURN(schedule);
      const std::vector<double> factors = WalkAll(schedule, run, higher_is_better);
      bool fell = false;
      for (size_t i = 1; i < factors.size(); ++i) {
        if (factors[i] < factors[i - 1]) fell = true;
        ASSERT_FALSE(factors[i] > factors[i - 1] && (shape == "non_increasing" || fell))
            << Describe(run) << ": the factor rises from " << Exact(factors[i - 1]) << " to "
            << Exact(factors[i]) << " at step " << std::min<int64_t>(i, run.total_steps - 1)
            << (i == factors.size() - 1 ? " (after the last Observe)" : "")
            << (fell ? ", after it fell" : "") << "; the instance declares " << shape;
      }
    }
  }
}

TEST_P(ScheduleConformanceTest, AScheduleThatMonitorsNothingKeepsNoState) {
  FRESH_OR_RETURN(probe);
  if (!probe.MonitoredFigure().empty()) {
    GTEST_SKIP() << "monitors \"" << probe.MonitoredFigure() << "\"";
  }
  EXPECT_TRUE(probe.State().empty()) << "a fresh instance's state: " << Values(probe.State());
  const std::vector<std::vector<double>> states = {{}, {0.5}, {kNan, 1, 2}, {-1, kInf}};
  for (const RunLength& run : kRuns) {
    FRESH_OR_RETURN(reference);
    const std::vector<double> want = WalkAll(reference, run, false);
    EXPECT_TRUE(reference.State().empty())
        << Describe(run) << ": the state at its end: " << Values(reference.State());
    for (const std::vector<double>& state : states) {
      FRESH_OR_RETURN(restored);
      restored.Restore(state).IgnoreError();  // either answer will do; a crash will not
      ASSERT_EQ(Difference(want, WalkAll(restored, run, false)), "")
          << Describe(run) << ": Restore(" << Values(state) << ") changed the factors, by step";
    }
  }
}

TEST_P(ScheduleConformanceTest, ARestoredStateContinuesAsTheUninterruptedRun) {
  for (const RunLength& run : kRuns) {
    for (bool higher_is_better : {false, true}) {
      const int64_t epochs = Epochs(run);
      // A checkpoint at every epoch's end, and one before the first step.
      for (int64_t cut = 0; cut <= epochs; ++cut) {
        FRESH_OR_RETURN(through);
        FRESH_OR_RETURN(resumed);
        Walk(through, run, higher_is_better, 0, cut);
        const std::vector<double> saved = through.State();
        const std::string where = absl::StrCat(Describe(run), ", resumed after epoch ", cut);
        const absl::Status restored = resumed.Restore(saved);
        ASSERT_TRUE(restored.ok())
            << where << ": Restore of its own State() " << Values(saved) << " failed: " << restored;
        ASSERT_EQ(Difference(saved, resumed.State()), "")
            << where << ": State() right after Restore(" << Values(saved) << ")";
        const std::vector<double> want = Walk(through, run, higher_is_better, cut, epochs);
        const std::vector<double> got = Walk(resumed, run, higher_is_better, cut, epochs);
        ASSERT_EQ(Difference(want, got), "")
            << where << ": the factors from there on differ, by step after the cut";
        ASSERT_EQ(Difference(through.State(), resumed.State()), "")
            << where << ": the state at the run's end differs";
      }
    }
  }
}

TEST_P(ScheduleConformanceTest, AMalformedStateIsAnErrorOrHarmless) {
  // Halfway through a run with a validation every step, its figures having
  // moved every value of the state from where it started.
  const RunLength run = {50, 1};
  FRESH_OR_RETURN(through);
  Walk(through, run, false, 0, 25);
  const std::vector<double> saved = through.State();
  if (saved.empty()) GTEST_SKIP() << "keeps no state";

  std::vector<std::vector<double>> wrong_lengths = {{}, saved, saved};
  wrong_lengths[1].pop_back();
  wrong_lengths[2].push_back(0);
  for (const std::vector<double>& state : wrong_lengths) {
    FRESH_OR_RETURN(schedule);
    const absl::Status status = schedule.Restore(state);
    EXPECT_FALSE(status.ok()) << "Restore took " << Values(state) << ", " << state.size()
                              << " values; its State() holds " << saved.size();
    EXPECT_FALSE(status.message().empty()) << "refused without saying why";
  }

  for (size_t i = 0; i < saved.size(); ++i) {
    for (double bad : {kNan, kInf, -kInf}) {
      std::vector<double> damaged = saved;
      damaged[i] = bad;
      FRESH_OR_RETURN(schedule);
      if (!schedule.Restore(damaged).ok()) continue;
      std::vector<double> factors = Walk(schedule, run, false, 25, Epochs(run));
      factors.push_back(schedule.Factor(run.total_steps - 1, run.total_steps, 1));
      for (size_t k = 0; k < factors.size(); ++k) {
        ASSERT_TRUE(std::isfinite(factors[k]) && factors[k] >= 0)
            << "Restore took " << Values(damaged) << " (value " << i << " replaced by " << bad
            << "), and the factor " << k << " steps on is " << Exact(factors[k]);
      }
    }
  }
}

#undef FRESH_OR_RETURN

}  // namespace

// Plugins instantiate the suite from their own BUILD (conformance.bzl).
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ScheduleConformanceTest);

}  // namespace testing
}  // namespace pipeline
