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

std::unique_ptr<Transform> Make() {
  auto transform = testing::CreatePlugin<Transform>(R"pb(name: "grayscale_to_rgb")pb");
  EXPECT_TRUE(transform.ok()) << transform.status();
  return transform.ok() ? *std::move(transform) : nullptr;
}

TEST(GrayscaleToRgbTest, CopiesTheChannelThreeTimes) {
  auto transform = Make();
  SampleRandom random(1, 0, 0);
  Image u8 = U8Image(1, 2, 1, {7, 200});
  ASSERT_TRUE(transform->Apply(u8, random).ok());
  EXPECT_EQ(u8.channels, 3);
  EXPECT_THAT(u8.u8, ElementsAre(7, 7, 7, 200, 200, 200));
  Image f32 = F32Image(2, 1, 1, {0.25f, -1.0f});
  ASSERT_TRUE(transform->Apply(f32, random).ok());
  EXPECT_EQ(f32.ShapeString(), "2x1x3");
  EXPECT_TRUE(f32.u8.empty());
  EXPECT_THAT(f32.f32, ElementsAre(0.25f, 0.25f, 0.25f, -1.0f, -1.0f, -1.0f));
}

TEST(GrayscaleToRgbTest, ThreeChannelsAreUnchanged) {
  const Image rgb = CountingU8Image(2, 2, 3);
  Image image = rgb;
  SampleRandom random(1, 0, 0);
  ASSERT_TRUE(Make()->Apply(image, random).ok());
  EXPECT_EQ(image.channels, 3);
  EXPECT_EQ(image.u8, rgb.u8);
}

TEST(GrayscaleToRgbTest, OtherChannelCountsAreAnError) {
  Image image = CountingU8Image(2, 2, 4);
  SampleRandom random(1, 0, 0);
  EXPECT_EQ(Make()->Apply(image, random).message(),
            "grayscale_to_rgb: the image has 4 channels (2x2x4); it takes 1 (copied into 3) "
            "or 3 (kept)");
}

}  // namespace
}  // namespace pipeline
