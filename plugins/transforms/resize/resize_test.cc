#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/image/test_images.h"
#include "pipeline/interfaces/transform.h"
#include "pipeline/testing/plugin_test_util.h"
#include "pipeline/testing/transform_test_util.h"

namespace pipeline {
namespace {

using ::pipeline::testing::ApplyOrFail;
using ::pipeline::testing::CountingU8Image;
using ::pipeline::testing::F32Image;
using ::pipeline::testing::U8Image;
using ::testing::Each;
using ::testing::ElementsAre;

std::string Config(const std::string& options) {
  return testing::PluginText("resize", "ResizeOptions", options);
}

std::unique_ptr<Transform> MakeResize(const std::string& options) {
  return testing::MakePluginOrFail<Transform>(Config(options));
}

std::string ValidationError(const std::string& options) {
  return testing::ValidationMessage<Transform>(Config(options));
}

TEST(ResizeTest, ShorterSideKeepsAspectRatioLikeTorchvision) {
  auto resize = MakeResize("size: 2");
  // int(size * long / short), truncated: 3x5 -> 2x int(10 / 3) = 2x3.
  for (auto [height, width, out_height, out_width] :
       {std::tuple{4, 8, 2, 4}, {8, 4, 4, 2}, {3, 5, 2, 3}, {5, 3, 3, 2}, {6, 6, 2, 2}}) {
    const Image out = ApplyOrFail(*resize, CountingU8Image(height, width, 3));
    EXPECT_EQ(out.height, out_height) << height << "x" << width;
    EXPECT_EQ(out.width, out_width) << height << "x" << width;
    EXPECT_EQ(out.channels, 3);
    EXPECT_EQ(out.u8.size(), static_cast<size_t>(out_height) * out_width * 3);
  }
}

TEST(ResizeTest, HeightAndWidthGiveTheExactSizeOverSize) {
  const Image out =
      ApplyOrFail(*MakeResize("size: 9 height: 3 width: 2"), CountingU8Image(4, 4, 1));
  EXPECT_EQ(out.height, 3);
  EXPECT_EQ(out.width, 2);
}

TEST(ResizeTest, BilinearU8Known2x2To4x4) {
  // Weights 1, 3/4, 1/4, 0 along each axis; results rounded half to even
  // (137.5 -> 138, 212.5 -> 212).
  const Image out = ApplyOrFail(*MakeResize("size: 4"), U8Image(2, 2, 1, {0, 100, 200, 250}));
  EXPECT_THAT(out.u8, ElementsAre(0, 25, 75, 100,      //
                                  50, 72, 116, 138,    //
                                  150, 166, 197, 212,  //
                                  200, 212, 238, 250));
}

TEST(ResizeTest, BilinearF32Known2x2To4x4) {
  const Image out = ApplyOrFail(*MakeResize("height: 4 width: 4"), F32Image(2, 2, 1, {0, 1, 2, 3}));
  EXPECT_TRUE(out.u8.empty());
  EXPECT_THAT(out.f32, ElementsAre(0.0f, 0.25f, 0.75f, 1.0f,  //
                                   0.5f, 0.75f, 1.25f, 1.5f,  //
                                   1.5f, 1.75f, 2.25f, 2.5f,  //
                                   2.0f, 2.25f, 2.75f, 3.0f));
}

TEST(ResizeTest, ConstantImageStaysConstant) {
  const Image out =
      ApplyOrFail(*MakeResize("size: 5"), U8Image(7, 9, 3, std::vector<uint8_t>(7 * 9 * 3, 200)));
  EXPECT_EQ(out.height, 5);
  EXPECT_EQ(out.width, 6);
  EXPECT_THAT(out.u8, Each(200));
  const Image up =
      ApplyOrFail(*MakeResize("size: 8"), F32Image(2, 3, 1, std::vector<float>(6, 0.25f)));
  EXPECT_EQ(up.height, 8);
  EXPECT_EQ(up.width, 12);
  EXPECT_THAT(up.f32, Each(0.25f));
}

TEST(ResizeTest, Nearest) {
  const Image out = ApplyOrFail(*MakeResize("height: 1 width: 2 interpolation: NEAREST"),
                                U8Image(1, 4, 1, {10, 20, 30, 40}));
  EXPECT_THAT(out.u8, ElementsAre(10, 30));
}

TEST(ResizeTest, AlreadyTheRightSizeIsUnchanged) {
  const Image image = CountingU8Image(3, 5, 2);
  EXPECT_EQ(ApplyOrFail(*MakeResize("size: 3"), image).u8, image.u8);
}

TEST(ResizeTest, MalformedImageIsAnError) {
  Image image = U8Image(2, 2, 1, {1, 2, 3});
  SampleRandom random(1, 0, 0);
  EXPECT_EQ(MakeResize("size: 1")->Apply(image, random).message(),
            "resize: a 2x2x1 image needs 4 values but holds 3");
}

TEST(ResizeTest, ValidatorNamesTheField) {
  EXPECT_EQ(ValidationError(""), "options: resize: set size, or both height and width (pixels)");
  EXPECT_EQ(ValidationError("size: 0"), "options: resize: size must be > 0 pixels, got 0");
  EXPECT_EQ(ValidationError("height: 4"),
            "options: resize: set both height and width, or neither (only height is set)");
  EXPECT_EQ(ValidationError("width: 4"),
            "options: resize: set both height and width, or neither (only width is set)");
  EXPECT_EQ(ValidationError("height: -1 width: 4"),
            "options: resize: height must be > 0 pixels, got -1");
  EXPECT_EQ(ValidationError("height: 4 width: 0"),
            "options: resize: width must be > 0 pixels, got 0");
  EXPECT_EQ(ValidationError("size: 32"), "");
}

}  // namespace
}  // namespace pipeline
