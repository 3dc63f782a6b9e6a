#include "plugins/transforms/augment_ops/color_adjust.h"
#include "plugins/transforms/color_jitter/color_jitter.h"

#include <array>
#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/image/test_images.h"
#include "pipeline/interfaces/transform.h"
#include "pipeline/testing/plugin_test_util.h"
#include "pipeline/testing/torchvision_fixture.h"

namespace pipeline {
namespace {

using ::pipeline::color_jitter::Params;
using ::pipeline::color_jitter::Range;
using ::pipeline::color_jitter::Ranges;
using ::pipeline::testing::TorchvisionFixture;

constexpr char kTestdata[] = "plugins/transforms/color_jitter/testdata/torchvision_";

std::string Config(const std::string& options) {
  return testing::PluginText("color_jitter", "ColorJitterOptions", options);
}

std::string ValidationError(const std::string& options) {
  return testing::ValidationMessage<Transform>(Config(options));
}

TorchvisionFixture Fixture(const std::string& name) {
  return testing::ReadTorchvisionFixture(kTestdata + name + ".txt");
}

// u8 results match bit for bit; f32 ones to float32 rounding (the mean's
// summation order differs from torch's).
double Tolerance(const Image& image) { return image.is_float() ? 2e-6 : 0; }

TEST(ColorJitterTest, EachAdjustmentMatchesTorchvision) {
  struct Case {
    const char* fixture;
    void (*adjust)(Image&, double);
    double factor;
  };
  for (const char* kind : {"u8", "f32"}) {
    for (const Case& c : {
             Case{"brightness_1p37", color_adjust::AdjustBrightness, 1.37},
             Case{"brightness_0p6", color_adjust::AdjustBrightness, 0.6},
             Case{"contrast_0p55", color_adjust::AdjustContrast, 0.55},
             Case{"contrast_1p8", color_adjust::AdjustContrast, 1.8},
             Case{"saturation_0p3", color_adjust::AdjustSaturation, 0.3},
             Case{"saturation_1p7", color_adjust::AdjustSaturation, 1.7},
             Case{"hue_0p23", color_adjust::AdjustHue, 0.23},
             Case{"hue_m0p41", color_adjust::AdjustHue, -0.41},
             Case{"brightness_gray", color_adjust::AdjustBrightness, 1.37},
             Case{"contrast_gray", color_adjust::AdjustContrast, 0.55},
         }) {
      const std::string name = std::string("color_jitter_") + c.fixture + "_" + kind;
      SCOPED_TRACE(name);
      const TorchvisionFixture fixture = Fixture(name);
      Image image = fixture.input;
      c.adjust(image, c.factor);
      EXPECT_TRUE(testing::ImagesNear(image, fixture.output, Tolerance(image))) << fixture.call;
    }
  }
}

TEST(ColorJitterTest, TheFourInTheDrawnOrderMatchTorchvision) {
  Params params;
  params.order = {2, 0, 3, 1};
  params.brightness = 0.8;
  params.contrast = 1.25;
  params.saturation = 1.4;
  params.hue = -0.12;
  for (const char* kind : {"u8", "f32"}) {
    SCOPED_TRACE(kind);
    const TorchvisionFixture fixture = Fixture(std::string("color_jitter_all_") + kind);
    Image image = fixture.input;
    ASSERT_TRUE(color_jitter::ApplyParams(image, params).ok());
    EXPECT_TRUE(testing::ImagesNear(image, fixture.output, Tolerance(image))) << fixture.call;
  }
}

TEST(ColorJitterTest, SaturationAndHueLeaveGrayImagesAlone) {
  // torchvision's tensor ops return 1-channel images unchanged (as PIL).
  const Image gray = testing::CountingU8Image(4, 5, 1);
  Image image = gray;
  color_adjust::AdjustSaturation(image, 0.1);
  color_adjust::AdjustHue(image, 0.3);
  EXPECT_EQ(image.u8, gray.u8);
  Params params;
  params.saturation = 0.0;
  params.hue = 0.5;
  ASSERT_TRUE(color_jitter::ApplyParams(image, params).ok());
  EXPECT_EQ(image.u8, gray.u8);
}

TEST(ColorJitterTest, OtherChannelCountsAreRefused) {
  auto jitter = testing::CreatePlugin<Transform>(Config("brightness: 0.5"));
  ASSERT_TRUE(jitter.ok()) << jitter.status();
  Image image = testing::CountingU8Image(2, 2, 4);
  SampleRandom random(1, 0, 0);
  EXPECT_EQ((*jitter)->Apply(image, random).message(),
            "color_jitter needs an image of 1 or 3 channels, got 2x2x4");
}

TEST(ColorJitterTest, DrawnOrdersAreUniformAndFactorsInTheirRanges) {
  Ranges ranges;
  ranges.brightness = Range{0.6, 1.4};
  ranges.saturation = Range{0.0, 2.0};
  ranges.hue = Range{-0.1, 0.1};
  std::map<std::array<int, 4>, int> orders;
  constexpr int kDraws = 24000;
  double brightness_sum = 0, hue_sum = 0;
  for (int seed = 0; seed < kDraws; ++seed) {
    SampleRandom random(seed, 1, 2), again(seed, 1, 2);
    const Params params = color_jitter::DrawParams(ranges, random);
    const Params same = color_jitter::DrawParams(ranges, again);
    ASSERT_EQ(params.order, same.order);
    ASSERT_EQ(params.brightness, same.brightness);
    ASSERT_EQ(params.hue, same.hue);
    ASSERT_FALSE(params.contrast.has_value());
    ASSERT_TRUE(params.brightness && params.saturation && params.hue);
    ASSERT_GE(*params.brightness, 0.6f);
    ASSERT_LE(*params.brightness, 1.4f);
    ASSERT_GE(*params.saturation, 0.0);
    ASSERT_LE(*params.saturation, 2.0);
    ASSERT_GE(*params.hue, -0.1f);
    ASSERT_LE(*params.hue, 0.1f);
    // float32 values, as torch's uniform_ draws them.
    ASSERT_EQ(*params.hue, static_cast<float>(*params.hue));
    brightness_sum += *params.brightness;
    hue_sum += *params.hue;
    ++orders[params.order];
  }
  ASSERT_EQ(orders.size(), 24u);
  for (const auto& [order, count] : orders) {
    // 1000 expected; 5 standard deviations is about 160.
    EXPECT_GT(count, 840);
    EXPECT_LT(count, 1160);
  }
  EXPECT_NEAR(brightness_sum / kDraws, 1.0, 0.01);
  EXPECT_NEAR(hue_sum / kDraws, 0.0, 0.003);
  // The stream a sample uses does not depend on which ranges are set.
  SampleRandom a(5, 0, 0), b(5, 0, 0);
  color_jitter::DrawParams(ranges, a);
  color_jitter::DrawParams(Ranges{}, b);
  EXPECT_EQ(a.Uniform(), b.Uniform());
}

TEST(ColorJitterTest, ThePluginIsDeterministicPerSeedAndUnchangedWithoutRanges) {
  auto none = testing::CreatePlugin<Transform>(Config("brightness: 0 hue: [0, 0]"));
  ASSERT_TRUE(none.ok()) << none.status();
  auto jitter =
      testing::CreatePlugin<Transform>(Config("brightness: 0.4 contrast: 0.4 saturation: 0.4 "
                                              "hue: 0.1"));
  ASSERT_TRUE(jitter.ok()) << jitter.status();
  const Image input = Fixture("color_jitter_all_u8").input;
  int changed = 0;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    Image unchanged = input, first = input, second = input;
    SampleRandom r0(seed, 0, 0), r1(seed, 0, 0), r2(seed, 0, 0);
    ASSERT_TRUE((*none)->Apply(unchanged, r0).ok());
    EXPECT_EQ(unchanged.u8, input.u8);
    ASSERT_TRUE((*jitter)->Apply(first, r1).ok());
    ASSERT_TRUE((*jitter)->Apply(second, r2).ok());
    EXPECT_EQ(first.u8, second.u8);
    if (first.u8 != input.u8) ++changed;
  }
  EXPECT_EQ(changed, 20);
}

TEST(ColorJitterTest, ValidatorChecksTheRanges) {
  EXPECT_EQ(ValidationError("brightness: -0.1"),
            "options: color_jitter: brightness must be >= 0 (the range [1 - v, 1 + v]), got "
            "-0.1");
  EXPECT_EQ(ValidationError("hue: 0.6"),
            "options: color_jitter: hue must be in [0, 0.5] (the range [-v, v]), got 0.6");
  EXPECT_EQ(ValidationError("contrast: [1.5, 0.5]"),
            "options: color_jitter: contrast [min, max] must have 0 <= min <= max, got [1.5, "
            "0.5]");
  EXPECT_EQ(ValidationError("hue: [-0.6, 0.1]"),
            "options: color_jitter: hue [min, max] must have -0.5 <= min <= max <= 0.5, got "
            "[-0.6, 0.1]");
  EXPECT_EQ(ValidationError("saturation: [1, 2, 3]"),
            "options: color_jitter: saturation takes 1 value or 2 ([min, max]), got 3");
  EXPECT_EQ(ValidationError("saturation: nan"),
            "options: color_jitter: saturation must be finite, got nan");
  EXPECT_TRUE(Registry<Transform>::Global()
                  .Validate(testing::ParsePluginConfig(Config("brightness: 1.5")))
                  .ok());
}

}  // namespace
}  // namespace pipeline
