#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/image/test_images.h"
#include "pipeline/interfaces/transform.h"
#include "pipeline/testing/plugin_test_util.h"

namespace pipeline {
namespace {

using ::pipeline::testing::CountingU8Image;
using ::pipeline::testing::F32Image;
using ::pipeline::testing::U8Image;
using ::testing::ElementsAre;

std::string Config(const std::string& options) {
  return testing::PluginText("center_crop", "CenterCropOptions", options);
}

Image Apply(const std::string& options, Image image) {
  auto transform = testing::CreatePlugin<Transform>(Config(options));
  EXPECT_TRUE(transform.ok()) << transform.status();
  if (!transform.ok()) return Image();
  SampleRandom random(1, 0, 0);
  const absl::Status status = (*transform)->Apply(image, random);
  EXPECT_TRUE(status.ok()) << status;
  return image;
}

std::string ValidationError(const std::string& options) {
  return testing::ValidationMessage<Transform>(Config(options));
}

TEST(CenterCropTest, OffsetsRoundHalfToEvenLikeTorchvision) {
  // 5 - 2 = 3: offset round(1.5) = 2.
  const Image a = Apply("size: 2", CountingU8Image(5, 5, 1));
  EXPECT_EQ(a.height, 2);
  EXPECT_EQ(a.width, 2);
  EXPECT_THAT(a.u8, ElementsAre(12, 13, 17, 18));
  // 4 - 3 = 1: offset round(0.5) = 0.
  EXPECT_THAT(Apply("size: 3", CountingU8Image(4, 4, 1)).u8,
              ElementsAre(0, 1, 2, 4, 5, 6, 8, 9, 10));
  // 7 - 2 = 5: offset round(2.5) = 2, not 3.
  EXPECT_THAT(Apply("height: 1 width: 2", CountingU8Image(1, 7, 1)).u8, ElementsAre(2, 3));
  // 6 - 2 = 4: offset 2.
  EXPECT_THAT(Apply("height: 1 width: 2", CountingU8Image(1, 6, 1)).u8, ElementsAre(2, 3));
}

TEST(CenterCropTest, KeepsChannelsAndFloat) {
  const Image out = Apply("height: 1 width: 1", F32Image(1, 3, 2, {1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(out.channels, 2);
  EXPECT_TRUE(out.u8.empty());
  EXPECT_THAT(out.f32, ElementsAre(3, 4));
}

TEST(CenterCropTest, PadsSmallerImagesWithZeros) {
  EXPECT_THAT(Apply("size: 4", U8Image(2, 2, 1, {1, 2, 3, 4})).u8,
              ElementsAre(0, 0, 0, 0,  //
                          0, 1, 2, 0,  //
                          0, 3, 4, 0,  //
                          0, 0, 0, 0));
  // Odd padding: (4 - 1) // 2 = 1 on the left, 2 on the right.
  EXPECT_THAT(Apply("height: 1 width: 4", U8Image(1, 1, 1, {9})).u8, ElementsAre(0, 9, 0, 0));
  // Padded in height, cropped in width (3 - 1 = 2: offset 1).
  const Image mixed = Apply("height: 3 width: 1", CountingU8Image(1, 3, 1));
  EXPECT_EQ(mixed.height, 3);
  EXPECT_EQ(mixed.width, 1);
  EXPECT_THAT(mixed.u8, ElementsAre(0, 1, 0));
}

TEST(CenterCropTest, SameSizeIsUnchanged) {
  const Image image = CountingU8Image(3, 4, 3);
  EXPECT_EQ(Apply("height: 3 width: 4", image).u8, image.u8);
}

TEST(CenterCropTest, ValidatorNamesTheField) {
  EXPECT_EQ(ValidationError(""),
            "options: center_crop: set size, or both height and width (pixels)");
  EXPECT_EQ(ValidationError("size: -2"), "options: center_crop: size must be > 0 pixels, got -2");
  EXPECT_EQ(ValidationError("width: 3"),
            "options: center_crop: set both height and width, or neither (only width is set)");
  EXPECT_EQ(ValidationError("size: 224"), "");
}

}  // namespace
}  // namespace pipeline
