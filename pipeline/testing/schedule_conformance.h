#ifndef PIPELINE_TESTING_SCHEDULE_CONFORMANCE_H_
#define PIPELINE_TESTING_SCHEDULE_CONFORMANCE_H_

// What every learning-rate schedule plugin must do, over runs of several
// lengths (total_steps from 1 to 1000, steps_per_epoch from 1 to more than
// the run), stepped as the trainer steps it: Factor at every step, and, for a
// schedule that monitors a figure, Observe after every epoch:
//
//  - every factor is finite and >= 0;
//  - Factor depends only on its arguments and the schedule's state: asked
//    again, in another order, or of a second instance, it gives bitwise the
//    same factor;
//  - the factors follow the shape the instance declares (`shape`): never
//    rising ("non_increasing", across Observe calls too), or never rising
//    again once they fell ("rises_then_falls"); nothing is checked for "";
//  - a schedule that monitors no figure keeps no state: State() is empty,
//    and Restore, whatever it is given, changes no factor;
//  - State() restored into a fresh instance at any epoch's end (a
//    checkpoint) continues bitwise as the uninterrupted run: the same
//    factors and Observe reactions, and the same State() at the end;
//  - a state of the wrong length is an error; one holding NaN or infinity
//    in place of a value is an error too, or else harmless: the factors stay
//    finite and >= 0.
//
// Warm-up is composed with the schedule by the trainer (it multiplies the
// factor by its own ramp, in trainer.cc), which links LibTorch and offers no
// seam to test it from here, so the hand-over is not checked by this suite.
//
// The schedules are built with ScheduleContext{base_lr = 0.1}.
//
//   load("//pipeline/testing:conformance.bzl", "schedule_conformance_test")
//   schedule_conformance_test(
//       name = "conformance_test",
//       plugin = ":cosine",
//       options = ["", "min_factor: 0.1"],
//       shape = "non_increasing",
//   )

#include <ostream>
#include <string>

#include "gtest/gtest.h"

namespace pipeline {
namespace testing {

struct ScheduleConformanceParams {
  std::string plugin;   // its registered name
  std::string options;  // the body of its options message, text format
  // What the plugin promises of the factors' course through a run:
  // "non_increasing", "rises_then_falls" or "" (nothing).
  std::string shape;
};

void PrintTo(const ScheduleConformanceParams& params, std::ostream* out);

class ScheduleConformanceTest : public ::testing::TestWithParam<ScheduleConformanceParams> {};

std::string ScheduleConformanceTestName(
    const ::testing::TestParamInfo<ScheduleConformanceParams>& info);

}  // namespace testing
}  // namespace pipeline

#endif  // PIPELINE_TESTING_SCHEDULE_CONFORMANCE_H_
