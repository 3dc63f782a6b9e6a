#include "plugins/schedules/plateau/plateau.h"

#include <cmath>
#include <limits>
#include <memory>

#include "absl/strings/str_cat.h"

namespace pipeline {
namespace {

// The largest count Restore takes: far beyond any run's validations, and
// exactly representable in both a double and an int64_t.
constexpr double kMaxCount = 1e15;

}  // namespace

PlateauSchedule::PlateauSchedule(const PlateauScheduleOptions& options, double base_lr)
    : options_(options),
      base_lr_(base_lr),
      learning_rate_(base_lr),
      best_(std::numeric_limits<double>::quiet_NaN()) {}

// ReduceLROnPlateau.is_better; the first value always is (its best starts
// at +-inf).
bool PlateauSchedule::Better(double value, bool maximise) const {
  if (std::isnan(best_)) return true;
  const double threshold = options_.threshold();
  if (options_.threshold_mode() == PlateauScheduleOptions::REL) {
    return maximise ? value > best_ * (threshold + 1.0) : value < best_ * (1.0 - threshold);
  }
  return maximise ? value > best_ + threshold : value < best_ - threshold;
}

void PlateauSchedule::Observe(double value, bool higher_is_better) {
  const bool maximise = options_.mode() == PlateauScheduleOptions::AUTO
                            ? higher_is_better
                            : options_.mode() == PlateauScheduleOptions::MAX;
  if (Better(value, maximise)) {
    best_ = value;
    bad_validations_ = 0;
  } else {
    ++bad_validations_;
  }
  if (cooldown_left_ > 0) {
    --cooldown_left_;
    bad_validations_ = 0;
  }
  if (bad_validations_ > options_.patience()) {
    const double reduced = std::max(learning_rate_ * options_.factor(), options_.min_lr());
    if (learning_rate_ - reduced > options_.eps()) learning_rate_ = reduced;
    cooldown_left_ = options_.cooldown();
    bad_validations_ = 0;
  }
}

std::vector<double> PlateauSchedule::State() const {
  return {learning_rate_, best_, static_cast<double>(bad_validations_),
          static_cast<double>(cooldown_left_)};
}

absl::Status PlateauSchedule::Restore(const std::vector<double>& state) {
  if (state.size() != 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("plateau keeps 4 values, and the checkpoint holds ", state.size()));
  }
  // A checkpoint written by this schedule holds a finite learning rate and
  // whole, non-negative counts; anything else would turn into a NaN learning
  // rate or an out-of-range conversion. The best value may be NaN (no value
  // seen yet) or infinite (ReduceLROnPlateau's own start).
  if (!(std::isfinite(state[0]) && state[0] >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("plateau's learning rate ", state[0], "; must be finite and >= 0"));
  }
  for (int i : {2, 3}) {
    if (!(state[i] >= 0 && state[i] <= kMaxCount && state[i] == std::floor(state[i]))) {
      return absl::InvalidArgumentError(
          absl::StrCat("plateau's ", i == 2 ? "bad validations" : "cooldown left", " ", state[i],
                       "; must be a whole number >= 0"));
    }
  }
  learning_rate_ = state[0];
  best_ = state[1];
  bad_validations_ = static_cast<int64_t>(state[2]);
  cooldown_left_ = static_cast<int64_t>(state[3]);
  return absl::OkStatus();
}

namespace {

absl::Status ValidatePlateau(const PlateauScheduleOptions& options) {
  auto fail = [](const char* field, double value, const char* range) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", value, "; must be ", range));
  };
  if (!(options.factor() > 0 && options.factor() < 1)) {
    return fail("factor", options.factor(), "in (0, 1) (default 0.1)");
  }
  if (options.patience() < 0) return fail("patience", options.patience(), ">= 0 (default 10)");
  if (options.threshold() < 0) return fail("threshold", options.threshold(), ">= 0");
  if (options.cooldown() < 0) return fail("cooldown", options.cooldown(), ">= 0");
  if (options.min_lr() < 0) return fail("min_lr", options.min_lr(), ">= 0");
  if (options.eps() < 0) return fail("eps", options.eps(), ">= 0");
  if (options.metric().rfind("val_", 0) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "metric: \"", options.metric(), "\"; must be a validation figure (\"val_loss\", "
        "\"val_acc\", ...)"));
  }
  return absl::OkStatus();
}

PIPELINE_REGISTER_PLUGIN(LearningRateSchedule, "plateau", PlateauScheduleOptions,
                         "Reduce the learning rate when a validation figure stops improving "
                         "(ReduceLROnPlateau)",
                         [](const PlateauScheduleOptions& options, const ScheduleContext& context)
                             -> absl::StatusOr<std::unique_ptr<LearningRateSchedule>> {
                           return std::make_unique<PlateauSchedule>(options, context.base_lr);
                         },
                         ValidatePlateau);

}  // namespace
}  // namespace pipeline
