// schedule `polynomial`: the learning rate decays to 0 along
// (1 - step / total_iters)^power, stepped every batch, as PolynomialLR.
//
//   learning_rate {
//     schedule {
//       name: "polynomial"
//       options { [type.googleapis.com/pipeline.PolynomialScheduleOptions] { power: 0.9 } }
//     }
//   }

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>

#include "absl/strings/str_cat.h"
#include "pipeline/interfaces/schedule.h"
#include "plugins/schedules/polynomial/polynomial.pb.h"

namespace pipeline {
namespace {

class PolynomialSchedule : public LearningRateSchedule {
 public:
  explicit PolynomialSchedule(const PolynomialScheduleOptions& options) : options_(options) {}

  // PolynomialLR's closed form; its chained form (each step's learning rate
  // from the previous one) differs only by rounding.
  double Factor(int64_t step, int64_t total_steps, int64_t) const override {
    const int64_t total_iters = options_.total_iters() > 0 ? options_.total_iters() : total_steps;
    if (total_iters <= 0) return 1.0;
    const double progress =
        static_cast<double>(std::min(total_iters, step)) / static_cast<double>(total_iters);
    return std::pow(1.0 - progress, options_.power());
  }

 private:
  PolynomialScheduleOptions options_;
};

absl::Status ValidatePolynomial(const PolynomialScheduleOptions& options) {
  if (!(options.power() > 0)) {
    return absl::InvalidArgumentError(absl::StrCat("power: ", options.power(), "; must be > 0"));
  }
  if (options.total_iters() < 0) {
    return absl::InvalidArgumentError(absl::StrCat("total_iters: ", options.total_iters(),
                                                   "; must be >= 0 (0 = all steps of the run)"));
  }
  return absl::OkStatus();
}

PIPELINE_REGISTER_PLUGIN(LearningRateSchedule, "polynomial", PolynomialScheduleOptions,
                         "Polynomial decay to 0 over the run or total_iters steps (PolynomialLR)",
                         [](const PolynomialScheduleOptions& options, const ScheduleContext&)
                             -> absl::StatusOr<std::unique_ptr<LearningRateSchedule>> {
                           return std::make_unique<PolynomialSchedule>(options);
                         },
                         ValidatePolynomial);

}  // namespace
}  // namespace pipeline
