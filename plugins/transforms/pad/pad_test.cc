#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/image/test_images.h"
#include "pipeline/interfaces/transform.h"
#include "pipeline/testing/plugin_test_util.h"
#include "pipeline/testing/torchvision_fixture.h"
#include "plugins/transforms/pad/padding.h"

namespace pipeline {
namespace {

using ::pipeline::padding::Padding;
using ::pipeline::padding::PaddingMode;
using ::pipeline::testing::F32Image;
using ::pipeline::testing::U8Image;
using ::testing::ElementsAre;

constexpr char kTestdata[] = "plugins/transforms/pad/testdata/";

std::string Config(const std::string& options) {
  return testing::PluginText("pad", "PadOptions", options);
}

absl::StatusOr<Image> Apply(const std::string& options, Image image) {
  auto transform = testing::CreatePlugin<Transform>(Config(options));
  if (!transform.ok()) return transform.status();
  SampleRandom random(1, 0, 0);
  absl::Status status = (*transform)->Apply(image, random);
  if (!status.ok()) return status;
  return image;
}

std::string ValidationError(const std::string& options) {
  return testing::ValidationMessage<Transform>(Config(options));
}

TEST(PadTest, MatchesTorchvisionPixelForPixel) {
  struct Case {
    const char* fixture;
    std::vector<int> padding;
    float fill;
    PaddingMode mode;
  };
  for (const Case& c : {
           Case{"pad_constant_u8", {1, 2, 3, 4}, 7, PaddingMode::kConstant},
           Case{"pad_edge_u8", {2, 1}, 0, PaddingMode::kEdge},
           Case{"pad_reflect_u8", {8, 6, 8, 6}, 0, PaddingMode::kReflect},
           Case{"pad_symmetric_u8", {9, 7, 9, 7}, 0, PaddingMode::kSymmetric},
           Case{"pad_reflect_gray_u8", {1, 2, 3, 4}, 0, PaddingMode::kReflect},
           Case{"pad_constant_f32", {3}, 0.25f, PaddingMode::kConstant},
           Case{"pad_symmetric_f32", {1, 2, 3, 4}, 0, PaddingMode::kSymmetric},
       }) {
    SCOPED_TRACE(c.fixture);
    const testing::TorchvisionFixture fixture = testing::ReadTorchvisionFixture(
        std::string(kTestdata) + "torchvision_" + c.fixture + ".txt");
    absl::StatusOr<Padding> sides = padding::PaddingFromValues(c.padding, "pad");
    ASSERT_TRUE(sides.ok()) << sides.status();
    absl::StatusOr<Image> out = padding::Pad(fixture.input, *sides, c.fill, c.mode, "pad");
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_TRUE(testing::ImagesNear(*out, fixture.output, 0)) << fixture.call;
  }
}

TEST(PadTest, ThePluginPadsAsTheOptionsSay) {
  // 1 x 3, one channel: 1 2 3.
  const Image row = U8Image(1, 3, 1, {1, 2, 3});
  absl::StatusOr<Image> out = Apply("padding: [2, 0]", row);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->ShapeString(), "1x7x1");
  EXPECT_THAT(out->u8, ElementsAre(0, 0, 1, 2, 3, 0, 0));
  out = Apply("padding: [2, 0] padding_mode: REFLECT", row);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->u8, ElementsAre(3, 2, 1, 2, 3, 2, 1));
  out = Apply("padding: [2, 0] padding_mode: SYMMETRIC", row);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->u8, ElementsAre(2, 1, 1, 2, 3, 3, 2));
  out = Apply("padding: [1, 0, 2, 0] padding_mode: EDGE", row);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->u8, ElementsAre(1, 1, 2, 3, 3, 3));
  // (left, top, right, bottom); whole pixels are added, channels kept.
  out = Apply("padding: [0, 1, 0, 0] fill: 0.5", F32Image(1, 1, 2, {0.25f, 0.75f}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->ShapeString(), "2x1x2");
  EXPECT_THAT(out->f32, ElementsAre(0.5f, 0.5f, 0.25f, 0.75f));
}

TEST(PadTest, ImpossiblePaddingsAreClearErrors) {
  const Image image = testing::CountingU8Image(3, 4, 1);
  EXPECT_EQ(Apply("padding: [4, 0] padding_mode: REFLECT", image).status().message(),
            "pad: padding_mode REFLECT needs each padding smaller than the side it mirrors, but "
            "the left padding is 4 and the 3x4x1 image's width is 4");
  EXPECT_TRUE(Apply("padding: [3, 0] padding_mode: REFLECT", image).ok());
  EXPECT_TRUE(Apply("padding: [4, 3] padding_mode: SYMMETRIC", image).ok());
  EXPECT_EQ(Apply("padding: [0, 4] padding_mode: SYMMETRIC", image).status().message(),
            "pad: padding_mode SYMMETRIC needs each padding at most the side it mirrors, but "
            "the top padding is 4 and the 3x4x1 image's height is 3");
  EXPECT_EQ(Apply("padding: 1 fill: 0.5", image).status().message(),
            "pad: fill 0.5 is not a uint8 value (an integer in [0, 255]) and the 3x4x1 image is "
            "u8; fill a float image (after to_float) with fractions");
  EXPECT_EQ(Apply("padding: 1 fill: 256", image).status().message(),
            "pad: fill 256 is not a uint8 value (an integer in [0, 255]) and the 3x4x1 image is "
            "u8; fill a float image (after to_float) with fractions");
  EXPECT_TRUE(Apply("padding: 1 fill: 255", image).ok());
}

TEST(PadTest, ValidatorChecksThePadding) {
  EXPECT_EQ(ValidationError(""), "options: pad: set padding (pixels: 1, 2 or 4 values)");
  EXPECT_EQ(ValidationError("padding: [1, 2, 3]"),
            "options: pad: padding takes 1 value (all sides), 2 (left/right, top/bottom) or 4 "
            "(left, top, right, bottom), got 3");
  EXPECT_EQ(ValidationError("padding: [1, -2]"),
            "options: pad: padding must be >= 0 pixels, got -2");
  EXPECT_EQ(ValidationError("padding: 1 fill: inf"),
            "options: pad: fill must be a finite number, got inf");
  EXPECT_TRUE(Registry<Transform>::Global()
                  .Validate(testing::ParsePluginConfig(Config("padding: [0]")))
                  .ok());
}

}  // namespace
}  // namespace pipeline
