#ifndef PIPELINE_TESTING_TRANSFORM_CONFORMANCE_H_
#define PIPELINE_TESTING_TRANSFORM_CONFORMANCE_H_

// What every transform plugin must do, whatever it does to the pixels:
//
//  - accept at least one of the representative images (u8 and f32, 1 and 3
//    channels, odd sizes) and give a well-formed image back;
//  - give bitwise the same output for the same SampleRandom seed, and an
//    output shape that depends on the input shape only (the loader stacks
//    samples into one batch);
//  - give the same results when applied from several threads at once;
//  - as a ChannelMap (AsChannelMap): be exactly Apply's arithmetic, keep the
//    shape, return floats, draw no random numbers, and take exactly the
//    types the map says it takes;
//  - as a RegionCrop (AsRegionCrop): PlanRegion then ApplyToRegion equals
//    Apply, drawing the same numbers, with the region inside the image, also
//    when the image given to ApplyToRegion is only the region (what
//    Dataset::GetRegion may return);
//  - return an error, never crash, for an empty or malformed image.
//
// A plugin gets the suite with one line in its BUILD:
//
//   load("//pipeline/testing:conformance.bzl", "transform_conformance_test")
//   transform_conformance_test(
//       name = "conformance_test",
//       plugin = ":resize",
//       options = "size: 5",  # or a list, one suite instance each
//   )

#include <ostream>
#include <string>

#include "gtest/gtest.h"

namespace pipeline {
namespace testing {

struct TransformConformanceParams {
  std::string plugin;   // its registered name
  std::string options;  // the body of its options message, text format
};

void PrintTo(const TransformConformanceParams& params, std::ostream* out);

class TransformConformanceTest : public ::testing::TestWithParam<TransformConformanceParams> {};

// "options0", "options1", ... (the options themselves are in the output).
std::string TransformConformanceTestName(
    const ::testing::TestParamInfo<TransformConformanceParams>& info);

}  // namespace testing
}  // namespace pipeline

#endif  // PIPELINE_TESTING_TRANSFORM_CONFORMANCE_H_
