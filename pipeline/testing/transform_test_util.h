#ifndef PIPELINE_TESTING_TRANSFORM_TEST_UTIL_H_
#define PIPELINE_TESTING_TRANSFORM_TEST_UTIL_H_

// Applying a transform plugin in a test: one sample's randomness from a
// seed, and a failed status fails the test.

#include <cstdint>

#include "gtest/gtest.h"
#include "pipeline/interfaces/image.h"
#include "pipeline/interfaces/transform.h"

namespace pipeline {
namespace testing {

// `image` after `transform`, with SampleRandom(seed, 0, 0).
inline Image ApplyOrFail(const Transform& transform, Image image, uint64_t seed = 1) {
  SampleRandom random(seed, 0, 0);
  const absl::Status status = transform.Apply(image, random);
  EXPECT_TRUE(status.ok()) << status;
  return image;
}

}  // namespace testing
}  // namespace pipeline

#endif  // PIPELINE_TESTING_TRANSFORM_TEST_UTIL_H_
