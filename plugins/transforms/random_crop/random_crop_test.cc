#include "plugins/transforms/random_crop/random_crop.h"

#include <map>
#include <string>
#include <utility>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/image/image_ops.h"
#include "pipeline/image/test_images.h"
#include "pipeline/interfaces/transform.h"
#include "pipeline/testing/plugin_test_util.h"
#include "pipeline/testing/torchvision_fixture.h"

namespace pipeline {
namespace {

using ::pipeline::padding::Padding;
using ::pipeline::padding::PaddingMode;
using ::pipeline::random_crop::Settings;

constexpr char kTestdata[] = "plugins/transforms/random_crop/testdata/";

std::string Config(const std::string& options) {
  return testing::PluginText("random_crop", "RandomCropOptions", options);
}

std::unique_ptr<Transform> Make(const std::string& options) {
  return testing::MakePluginOrFail<Transform>(Config(options));
}

absl::StatusOr<Image> Apply(const Transform& transform, Image image, uint64_t seed = 1) {
  SampleRandom random(seed, 0, 0);
  absl::Status status = transform.Apply(image, random);
  if (!status.ok()) return status;
  return image;
}

std::string ValidationError(const std::string& options) {
  return testing::ValidationMessage<Transform>(Config(options));
}

TEST(RandomCropTest, MatchesTorchvisionForTheSameCropPlace) {
  struct Case {
    const char* fixture;
    Settings settings;
    int top;
    int left;
  };
  for (const Case& c : {
           Case{"random_crop_padding_u8", {{5, 6}, Padding{4, 4, 4, 4}, false, 0,
                                           PaddingMode::kConstant}, 3, 10},
           Case{"random_crop_reflect_f32", {{7, 9}, Padding{2, 3, 2, 3}, false, 0,
                                            PaddingMode::kReflect}, 6, 1},
           Case{"random_crop_pad_if_needed_u8", {{10, 12}, std::nullopt, true, 9,
                                                 PaddingMode::kConstant}, 2, 5},
           Case{"random_crop_pad_if_needed_edge_u8", {{9, 11}, Padding{1, 1, 1, 1}, true, 0,
                                                      PaddingMode::kEdge}, 4, 0},
       }) {
    SCOPED_TRACE(c.fixture);
    const testing::TorchvisionFixture fixture = testing::ReadTorchvisionFixture(
        std::string(kTestdata) + "torchvision_" + c.fixture + ".txt");
    absl::StatusOr<Image> padded = random_crop::PadForCrop(fixture.input, c.settings);
    ASSERT_TRUE(padded.ok()) << padded.status();
    absl::StatusOr<Image> out = image_ops::Crop(
        *padded, ImageRegion{c.top, c.left, c.settings.size.height, c.settings.size.width});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_TRUE(testing::ImagesNear(*out, fixture.output, 0)) << fixture.call;
  }
}

TEST(RandomCropTest, PadIfNeededPadsTheWholeShortfallOnBothEnds) {
  // As torchvision: a 1x2 image and a 1x4 crop give a 1x6 padded image.
  Settings settings{{1, 4}, std::nullopt, true, 0, PaddingMode::kConstant};
  absl::StatusOr<Image> padded =
      random_crop::PadForCrop(testing::U8Image(1, 2, 1, {5, 6}), settings);
  ASSERT_TRUE(padded.ok()) << padded.status();
  EXPECT_THAT(padded->u8, ::testing::ElementsAre(0, 0, 5, 6, 0, 0));
}

TEST(RandomCropTest, EveryPlaceIsDrawnAboutEquallyOftenAndTheSeedDecides) {
  // A 3x3 crop of a 6x6 image: 4 tops x 4 lefts.
  const image_ops::OutputSize size{3, 3};
  std::map<std::pair<int, int>, int> counts;
  constexpr int kDraws = 16000;
  for (int seed = 0; seed < kDraws; ++seed) {
    SampleRandom random(seed, 2, 3);
    SampleRandom again(seed, 2, 3);
    const ImageRegion region = random_crop::DrawCrop(6, 6, size, random);
    const ImageRegion same = random_crop::DrawCrop(6, 6, size, again);
    ASSERT_EQ(region.top, same.top);
    ASSERT_EQ(region.left, same.left);
    ASSERT_EQ(region.height, 3);
    ASSERT_EQ(region.width, 3);
    ASSERT_GE(region.top, 0);
    ASSERT_LE(region.top, 3);
    ASSERT_GE(region.left, 0);
    ASSERT_LE(region.left, 3);
    ++counts[{region.top, region.left}];
  }
  ASSERT_EQ(counts.size(), 16u);
  for (const auto& [place, count] : counts) {
    // 1000 expected; 5 standard deviations is about 150.
    EXPECT_GT(count, 850) << place.first << ", " << place.second;
    EXPECT_LT(count, 1150) << place.first << ", " << place.second;
  }
  // A crop of the whole image has one place, and still draws two numbers.
  SampleRandom random(7, 0, 0), reference(7, 0, 0);
  const ImageRegion whole = random_crop::DrawCrop(3, 3, size, random);
  EXPECT_EQ(whole.top, 0);
  EXPECT_EQ(whole.left, 0);
  reference.Uniform();
  reference.Uniform();
  EXPECT_EQ(random.Uniform(), reference.Uniform());
}

TEST(RandomCropTest, ThePluginCropsPaddedImagesToTheSize) {
  auto crop = Make("size: 28 padding: 4");
  const Image image = testing::CountingU8Image(28, 28, 3);
  bool moved = false;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    absl::StatusOr<Image> out = Apply(*crop, image, seed);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(out->ShapeString(), "28x28x3");
    ASSERT_EQ(out->u8, Apply(*crop, image, seed)->u8);
    if (out->u8 != image.u8) moved = true;
  }
  EXPECT_TRUE(moved);
  auto exact = Make("height: 2 width: 3");
  absl::StatusOr<Image> out = Apply(*exact, testing::CountingU8Image(2, 3, 1));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->u8, ::testing::ElementsAre(0, 1, 2, 3, 4, 5));
}

TEST(RandomCropTest, AnImageSmallerThanTheCropIsAClearError) {
  EXPECT_EQ(Apply(*Make("size: 5"), testing::CountingU8Image(4, 6, 1)).status().message(),
            "random_crop: the 5x5 crop is larger than the 4x6x1 image; set pad_if_needed to pad "
            "it up to the crop");
  EXPECT_EQ(Apply(*Make("size: 9 padding: 1 pad_if_needed: true padding_mode: REFLECT"),
                  testing::CountingU8Image(2, 2, 1))
                .status()
                .message(),
            "random_crop: padding_mode REFLECT needs each padding smaller than the side it "
            "mirrors, but the left padding is 5 and the 4x4x1 image's width is 4");
}

TEST(RandomCropTest, ValidatorChecksTheOptions) {
  EXPECT_EQ(ValidationError("padding: 4"),
            "options: random_crop: set size, or both height and width (pixels)");
  EXPECT_EQ(ValidationError("size: 3 padding: [1, 2, 3]"),
            "options: random_crop: padding takes 1 value (all sides), 2 (left/right, "
            "top/bottom) or 4 (left, top, right, bottom), got 3");
  EXPECT_EQ(ValidationError("size: 3 padding: -1"),
            "options: random_crop: padding must be >= 0 pixels, got -1");
  EXPECT_EQ(ValidationError("size: 3 fill: nan"),
            "options: random_crop: fill must be a finite number, got nan");
}

}  // namespace
}  // namespace pipeline
