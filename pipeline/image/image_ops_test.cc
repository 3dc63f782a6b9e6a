#include "pipeline/image/image_ops.h"

#include <cmath>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/image/test_images.h"
#include "pipeline/util/simd.h"

namespace pipeline {
namespace image_ops {
namespace {

using ::pipeline::testing::CountingU8Image;
using ::pipeline::testing::F32Image;
using ::pipeline::testing::U8Image;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::Each;

Image ResizeOrDie(const Image& image, int height, int width,
                  Interpolation interpolation = Interpolation::kBilinear) {
  auto out = Resize(image, height, width, interpolation);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *std::move(out) : Image();
}

TEST(ResizeTest, Bilinear2x2To4x4MatchesTorchInterpolate) {
  // torch.nn.functional.interpolate(torch.tensor([[[[0., 1], [2, 3]]]]),
  //     size=4, mode="bilinear", align_corners=False)
  const Image out = ResizeOrDie(F32Image(2, 2, 1, {0, 1, 2, 3}), 4, 4);
  EXPECT_EQ(out.height, 4);
  EXPECT_EQ(out.width, 4);
  EXPECT_EQ(out.channels, 1);
  EXPECT_TRUE(out.u8.empty());
  EXPECT_THAT(out.f32, ElementsAre(0.0f, 0.25f, 0.75f, 1.0f,   //
                                   0.5f, 0.75f, 1.25f, 1.5f,   //
                                   1.5f, 1.75f, 2.25f, 2.5f,   //
                                   2.0f, 2.25f, 2.75f, 3.0f));
}

TEST(ResizeTest, BilinearU8RoundsHalfToEven) {
  // 2 -> 3 wide samples the middle at exactly 0.5 between the two pixels:
  // 0.5 * 5 = 2.5 -> 2 and 0.5 * 3 = 1.5 -> 2, as torch.round does.
  const Image out = ResizeOrDie(U8Image(1, 2, 2, {0, 0, 5, 3}), 1, 3);
  EXPECT_TRUE(out.f32.empty());
  EXPECT_THAT(out.u8, ElementsAre(0, 0, 2, 2, 5, 3));
  EXPECT_THAT(ResizeOrDie(U8Image(1, 2, 1, {0, 100}), 1, 4).u8, ElementsAre(0, 25, 75, 100));
}

TEST(ResizeTest, BilinearKeepsChannelsApart) {
  const Image out = ResizeOrDie(U8Image(1, 2, 3, {0, 100, 200, 100, 0, 40}), 1, 4);
  EXPECT_EQ(out.channels, 3);
  EXPECT_THAT(out.u8, ElementsAre(0, 100, 200,   //
                                  25, 75, 160,   //
                                  75, 25, 80,    //
                                  100, 0, 40));
}

TEST(ResizeTest, ConstantImageStaysConstant) {
  const Image u8(U8Image(5, 7, 3, std::vector<uint8_t>(5 * 7 * 3, 77)));
  const Image f32(F32Image(5, 7, 1, std::vector<float>(5 * 7, 0.3f)));
  for (auto [height, width] : {std::pair{3, 2}, {11, 13}, {1, 1}, {5, 20}}) {
    for (Interpolation interpolation : {Interpolation::kBilinear, Interpolation::kNearest}) {
      const Image a = ResizeOrDie(u8, height, width, interpolation);
      EXPECT_EQ(a.u8.size(), static_cast<size_t>(height) * width * 3);
      EXPECT_THAT(a.u8, Each(77));
      const Image b = ResizeOrDie(f32, height, width, interpolation);
      EXPECT_EQ(b.f32.size(), static_cast<size_t>(height) * width);
      for (float v : b.f32) EXPECT_NEAR(v, 0.3f, 1e-6f);
    }
  }
}

TEST(ResizeTest, SameSizeCopiesExactly) {
  const Image image = CountingU8Image(3, 5, 2);
  EXPECT_EQ(ResizeOrDie(image, 3, 5).u8, image.u8);
  EXPECT_EQ(ResizeOrDie(image, 3, 5, Interpolation::kNearest).u8, image.u8);
}

TEST(ResizeTest, NearestMatchesTorchIndices) {
  // floor(dst * in / out), and dst / 2 for an exact doubling.
  EXPECT_THAT(ResizeOrDie(U8Image(1, 4, 1, {10, 20, 30, 40}), 1, 2, Interpolation::kNearest).u8,
              ElementsAre(10, 30));
  EXPECT_THAT(ResizeOrDie(U8Image(1, 2, 1, {10, 20}), 1, 4, Interpolation::kNearest).u8,
              ElementsAre(10, 10, 20, 20));
  EXPECT_THAT(ResizeOrDie(U8Image(1, 3, 1, {10, 20, 30}), 1, 5, Interpolation::kNearest).u8,
              ElementsAre(10, 10, 20, 20, 30));
  EXPECT_THAT(
      ResizeOrDie(F32Image(2, 1, 2, {1, 2, 3, 4}), 4, 1, Interpolation::kNearest).f32,
      ElementsAre(1, 2, 1, 2, 3, 4, 3, 4));
}

TEST(ResizeRegionTest, EqualsCropThenResize) {
  const Image u8 = CountingU8Image(9, 11, 3);
  Image f32 = F32Image(9, 11, 3, {});
  for (uint8_t v : u8.u8) f32.f32.push_back(v * 0.5f);
  for (const Region& region : {Region{0, 0, 9, 11}, Region{2, 3, 4, 5}, Region{8, 10, 1, 1},
                               Region{1, 0, 7, 11}}) {
    for (Interpolation interpolation : {Interpolation::kBilinear, Interpolation::kNearest}) {
      for (const Image* image : {static_cast<const Image*>(&u8), static_cast<const Image*>(&f32)}) {
        auto direct = ResizeRegion(*image, region, 6, 7, interpolation);
        ASSERT_TRUE(direct.ok()) << direct.status();
        auto crop = Crop(*image, region);
        ASSERT_TRUE(crop.ok()) << crop.status();
        const Image two_steps = ResizeOrDie(*crop, 6, 7, interpolation);
        EXPECT_EQ(direct->u8, two_steps.u8);
        EXPECT_EQ(direct->f32, two_steps.f32);
        EXPECT_EQ(direct->height, 6);
        EXPECT_EQ(direct->width, 7);
      }
    }
  }
}

// interpolate(mode="bilinear", align_corners=False) written out the plain
// way, in double, one output value at a time: the formula, with none of the
// tables, row blending or vector loops of ResizeRegion.
double ReferenceBilinear(const Image& image, const Region& region, int out_height, int out_width,
                         int y, int x, int c) {
  auto source = [](int in, int out, int dst, int* i0, int* i1, double* w1) {
    const double real = std::max(0.0, (dst + 0.5) * in / out - 0.5);
    *i0 = std::min(static_cast<int>(real), in - 1);
    *i1 = std::min(*i0 + 1, in - 1);
    *w1 = real - *i0;
  };
  int y0, y1, x0, x1;
  double wy, wx;
  source(region.height, out_height, y, &y0, &y1, &wy);
  source(region.width, out_width, x, &x0, &x1, &wx);
  auto at = [&](int yy, int xx) {
    const size_t i =
        (static_cast<size_t>(region.top + yy) * image.width + region.left + xx) * image.channels + c;
    return image.is_float() ? static_cast<double>(image.f32[i]) : image.u8[i];
  };
  return (1 - wy) * ((1 - wx) * at(y0, x0) + wx * at(y0, x1)) +
         wy * ((1 - wx) * at(y1, x0) + wx * at(y1, x1));
}

class SimdLevelTest : public ::testing::TestWithParam<SimdLevel> {
 protected:
  void SetUp() override { SetSimdLevelForTesting(GetParam()); }
  void TearDown() override { SetSimdLevelForTesting(SimdLevel::kAvx2); }
};

// Random images, regions and sizes (down and up, 1, 3 and 4 channels): every
// u8 value within 1 of the reference's rounding (1/255 once scaled to
// [0, 1]), every float value within float rounding. Under each build.
TEST_P(SimdLevelTest, BilinearResizeMatchesAStraightforwardReference) {
  std::mt19937 random(7);
  auto below = [&](int n) { return static_cast<int>(random() % n); };
  for (int trial = 0; trial < 60; ++trial) {
    const int channels = std::vector<int>{1, 3, 4}[trial % 3];
    const int height = 1 + below(90), width = 1 + below(90);
    Image u8 = CountingU8Image(height, width, channels);
    for (uint8_t& v : u8.u8) v = static_cast<uint8_t>(random());
    Image f32 = F32Image(height, width, channels, {});
    for (uint8_t v : u8.u8) f32.f32.push_back(v / 255.0f);
    Region region;
    region.height = 1 + below(height);
    region.width = 1 + below(width);
    region.top = below(height - region.height + 1);
    region.left = below(width - region.width + 1);
    const int out_height = 1 + below(120), out_width = 1 + below(120);
    for (const Image* image : {static_cast<const Image*>(&u8), static_cast<const Image*>(&f32)}) {
      auto out = ResizeRegion(*image, region, out_height, out_width, Interpolation::kBilinear);
      ASSERT_TRUE(out.ok()) << out.status();
      for (int y = 0; y < out_height; ++y) {
        for (int x = 0; x < out_width; ++x) {
          for (int c = 0; c < channels; ++c) {
            const double expected =
                ReferenceBilinear(*image, region, out_height, out_width, y, x, c);
            const size_t i = (static_cast<size_t>(y) * out_width + x) * channels + c;
            if (image->is_float()) {
              ASSERT_NEAR(out->f32[i], expected, 1e-5) << "trial " << trial << " at " << y << ","
                                                       << x << "," << c;
            } else {
              ASSERT_LE(std::abs(out->u8[i] - expected), 0.5 + 1e-3)
                  << "trial " << trial << " at " << y << "," << x << "," << c;
            }
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Builds, SimdLevelTest,
                         ::testing::Values(SimdLevel::kBaseline, SimdLevel::kAvx2),
                         [](const auto& info) { return SimdLevelName(info.param); });

// The AVX2 build computes every value with the same operations as the
// baseline one, so a run gives the same batches on any x86-64 machine.
TEST(ResizeRegionTest, BaselineAndAvx2BuildsAgreeBitwise) {
  std::mt19937 random(11);
  for (int channels : {1, 2, 3, 4}) {
    Image u8 = CountingU8Image(61, 47, channels);
    for (uint8_t& v : u8.u8) v = static_cast<uint8_t>(random());
    Image f32 = F32Image(61, 47, channels, {});
    for (uint8_t v : u8.u8) f32.f32.push_back(v * 0.37f);
    for (const Image* image : {static_cast<const Image*>(&u8), static_cast<const Image*>(&f32)}) {
      for (auto [out_height, out_width] : {std::pair{224, 224}, {17, 9}, {61, 47}}) {
        SetSimdLevelForTesting(SimdLevel::kBaseline);
        auto baseline = ResizeRegion(*image, Region{3, 5, 50, 40}, out_height, out_width,
                                     Interpolation::kBilinear);
        SetSimdLevelForTesting(SimdLevel::kAvx2);
        auto avx2 = ResizeRegion(*image, Region{3, 5, 50, 40}, out_height, out_width,
                                 Interpolation::kBilinear);
        ASSERT_TRUE(baseline.ok() && avx2.ok());
        EXPECT_EQ(baseline->u8, avx2->u8) << channels;
        EXPECT_EQ(baseline->f32, avx2->f32) << channels;
      }
    }
  }
}

TEST(ResizeRegionTest, RejectsRegionOutsideTheImage) {
  auto out = ResizeRegion(CountingU8Image(4, 4, 1), Region{2, 1, 3, 2}, 2, 2,
                          Interpolation::kBilinear);
  EXPECT_EQ(out.status().message(),
            "resize: the region 3x2 at (top 2, left 1) is not inside the 4x4x1 image");
  EXPECT_EQ(Resize(CountingU8Image(4, 4, 1), 0, 3, Interpolation::kBilinear).status().message(),
            "resize: the output size 0x3 is empty");
}

TEST(CropTest, CopiesTheRegion) {
  auto out = Crop(CountingU8Image(3, 4, 1), Region{1, 1, 2, 2});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->height, 2);
  EXPECT_EQ(out->width, 2);
  EXPECT_THAT(out->u8, ElementsAre(5, 6, 9, 10));
}

TEST(CropTest, PadsWithZerosOutsideTheImage) {
  auto out = Crop(F32Image(1, 2, 2, {1, 2, 3, 4}), Region{-1, -1, 3, 3});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->f32, ElementsAre(0, 0, 0, 0, 0, 0,  //
                                    0, 0, 1, 2, 3, 4,  //
                                    0, 0, 0, 0, 0, 0));
  auto far = Crop(CountingU8Image(2, 2, 1), Region{5, 5, 1, 2});
  ASSERT_TRUE(far.ok()) << far.status();
  EXPECT_THAT(far->u8, ElementsAre(0, 0));
}

TEST(FlipTest, MirrorsPixelsNotChannels) {
  Image gray = U8Image(2, 4, 1, {1, 2, 3, 4, 5, 6, 7, 8});
  FlipHorizontal(gray);
  EXPECT_THAT(gray.u8, ElementsAre(4, 3, 2, 1, 8, 7, 6, 5));
  Image rgb = F32Image(1, 3, 2, {1, 2, 3, 4, 5, 6});
  FlipHorizontal(rgb);
  EXPECT_THAT(rgb.f32, ElementsAre(5, 6, 3, 4, 1, 2));
}

// Whole rows swap; the middle row of an odd height stays.
TEST(FlipTest, VerticalSwapsRows) {
  Image gray = U8Image(2, 4, 1, {1, 2, 3, 4, 5, 6, 7, 8});
  FlipVertical(gray);
  EXPECT_THAT(gray.u8, ElementsAre(5, 6, 7, 8, 1, 2, 3, 4));
  Image rgb = F32Image(3, 1, 2, {1, 2, 3, 4, 5, 6});
  FlipVertical(rgb);
  EXPECT_THAT(rgb.f32, ElementsAre(5, 6, 3, 4, 1, 2));
}

TEST(RoundHalfEvenTest, LikePythonRound) {
  EXPECT_EQ(RoundHalfEven(0.5), 0);
  EXPECT_EQ(RoundHalfEven(1.5), 2);
  EXPECT_EQ(RoundHalfEven(2.5), 2);
  EXPECT_EQ(RoundHalfEven(2.6), 3);
  EXPECT_EQ(RoundHalfEven(-0.5), 0);
  EXPECT_EQ(RoundHalfEven(7.0), 7);
}

TEST(CheckImageTest, ExplainsWhatIsWrong) {
  EXPECT_TRUE(CheckImage(CountingU8Image(2, 3, 1), "t").ok());
  EXPECT_EQ(CheckImage(Image(), "t").message(), "t: the image is empty (0x0x0)");
  EXPECT_EQ(CheckImage(U8Image(2, 2, 3, {1, 2, 3}), "t").message(),
            "t: a 2x2x3 image needs 12 values but holds 3");
  Image both = U8Image(1, 1, 1, {1});
  both.f32 = {1.0f};
  EXPECT_EQ(CheckImage(both, "t").message(), "t: the image holds both u8 and f32 pixels (1x1x1)");
}

TEST(VisitPixelsTest, PassesTheBufferInUse) {
  Image u8 = CountingU8Image(1, 2, 1);
  Image f32 = F32Image(1, 2, 1, {1, 2});
  auto size_of = [](auto& pixels) { return sizeof(pixels[0]); };
  EXPECT_EQ(VisitPixels(u8, size_of), 1u);
  EXPECT_EQ(VisitPixels(f32, size_of), 4u);
}

}  // namespace
}  // namespace image_ops
}  // namespace pipeline
