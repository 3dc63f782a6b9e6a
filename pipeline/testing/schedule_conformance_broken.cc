// Schedules that each break one rule of the schedule conformance suite,
// instantiated with it; part of conformance_broken_plugins, whose output
// conformance_self_test checks.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "google/protobuf/empty.pb.h"
#include "pipeline/interfaces/schedule.h"
#include "pipeline/testing/schedule_conformance.h"

namespace pipeline {
namespace testing {
namespace {

using google::protobuf::Empty;

// A linear decay that overshoots: negative over the last third of a run.
class NegativeFactor : public LearningRateSchedule {
 public:
  double Factor(int64_t step, int64_t total_steps, int64_t) const override {
    return 1.0 - 1.5 * static_cast<double>(step) / static_cast<double>(total_steps);
  }
};

// Declared non-increasing, but restarts its cosine every epoch.
class RestartsEveryEpoch : public LearningRateSchedule {
 public:
  double Factor(int64_t step, int64_t, int64_t steps_per_epoch) const override {
    const double progress =
        static_cast<double>(step % steps_per_epoch) / static_cast<double>(steps_per_epoch);
    return 0.5 * (1.0 + std::cos(M_PI * progress));
  }
};

// Decays with the furthest step it was asked for, not the step asked for.
class RemembersTheFurthestStep : public LearningRateSchedule {
 public:
  double Factor(int64_t step, int64_t, int64_t) const override {
    furthest_ = std::max(furthest_, step);
    return 1.0 / (1.0 + static_cast<double>(furthest_));
  }

 private:
  mutable int64_t furthest_ = 0;
};

// Halves the factor at every validation, and keeps it as its state.
class HalvesAtEveryValidation : public LearningRateSchedule {
 public:
  double Factor(int64_t, int64_t, int64_t) const override { return factor_; }
  std::string MonitoredFigure() const override { return "val_loss"; }
  void Observe(double, bool) override { factor_ /= 2; }
  std::vector<double> State() const override { return {factor_}; }
  absl::Status Restore(const std::vector<double>& state) override {
    if (state.size() != 1) return absl::InvalidArgumentError("one value expected");
    factor_ = state[0];
    return absl::OkStatus();
  }

 protected:
  double factor_ = 1.0;
};

// Checks the state it is given, then keeps its own.
class RestoreIgnoresTheState : public HalvesAtEveryValidation {
 public:
  absl::Status Restore(const std::vector<double>& state) override {
    if (state.size() != 1) return absl::InvalidArgumentError("one value expected");
    if (!std::isfinite(state[0]) || state[0] < 0) return absl::InvalidArgumentError("bad value");
    return absl::OkStatus();
  }
};

// Monitors nothing, yet keeps a scale in its state that Restore changes.
class StatefulWithoutAFigure : public LearningRateSchedule {
 public:
  double Factor(int64_t, int64_t, int64_t) const override { return scale_; }
  std::vector<double> State() const override { return {scale_}; }
  absl::Status Restore(const std::vector<double>& state) override {
    if (state.size() != 1) return absl::InvalidArgumentError("one value expected");
    if (!std::isfinite(state[0]) || state[0] < 0) return absl::InvalidArgumentError("bad value");
    scale_ = state[0];
    return absl::OkStatus();
  }

 private:
  double scale_ = 1.0;
};

template <typename T>
void RegisterSchedule(const char* name) {
  static const PluginRegistration<LearningRateSchedule, Empty> registration(
      name, "broken on purpose",
      [](const Empty&,
         const ScheduleContext&) -> absl::StatusOr<std::unique_ptr<LearningRateSchedule>> {
        return std::make_unique<T>();
      });
}

const bool kRegistered = [] {
  RegisterSchedule<NegativeFactor>("broken_schedule_negative");
  RegisterSchedule<RestartsEveryEpoch>("broken_schedule_rises");
  RegisterSchedule<RemembersTheFurthestStep>("broken_schedule_call_order");
  // Takes a NaN or negative factor from a damaged checkpoint.
  RegisterSchedule<HalvesAtEveryValidation>("broken_schedule_takes_any_state");
  RegisterSchedule<RestoreIgnoresTheState>("broken_schedule_restore_ignored");
  RegisterSchedule<StatefulWithoutAFigure>("broken_schedule_hidden_state");
  return true;
}();

#define BROKEN_SCHEDULE(name, shape)                                                       \
  INSTANTIATE_TEST_SUITE_P(name, ScheduleConformanceTest,                                  \
                           ::testing::Values(ScheduleConformanceParams{#name, "", shape}), \
                           ScheduleConformanceTestName)

BROKEN_SCHEDULE(broken_schedule_negative, "non_increasing");
BROKEN_SCHEDULE(broken_schedule_rises, "non_increasing");
BROKEN_SCHEDULE(broken_schedule_call_order, "");
BROKEN_SCHEDULE(broken_schedule_takes_any_state, "non_increasing");
BROKEN_SCHEDULE(broken_schedule_restore_ignored, "non_increasing");
BROKEN_SCHEDULE(broken_schedule_hidden_state, "non_increasing");

}  // namespace
}  // namespace testing
}  // namespace pipeline
