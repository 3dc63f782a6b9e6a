#ifndef PIPELINE_REPORTING_STEP_PROFILE_H_
#define PIPELINE_REPORTING_STEP_PROFILE_H_

// Where the time of the first training steps goes (train --profile_steps=N):
// waiting for the loader, forward+backward, waiting for the gradient
// communication that backward did not hide, and the optimizer step. Each rank reports its own, since
// one slow rank's data wait shows up as every other rank's communication.

#include <cstdint>
#include <string>

namespace pipeline {

class StepProfile {
 public:
  // Profiles steps 1..steps; 0 profiles nothing.
  explicit StepProfile(int64_t steps) : steps_(steps) {}

  // Whether the step about to run is one of the profiled ones.
  bool active() const { return recorded_ < steps_; }

  // Adds one step's phases, in seconds; returns true on the last profiled
  // step, when Report is complete. `communication_wait` is the part of the
  // forward+backward time spent blocked on gradient communication (ddp),
  // which Report shows as its own phase when there was any.
  bool Record(double data_wait, double forward_backward, double optimizer_step,
              int64_t images, double communication_wait = 0);

  // e.g. "profile rank 0, steps 1-20 (64 images each): data wait 0.4 ms/step
  // (2.1%), forward+backward 15.2 ms (80.5%), optimizer step 3.3 ms (17.4%);
  // 3390 images/s"
  std::string Report(int rank) const;

 private:
  int64_t steps_;
  int64_t recorded_ = 0;
  int64_t images_ = 0;
  double data_wait_ = 0, forward_backward_ = 0, optimizer_step_ = 0, communication_wait_ = 0;
};

}  // namespace pipeline

#endif  // PIPELINE_REPORTING_STEP_PROFILE_H_
