#ifndef PIPELINE_TESTING_LOSS_CONFORMANCE_H_
#define PIPELINE_TESTING_LOSS_CONFORMANCE_H_

// What every loss plugin must do, on batches of 6 rows of 5 classes, with
// both kinds of target the interface (pipeline/interfaces/loss.h) passes:
// class indices and class probabilities:
//
//  - Mean and Sum give a finite scalar, also for logits in the hundreds (a
//    run close to diverging), which a softmax taken without subtracting the
//    row's maximum overflows;
//  - Mean is the mean of the per-sample losses (each computed on a batch of
//    one) and Sum their sum: the trainer reports a batch's loss as Mean
//    times the batch size;
//  - class indices and their one-hot class probabilities give the same loss;
//  - the gradient with respect to the logits (autograd) is the central
//    finite difference of the loss, in double precision;
//  - where declared (shift_invariant, the default: softmax-based losses),
//    adding a constant to every logit of a row changes nothing;
//  - targets of the wrong shape (another batch size or class count, a
//    column of indices, one row of probabilities for the whole batch) are
//    an error (an exception, as LibTorch's losses throw), not a crash and
//    not a loss broadcast over whatever they were.
//
// A plugin gets the suite with one line in its BUILD:
//
//   load("//pipeline/testing:conformance.bzl", "loss_conformance_test")
//   loss_conformance_test(
//       name = "conformance_test",
//       plugin = ":cross_entropy",
//       options = "label_smoothing: 0.1",  # or a list of them
//   )

#include <ostream>
#include <string>

#include "gtest/gtest.h"

namespace pipeline {
namespace testing {

struct LossConformanceParams {
  std::string plugin;   // its registered name
  std::string options;  // the body of its options message, text format
  // The loss of a row does not change when a constant is added to all its
  // logits (true of any loss on the softmax of the logits).
  bool shift_invariant = true;
};

void PrintTo(const LossConformanceParams& params, std::ostream* out);

class LossConformanceTest : public ::testing::TestWithParam<LossConformanceParams> {};

std::string LossConformanceTestName(const ::testing::TestParamInfo<LossConformanceParams>& info);

}  // namespace testing
}  // namespace pipeline

#endif  // PIPELINE_TESTING_LOSS_CONFORMANCE_H_
