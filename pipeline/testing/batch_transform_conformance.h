#ifndef PIPELINE_TESTING_BATCH_TRANSFORM_CONFORMANCE_H_
#define PIPELINE_TESTING_BATCH_TRANSFORM_CONFORMANCE_H_

// What every batch transform plugin must do, whatever it mixes
// (batch_transform.h): take a batch of N x C x H x W float images with N
// labels (or N x classes probabilities from a transform before it) and give
// the images back with N x classes soft targets.
//
//  - the same SampleRandom stream gives bitwise the same images and
//    targets, from the same instance and from a second one: a transform
//    draws from the stream it is handed and from nothing else, so a resumed
//    run mixes as an uninterrupted one;
//  - images keep their shape and type; targets become N x classes floats,
//    from labels and from soft targets alike;
//  - every target row is a probability distribution: finite, non-negative,
//    summing to 1 (label smoothing included);
//  - every output pixel lies between the least and the greatest of the
//    batch's input pixels at its position: outputs mix the inputs, they do
//    not make up new values;
//  - the targets credit the images that are mixed into each output: with
//    distinct labels, the credit each input image gets in an output's
//    targets (over the smoothing's floor) is recovered, and the output's
//    pixels lie between the credited images' pixels at their position;
//    where an output is one blend of two images at every pixel (mixup), its
//    targets give the two images the blend's weights. (A paste, cutmix, is
//    not held to its pasted area: timm's uncorrected lambda is an option.)
//  - a batch of one image is an error or comes back unmixed, its targets
//    crediting its own label only;
//  - inputs that do not fit (images not N x C x H x W float32, targets
//    neither N labels in [0, classes) nor N x classes rows) are an error
//    status: not an exception, not a silently mixed batch.
//
// A plugin gets the suite with one line in its BUILD:
//
//   load("//pipeline/testing:conformance.bzl", "batch_transform_conformance_test")
//   batch_transform_conformance_test(
//       name = "conformance_test",
//       plugin = ":mixup",
//       options = ["", "alpha: 0.2 label_smoothing: 0"],  # or one string
//   )

#include <ostream>
#include <string>

#include "gtest/gtest.h"

namespace pipeline {
namespace testing {

struct BatchTransformConformanceParams {
  std::string plugin;   // its registered name
  std::string options;  // the body of its options message, text format
};

void PrintTo(const BatchTransformConformanceParams& params, std::ostream* out);

class BatchTransformConformanceTest
    : public ::testing::TestWithParam<BatchTransformConformanceParams> {};

std::string BatchTransformConformanceTestName(
    const ::testing::TestParamInfo<BatchTransformConformanceParams>& info);

}  // namespace testing
}  // namespace pipeline

#endif  // PIPELINE_TESTING_BATCH_TRANSFORM_CONFORMANCE_H_
