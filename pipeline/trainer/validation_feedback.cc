#include "pipeline/trainer/validation_feedback.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "pipeline/util/status_macros.h"

namespace pipeline {
namespace {

constexpr char kEarlyStoppingState[] = "early_stopping";
constexpr char kScheduleState[] = "schedule";

}  // namespace

EarlyStoppingHook::EarlyStoppingHook(const PipelineConfig& config)
    : metric_(config.trainer().early_stopping().has_metric()
                  ? config.trainer().early_stopping().metric()
                  : config.checkpoint().best_metric()),
      patience_(config.trainer().early_stopping().patience()),
      min_delta_(config.trainer().early_stopping().min_delta()),
      best_(std::numeric_limits<double>::quiet_NaN()) {}

absl::Status EarlyStoppingHook::OnRunStart(TrainContext& context) {
  auto saved = context.saved_state.find(kEarlyStoppingState);
  if (saved != context.saved_state.end() && saved->second.size() == 2) {
    best_ = saved->second[0];
    validations_without_improvement_ = static_cast<int64_t>(saved->second[1]);
  }
  return absl::OkStatus();
}

absl::Status EarlyStoppingHook::OnEpochEnd(TrainContext& context, EpochReport& epoch) {
  const Figure* figure = epoch.Find(metric_);
  if (!epoch.validated || figure == nullptr) return absl::OkStatus();
  if (BeatsBest(*figure, best_, min_delta_)) {
    best_ = figure->value;
    validations_without_improvement_ = 0;
  } else {
    ++validations_without_improvement_;
  }
  context.saved_state[kEarlyStoppingState] = {best_,
                                              static_cast<double>(validations_without_improvement_)};
  if (validations_without_improvement_ < patience_) return absl::OkStatus();
  context.stop_after_epoch = true;
  context.progress.Line(absl::StrFormat(
      "early stopping: %s has not improved on its best, %.6g, by more than %g in %d "
      "validations in a row; the run ends after epoch %d",
      metric_, best_, min_delta_, validations_without_improvement_, epoch.epoch));
  return absl::OkStatus();
}

absl::Status ScheduleFeedbackHook::OnRunStart(TrainContext& context) {
  auto saved = context.saved_state.find(kScheduleState);
  if (saved == context.saved_state.end()) return absl::OkStatus();
  absl::Status restored = schedule_.Restore(saved->second);
  if (!restored.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the checkpoint resumed from: its learning-rate schedule state: ", restored.message()));
  }
  return absl::OkStatus();
}

absl::Status ScheduleFeedbackHook::OnEpochEnd(TrainContext& context, EpochReport& epoch) {
  const Figure* figure = epoch.Find(schedule_.MonitoredFigure());
  if (!epoch.validated || figure == nullptr) return absl::OkStatus();
  schedule_.Observe(figure->value, figure->higher_is_better);
  context.saved_state[kScheduleState] = schedule_.State();
  return absl::OkStatus();
}

}  // namespace pipeline
