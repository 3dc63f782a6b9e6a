#include "plugins/models/common/dropout.h"

#include <cmath>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace pipeline {
namespace {

// torch.nn.Dropout(p) takes 0 <= p <= 1.
TEST(ValidateDropoutTest, AcceptsZeroToOneAndRejectsTheRest) {
  EXPECT_TRUE(ValidateDropout(0).ok());
  EXPECT_TRUE(ValidateDropout(0.5).ok());
  EXPECT_TRUE(ValidateDropout(1).ok());
  EXPECT_EQ(ValidateDropout(1.5).message(),
            "dropout: 1.5 is not a probability from 0 to 1 (torch.nn.Dropout's range); set 0 "
            "to disable dropout");
  EXPECT_EQ(ValidateDropout(-0.25).message(),
            "dropout: -0.25 is not a probability from 0 to 1 (torch.nn.Dropout's range); set 0 "
            "to disable dropout");
  EXPECT_FALSE(ValidateDropout(std::nan("")).ok());
}

TEST(ValidateDropoutTest, NamesTheFieldItIsGiven) {
  EXPECT_TRUE(ValidateDropout(0.2, "drop_rate").ok());
  EXPECT_EQ(ValidateDropout(-0.5, "drop_rate").message(),
            "drop_rate: -0.5 is not a probability from 0 to 1 (torch.nn.Dropout's range); set 0 "
            "to disable dropout");
}

}  // namespace
}  // namespace pipeline
