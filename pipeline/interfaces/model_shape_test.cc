#include "pipeline/interfaces/model_shape.h"

#include <cmath>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace pipeline {
namespace {

TEST(ValidateClassesAndChannelsTest, AcceptsZeroAndPositive) {
  EXPECT_TRUE(ValidateClassesAndChannels(0, 0).ok());
  EXPECT_TRUE(ValidateClassesAndChannels(10, 3).ok());
}

TEST(ValidateClassesAndChannelsTest, RejectsNegativeClasses) {
  const absl::Status status = ValidateClassesAndChannels(-2, -1);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "num_classes: -2 is negative; set a count, or 0 for the training data's classes");
}

TEST(ValidateClassesAndChannelsTest, RejectsNegativeChannels) {
  const absl::Status status = ValidateClassesAndChannels(5, -1);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "in_channels: -1 is negative; set a count, or 0 for the training samples' channels");
}

TEST(ResolveModelShapeTest, OptionsWinOverContext) {
  const absl::StatusOr<ModelShape> shape = ResolveModelShape(7, 1, 10, 3);
  ASSERT_TRUE(shape.ok()) << shape.status();
  EXPECT_EQ(shape->num_classes, 7);
  EXPECT_EQ(shape->in_channels, 1);
}

TEST(ResolveModelShapeTest, ZeroTakesContext) {
  const absl::StatusOr<ModelShape> shape = ResolveModelShape(0, 0, 10, 3);
  ASSERT_TRUE(shape.ok()) << shape.status();
  EXPECT_EQ(shape->num_classes, 10);
  EXPECT_EQ(shape->in_channels, 3);
}

TEST(ResolveModelShapeTest, FailsWithoutContextClasses) {
  const absl::StatusOr<ModelShape> shape = ResolveModelShape(0, 0, 0, 3);
  EXPECT_EQ(shape.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(shape.status().message(),
            "num_classes: 0 takes the training data's class count, but it gives none; set "
            "num_classes");
}

TEST(ResolveModelShapeTest, FailsWithoutContextChannels) {
  const absl::StatusOr<ModelShape> shape = ResolveModelShape(4, 0, 0, 0);
  EXPECT_EQ(shape.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(shape.status().message(),
            "in_channels: 0 takes the training samples' channel count, but they give none; set "
            "in_channels");
}

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
