#include <set>
#include <utility>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/image/image_ops.h"
#include "pipeline/image/test_images.h"
#include "pipeline/interfaces/transform.h"
#include "pipeline/testing/plugin_test_util.h"
#include "pipeline/testing/transform_test_util.h"

namespace pipeline {
namespace {

using ::pipeline::testing::ApplyOrFail;
using ::pipeline::testing::CountingU8Image;
using ::pipeline::testing::F32Image;
using ::testing::Each;
using ::testing::ElementsAre;

std::string Config(const std::string& options) {
  return testing::PluginText("random_resized_crop", "RandomResizedCropOptions", options);
}

std::unique_ptr<Transform> Make(const std::string& options) {
  return testing::MakePluginOrFail<Transform>(Config(options));
}

std::string ValidationError(const std::string& options) {
  return testing::ValidationMessage<Transform>(Config(options));
}

TEST(RandomResizedCropTest, OutputHasTheRequestedSizeChannelsAndType) {
  auto square = Make("size: 3");
  auto exact = Make("height: 2 width: 5");
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const Image a = ApplyOrFail(*square, CountingU8Image(7, 11, 3), seed);
    EXPECT_EQ(a.height, 3);
    EXPECT_EQ(a.width, 3);
    EXPECT_EQ(a.channels, 3);
    EXPECT_EQ(a.u8.size(), 27u);
    const Image b = ApplyOrFail(*exact, F32Image(6, 4, 1, std::vector<float>(24, 0.5f)), seed);
    EXPECT_EQ(b.height, 2);
    EXPECT_EQ(b.width, 5);
    EXPECT_TRUE(b.u8.empty());
    EXPECT_THAT(b.f32, Each(0.5f));
  }
}

TEST(RandomResizedCropTest, OutputIsAWindowOfTheSource) {
  // Area 1/4 and ratio 1 of an 8x8 image: always a 4x4 window, which a 4x4
  // output copies unchanged. Counting pixels show where it was taken from.
  auto crop = Make("size: 4 scale_min: 0.25 scale_max: 0.25 ratio_min: 1 ratio_max: 1");
  const Image source = CountingU8Image(8, 8, 1);
  std::set<std::pair<int, int>> origins;
  for (uint64_t seed = 0; seed < 50; ++seed) {
    const Image out = ApplyOrFail(*crop, source, seed);
    ASSERT_EQ(out.u8.size(), 16u);
    const int top = out.u8[0] / 8;
    const int left = out.u8[0] % 8;
    ASSERT_LE(top, 4);
    ASSERT_LE(left, 4);
    for (int y = 0; y < 4; ++y) {
      for (int x = 0; x < 4; ++x) EXPECT_EQ(out.u8[y * 4 + x], (top + y) * 8 + left + x);
    }
    origins.insert({top, left});
  }
  EXPECT_GT(origins.size(), 5u);
}

TEST(RandomResizedCropTest, ResizesOnlyTheCrop) {
  // Bilinear upscaling of a crop clamps at the crop's edges; resizing the
  // whole image and cutting afterwards would blend in pixels from outside.
  auto crop = Make("size: 7 scale_min: 0.25 scale_max: 0.25 ratio_min: 1 ratio_max: 1");
  const Image source = CountingU8Image(6, 6, 2);
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const Image out = ApplyOrFail(*crop, source, seed);
    bool matched = false;
    for (int top = 0; top <= 3 && !matched; ++top) {
      for (int left = 0; left <= 3 && !matched; ++left) {
        auto window = image_ops::Crop(source, {top, left, 3, 3});
        ASSERT_TRUE(window.ok());
        auto expected = image_ops::Resize(*window, 7, 7, image_ops::Interpolation::kBilinear);
        ASSERT_TRUE(expected.ok());
        matched = expected->u8 == out.u8;
      }
    }
    EXPECT_TRUE(matched) << "seed " << seed;
  }
}

