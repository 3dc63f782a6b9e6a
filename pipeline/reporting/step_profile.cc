#include "pipeline/reporting/step_profile.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace pipeline {

bool StepProfile::Record(double data_wait, double forward_backward, double optimizer_step,
                         int64_t images, double communication_wait) {
  if (!active()) return false;
  data_wait_ += data_wait;
  communication_wait_ += communication_wait;
  forward_backward_ += forward_backward - communication_wait;
  optimizer_step_ += optimizer_step;
  images_ += images;
  ++recorded_;
  return recorded_ == steps_;
}

std::string StepProfile::Report(int rank) const {
  const double total =
      std::max(data_wait_ + forward_backward_ + communication_wait_ + optimizer_step_, 1e-12);
  const double steps = static_cast<double>(std::max<int64_t>(recorded_, 1));
  auto phase = [&](const char* name, double seconds) {
    return absl::StrFormat("%s %.1f ms/step (%.1f%%)", name, 1e3 * seconds / steps,
                           100.0 * seconds / total);
  };
  const std::string communication =
      communication_wait_ > 0 ? phase("communication wait", communication_wait_) + ", " : "";
  return absl::StrFormat("profile rank %d, steps 1-%d (%d images each): %s, %s, %s%s; %.0f images/s",
                         rank, recorded_, images_ / std::max<int64_t>(recorded_, 1),
                         phase("data wait", data_wait_),
                         phase("forward+backward", forward_backward_), communication,
                         phase("optimizer step", optimizer_step_), images_ / total);
}

}  // namespace pipeline
