#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/image/test_images.h"
#include "pipeline/interfaces/transform.h"
#include "pipeline/testing/plugin_test_util.h"

namespace pipeline {
namespace {

using ::pipeline::testing::F32Image;
using ::pipeline::testing::U8Image;
using ::testing::ElementsAre;
using ::testing::FloatEq;

std::string Config(const std::string& options) {
  return testing::PluginText("normalize", "NormalizeOptions", options);
}

std::unique_ptr<Transform> Make(const std::string& options) {
  return testing::MakePluginOrFail<Transform>(Config(options));
}

absl::Status Apply(const std::string& options, Image& image) {
  SampleRandom random(1, 0, 0);
  return Make(options)->Apply(image, random);
}

std::string ValidationError(const std::string& options) {
  return testing::ValidationMessage<Transform>(Config(options));
}

TEST(NormalizeTest, PerChannelMeanAndStd) {
  Image image = F32Image(1, 2, 3, {0.5f, 0.5f, 0.5f, 1.0f, 0.0f, 0.25f});
  ASSERT_TRUE(Apply("mean: [0.5, 0.25, 0] std: [0.5, 0.25, 2]", image).ok());
  EXPECT_THAT(image.f32, ElementsAre(0.0f, 1.0f, 0.25f,  //
                                     1.0f, -1.0f, 0.125f));
}

TEST(NormalizeTest, ImageNetValues) {
  Image image = F32Image(1, 1, 3, {0.485f, 1.0f, 0.0f});
  ASSERT_TRUE(Apply("mean: [0.485, 0.456, 0.406] std: [0.229, 0.224, 0.225]", image).ok());
  EXPECT_THAT(image.f32, ElementsAre(0.0f, FloatEq((1.0f - 0.456f) / 0.224f),
                                     FloatEq(-0.406f / 0.225f)));
}

TEST(NormalizeTest, SingleValuesBroadcast) {
  Image gray = F32Image(2, 2, 1, {0, 0.5f, 1, 0.25f});
  ASSERT_TRUE(Apply("mean: 0.5 std: 0.5", gray).ok());
  EXPECT_THAT(gray.f32, ElementsAre(-1.0f, 0.0f, 1.0f, -0.5f));
  Image rgb = F32Image(1, 1, 3, {1, 2, 3});
  ASSERT_TRUE(Apply("mean: 1 std: [1, 2, 4]", rgb).ok());
  EXPECT_THAT(rgb.f32, ElementsAre(0.0f, 0.5f, 0.5f));
}

TEST(NormalizeTest, NeedsAFloatImage) {
  Image image = U8Image(1, 1, 1, {3});
  EXPECT_EQ(Apply("mean: 0.5 std: 0.5", image).message(),
            "normalize needs a float image: put a to_float transform before it");
}

TEST(NormalizeTest, ChannelCountMustMatch) {
  Image image = F32Image(2, 2, 1, {0, 0, 0, 0});
  EXPECT_EQ(Apply("mean: [0.485, 0.456, 0.406] std: 0.2", image).message(),
            "normalize: mean has 3 values but the image has 1 channel (2x2x1); give 1 value "
            "(for every channel) or 1");
  Image rgb = F32Image(1, 1, 3, {0, 0, 0});
  EXPECT_EQ(Apply("mean: 0.5 std: [0.1, 0.2]", rgb).message(),
            "normalize: std has 2 values but the image has 3 channels (1x1x3); give 1 value "
            "(for every channel) or 3");
}

TEST(NormalizeTest, ValidatorErrors) {
  EXPECT_EQ(ValidationError(""),
            "options: normalize: set mean and std, e.g. mean: [0.485, 0.456, 0.406] std: "
            "[0.229, 0.224, 0.225]");
  EXPECT_EQ(ValidationError("mean: [0.1, 0.2, 0.3]"),
            "options: normalize: set both mean and std (mean has 3 values, std 0)");
  EXPECT_EQ(ValidationError("mean: [0.1, 0.2, 0.3] std: [0.1, 0.2]"),
            "options: normalize: mean has 3 values and std 2; give each 1 value (for every "
            "channel) or one per channel");
  EXPECT_EQ(ValidationError("mean: [0.1, 0.2] std: [0.1, 0]"),
            "options: normalize: std[1] must be > 0, got 0");
  EXPECT_EQ(ValidationError("mean: 0 std: -1"), "options: normalize: std[0] must be > 0, got -1");
  EXPECT_EQ(ValidationError("mean: [0.1, 0.2, 0.3] std: 0.5"), "");
}

}  // namespace
}  // namespace pipeline
