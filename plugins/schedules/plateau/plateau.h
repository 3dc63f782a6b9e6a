#ifndef PLUGINS_SCHEDULES_PLATEAU_PLATEAU_H_
#define PLUGINS_SCHEDULES_PLATEAU_PLATEAU_H_

// schedule `plateau`: ReduceLROnPlateau. The factor starts at 1 and falls
// only when Observe says the monitored figure stopped improving.
//
//   learning_rate {
//     schedule {
//       name: "plateau"
//       options { [type.googleapis.com/pipeline.PlateauScheduleOptions] {
//         metric: "val_loss" patience: 2 factor: 0.5 } }
//     }
//   }

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "pipeline/interfaces/schedule.h"
#include "plugins/schedules/plateau/plateau.pb.h"

namespace pipeline {

class PlateauSchedule : public LearningRateSchedule {
 public:
  PlateauSchedule(const PlateauScheduleOptions& options, double base_lr);

  double Factor(int64_t, int64_t, int64_t) const override { return learning_rate_ / base_lr_; }
  std::string MonitoredFigure() const override { return options_.metric(); }
  // ReduceLROnPlateau.step(value).
  void Observe(double value, bool higher_is_better) override;
  // {learning rate, best, bad validations, cooldown left}.
  std::vector<double> State() const override;
  absl::Status Restore(const std::vector<double>& state) override;

 private:
  bool Better(double value, bool maximise) const;

  PlateauScheduleOptions options_;
  double base_lr_;
  double learning_rate_;
  double best_;  // NaN before the first value
  int64_t bad_validations_ = 0;
  int64_t cooldown_left_ = 0;
};

}  // namespace pipeline

#endif  // PLUGINS_SCHEDULES_PLATEAU_PLATEAU_H_
