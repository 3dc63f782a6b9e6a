#ifndef PIPELINE_TESTING_OPTIMIZER_CONFORMANCE_H_
#define PIPELINE_TESTING_OPTIMIZER_CONFORMANCE_H_

// What every optimizer plugin must do, on a few small parameter tensors
// (a 4x3 "weight", a "bias" and a "norm" scale; the core hands the plugin
// its parameters in groups, OptimizerContext::groups, and the trainer
// scales each param group's learning rate):
//
//  - a step where every gradient is zero, from a fresh state, leaves every
//    parameter finite and a parameter that is all zeros at zero (neither a
//    gradient nor any weight decay moves it);
//  - the state round trip is bitwise: k steps, the state saved as the
//    checkpoint saves it (Optimizer::save into a nested archive, written to
//    bytes) and loaded into a fresh optimizer over copies of the
//    parameters, then n more steps, equal an uninterrupted k + n steps (and
//    so does the optimizer that was saved, saving changes nothing);
//  - each group the context gives (the second one with lr_scale 0.5, as
//    for bias and norm parameters) becomes a param group that steps with
//    its own options, exactly as if it were an optimizer of its own, and
//    keeps them through steps and through a save and restore;
//  - a group given a weight_decay of its own steps otherwise than with the
//    optimizer's, and the other groups step as they did;
//  - zero_grad leaves the gradients as torch's own optimizer leaves them
//    (LibTorch 1.13: defined and zero), which needs the param groups to
//    hold the caller's tensors themselves;
//  - a parameter without a gradient (undefined, as for an unused layer) is
//    left alone, bitwise, and the others step as if it were not there;
//  - a learning rate set through the param group's options (how the trainer
//    applies its schedule) is the one the next step uses: 0 moves nothing,
//    bitwise, and half the rate moves every parameter half as far.
//
// A plugin gets the suite with one line in its BUILD:
//
//   load("//pipeline/testing:conformance.bzl", "optimizer_conformance_test")
//   optimizer_conformance_test(
//       name = "conformance_test",
//       plugin = ":sgd",
//       options = "lr: 0.1 momentum: 0.9 nesterov: true",  # or a list of them
//   )

#include <ostream>
#include <string>

#include "gtest/gtest.h"

namespace pipeline {
namespace testing {

struct OptimizerConformanceParams {
  std::string plugin;   // its registered name
  std::string options;  // the body of its options message, text format
};

void PrintTo(const OptimizerConformanceParams& params, std::ostream* out);

class OptimizerConformanceTest : public ::testing::TestWithParam<OptimizerConformanceParams> {};

std::string OptimizerConformanceTestName(
    const ::testing::TestParamInfo<OptimizerConformanceParams>& info);

}  // namespace testing
}  // namespace pipeline

#endif  // PIPELINE_TESTING_OPTIMIZER_CONFORMANCE_H_