TEST(RandomResizedCropTest, NearestPixelsComeFromOneRectangleOfTheSource) {
  // Counting pixels of a 10x10 image encode their (y, x). With nearest, each
  // output row reads one source row and each output column one source column,
  // both increasing.
  auto crop = Make("size: 6 interpolation: NEAREST");
  for (uint64_t seed = 0; seed < 30; ++seed) {
    const Image out = ApplyOrFail(*crop, CountingU8Image(10, 10, 1), seed);
    for (int y = 0; y < 6; ++y) {
      for (int x = 0; x < 6; ++x) {
        const int v = out.u8[y * 6 + x];
        EXPECT_EQ(v / 10, out.u8[y * 6] / 10);
        EXPECT_EQ(v % 10, out.u8[x] % 10);
        if (x > 0) {
          EXPECT_GE(v % 10, out.u8[y * 6 + x - 1] % 10);
        }
        if (y > 0) {
          EXPECT_GE(v / 10, out.u8[(y - 1) * 6 + x] / 10);
        }
      }
    }
  }
}

TEST(RandomResizedCropTest, FallsBackToTheCentralCropOfTheNearestRatio) {
  // Area 1 at ratio 2 never fits a 4x4 image, so after 10 attempts the crop
  // is the central 2x4 (ratio 2) band; at ratio 1/2 the central 4x2 one.
  const Image source = CountingU8Image(4, 4, 1);
  EXPECT_THAT(ApplyOrFail(*Make("height: 2 width: 4 scale_min: 1 scale_max: 1 ratio_min: 2 "
                                "ratio_max: 2"),
                          source)
                  .u8,
              ElementsAre(4, 5, 6, 7, 8, 9, 10, 11));
  EXPECT_THAT(ApplyOrFail(*Make("height: 4 width: 2 scale_min: 1 scale_max: 1 ratio_min: 0.5 "
                                "ratio_max: 0.5"),
                          source)
                  .u8,
              ElementsAre(1, 2, 5, 6, 9, 10, 13, 14));
}

TEST(RandomResizedCropTest, WholeImageWhenScaleAndRatioAllowOnlyThat) {
  const Image source = CountingU8Image(5, 5, 3);
  auto expected = image_ops::Resize(source, 3, 3, image_ops::Interpolation::kBilinear);
  ASSERT_TRUE(expected.ok());
  EXPECT_EQ(
      ApplyOrFail(*Make("size: 3 scale_min: 1 scale_max: 1 ratio_min: 1 ratio_max: 1"), source).u8,
      expected->u8);
}

TEST(RandomResizedCropTest, SameSeedSameCropOtherSeedsDiffer) {
  auto crop = Make("size: 5");
  const Image source = CountingU8Image(16, 16, 1);
  EXPECT_EQ(ApplyOrFail(*crop, source, 7).u8, ApplyOrFail(*crop, source, 7).u8);
  std::set<std::vector<uint8_t>> outputs;
  for (uint64_t seed = 0; seed < 20; ++seed) outputs.insert(ApplyOrFail(*crop, source, seed).u8);
  EXPECT_GT(outputs.size(), 10u);
}

TEST(RandomResizedCropTest, ValidatorNamesTheFieldAndRange) {
  EXPECT_EQ(ValidationError(""),
            "options: random_resized_crop: set size, or both height and width (pixels)");
  EXPECT_EQ(ValidationError("size: 0"),
            "options: random_resized_crop: size must be > 0 pixels, got 0");
  EXPECT_EQ(ValidationError("size: 8 scale_min: 0"),
            "options: random_resized_crop: scale_min must be in (0, 1] (a fraction of the "
            "image's area), got 0");
  EXPECT_EQ(ValidationError("size: 8 scale_max: 1.5"),
            "options: random_resized_crop: scale_max must be in (0, 1] (a fraction of the "
            "image's area), got 1.5");
  EXPECT_EQ(ValidationError("size: 8 scale_min: 0.9 scale_max: 0.5"),
            "options: random_resized_crop: scale_min (0.9) must be <= scale_max (0.5)");
  EXPECT_EQ(ValidationError("size: 8 ratio_min: 0"),
            "options: random_resized_crop: ratio_min must be > 0 (width / height), got 0");
  EXPECT_EQ(ValidationError("size: 8 ratio_min: 2 ratio_max: 1"),
            "options: random_resized_crop: ratio_min (2) must be <= ratio_max (1)");
  EXPECT_EQ(ValidationError("size: 224"), "");
}

}  // namespace
}  // namespace pipeline
