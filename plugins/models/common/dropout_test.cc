#include "pipeline/interfaces/model_shape.h"

#include <cmath>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace pipeline {
namespace {

TEST(ValidateDropoutTest, AcceptsZeroToBelowOneAndRejectsTheRest) {
  EXPECT_TRUE(ValidateDropout(0).ok());
  EXPECT_TRUE(ValidateDropout(0.5).ok());
  EXPECT_EQ(ValidateDropout(1).message(),
            "dropout: 1 is not a probability in [0, 1); set 0 to disable dropout");
  EXPECT_FALSE(ValidateDropout(-0.1).ok());
  EXPECT_FALSE(ValidateDropout(std::nan("")).ok());
}

}  // namespace
}  // namespace pipeline
