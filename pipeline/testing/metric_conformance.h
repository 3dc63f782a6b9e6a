#ifndef PIPELINE_TESTING_METRIC_CONFORMANCE_H_
#define PIPELINE_TESTING_METRIC_CONFORMANCE_H_

// What every metric plugin must do. A metric keeps its pass in a vector of
// sums that the trainer all-reduces across ranks and writes into mid-epoch
// checkpoints (metric.h, pipeline/trainer/metric_set.h), so:
//
//  - after a few batches (random logits and labels, fixed seed) its figures
//    are finite, their names unique and not empty, the same sums give the
//    same figures, and the names of a pass without samples (what
//    MetricSet::Names announces) come in every pass, in the same order;
//  - sums add up across ranks: the batches split between 2 or 3 instances,
//    each adding into its own sums, and those sums added element by element
//    (the all-reduce) give the figures of one instance that saw them all;
//  - neither the order of the batches nor the order of the samples within
//    a batch changes the figures;
//  - a pass starts from zero sums (EmptySums): an instance that measured
//    another pass before gives the figures of a fresh one;
//  - sums restored into another instance (a resumed run) continue to the
//    figures of an uninterrupted pass;
//  - a pass without samples gives every figure 0, never NaN (metric_set.h),
//    and a batch of no rows leaves the sums as they were;
//  - logits and labels that do not fit each other (N x classes and N) are an
//    error, a thrown c10::Error as LibTorch's own checks throw, with the
//    sums left as they were: never a crash, never silently counted.
//
// A plugin gets the suite with one line in its BUILD:
//
//   load("//pipeline/testing:conformance.bzl", "metric_conformance_test")
//   metric_conformance_test(
//       name = "conformance_test",
//       plugin = ":accuracy",
//       options = ["", "top_k: 3"],  # or one string
//   )

#include <ostream>
#include <string>

#include "gtest/gtest.h"

namespace pipeline {
namespace testing {

struct MetricConformanceParams {
  std::string plugin;   // its registered name
  std::string options;  // the body of its options message, text format
};

void PrintTo(const MetricConformanceParams& params, std::ostream* out);

class MetricConformanceTest : public ::testing::TestWithParam<MetricConformanceParams> {};

std::string MetricConformanceTestName(
    const ::testing::TestParamInfo<MetricConformanceParams>& info);

}  // namespace testing
}  // namespace pipeline

#endif  // PIPELINE_TESTING_METRIC_CONFORMANCE_H_
