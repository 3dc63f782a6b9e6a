#include "plugins/transforms/random_affine/random_affine.h"

#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "pipeline/image/test_images.h"
#include "pipeline/interfaces/transform.h"
#include "pipeline/testing/plugin_test_util.h"
#include "pipeline/testing/torchvision_fixture.h"

namespace pipeline {
namespace {

using ::pipeline::augment_ops::Interpolation;
using ::pipeline::random_affine::Params;
using ::pipeline::random_affine::Range;
using ::pipeline::random_affine::Settings;
using ::pipeline::testing::TorchvisionFixture;

constexpr char kTestdata[] = "plugins/transforms/random_affine/testdata/torchvision_";

std::string Config(const std::string& options) {
  return testing::PluginText("random_affine", "RandomAffineOptions", options);
}

std::string ValidationError(const std::string& options) {
  return testing::ValidationMessage<Transform>(Config(options));
}

Settings Make(Interpolation interpolation, std::vector<float> fill,
              std::optional<std::array<double, 2>> center = std::nullopt) {
  Settings settings;
  settings.warp = {interpolation, std::move(fill)};
  settings.center = center;
  return settings;
}

// u8 and f32 results match torchvision bit for bit for the same
// parameters (the fixtures fix RandomAffine.get_params).
TEST(RandomAffineTest, WarpsMatchTorchvision) {
  struct Case {
    const char* fixture;
    Params params;
    Settings settings;
  };
  const Interpolation kNearest = Interpolation::kNearest, kBilinear = Interpolation::kBilinear;
  const std::vector<Case> cases = {
      {"translate_nearest_u8", {0.0, {2, -1}, 1.0, {0, 0}}, Make(kNearest, {0})},
      {"all_bilinear_fill_u8", {12.5, {-1, 2}, 0.85, {8, -5}}, Make(kBilinear, {10, 200, 77})},
      {"scale_bilinear_center_gray_u8",
       {-30.0, {0, 0}, 1.3, {0, 0}},
       Make(kBilinear, {0}, {{2.0, 5.0}})},
      {"shear_nearest_fill_f32", {0.0, {1, 1}, 1.0, {20, 0}}, Make(kNearest, {0.5})},
      {"all_bilinear_gray_f32", {45.0, {3, -2}, 0.7, {-10, 15}}, Make(kBilinear, {0})},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.fixture);
    const TorchvisionFixture fixture = testing::ReadTorchvisionFixture(
        std::string(kTestdata) + "random_affine_" + c.fixture + ".txt");
    Image image = fixture.input;
    ASSERT_TRUE(random_affine::Warp(image, c.params, c.settings).ok());
    EXPECT_TRUE(testing::ImagesNear(image, fixture.output, 0)) << fixture.call;
  }
}

// get_params: each value a float32 in its range, the shifts whole pixels
// within the fraction of the size (x from the width, y from the height),
// and nothing drawn for what is not set.
TEST(RandomAffineTest, ParamsAreDrawnInTheirRangesAndDeterministic) {
  Settings settings;
  settings.degrees = {-10, 30};
  settings.translate = std::array<double, 2>{0.25, 0.1};
  settings.scale = Range{0.5, 1.5};
  settings.shear_x = Range{-5, 5};
  settings.shear_y = Range{0, 20};
  constexpr int kDraws = 20000;
  double angle_sum = 0;
  std::set<double> xs, ys;
  for (int seed = 0; seed < kDraws; ++seed) {
    SampleRandom random(seed, 3, 4), again(seed, 3, 4);
    const Params p = random_affine::DrawParams(settings, 20, 40, random);
    const Params q = random_affine::DrawParams(settings, 20, 40, again);
    ASSERT_EQ(p.angle, q.angle);
    ASSERT_EQ(p.translate, q.translate);
    ASSERT_EQ(p.scale, q.scale);
    ASSERT_EQ(p.shear, q.shear);
    ASSERT_TRUE(p.angle >= -10 && p.angle <= 30) << p.angle;
    ASSERT_EQ(p.angle, static_cast<float>(p.angle));
    ASSERT_TRUE(p.scale >= 0.5 && p.scale <= 1.5) << p.scale;
    ASSERT_TRUE(p.shear[0] >= -5 && p.shear[0] <= 5) << p.shear[0];
    ASSERT_TRUE(p.shear[1] >= 0 && p.shear[1] <= 20) << p.shear[1];
    angle_sum += p.angle;
    xs.insert(p.translate[0]);
    ys.insert(p.translate[1]);
  }
  EXPECT_NEAR(angle_sum / kDraws, 10.0, 0.4);
  // 0.25 * 40 = 10 pixels each way horizontally, 0.1 * 20 = 2 vertically.
  EXPECT_EQ(xs, std::set<double>(
                    {-10, -9, -8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  EXPECT_EQ(ys, std::set<double>({-2, -1, 0, 1, 2}));

  Settings rotation_only;
  rotation_only.degrees = {-5, 5};
  SampleRandom random(1, 0, 0);
  const Params p = random_affine::DrawParams(rotation_only, 20, 40, random);
  EXPECT_EQ(p.translate, (std::array<double, 2>{0, 0}));
  EXPECT_EQ(p.scale, 1.0);
  EXPECT_EQ(p.shear, (std::array<double, 2>{0, 0}));
}

TEST(RandomAffineTest, ThePluginWarpsByTheDrawnParams) {
  auto affine = testing::CreatePlugin<Transform>(
      Config("degrees: [-20, 20] translate: [0.2, 0.3] scale: [0.8, 1.2] shear: [-5, 5, 0, 8] "
             "interpolation: BILINEAR fill: 9"));
  ASSERT_TRUE(affine.ok()) << affine.status();
  Settings settings = Make(Interpolation::kBilinear, {9});
  settings.degrees = {-20, 20};
  settings.translate = std::array<double, 2>{0.2f, 0.3f};
  settings.scale = Range{0.8f, 1.2f};
  settings.shear_x = Range{-5, 5};
  settings.shear_y = Range{0, 8};
  const Image input = testing::CountingU8Image(9, 11, 3);
  for (uint64_t seed = 0; seed < 10; ++seed) {
    SampleRandom random(seed, 1, 2), expected_random(seed, 1, 2);
    Image image = input, expected = input;
    ASSERT_TRUE((*affine)->Apply(image, random).ok());
    const Params params = random_affine::DrawParams(settings, 9, 11, expected_random);
    ASSERT_TRUE(random_affine::Warp(expected, params, settings).ok());
    EXPECT_EQ(image.u8, expected.u8) << "seed " << seed;
    EXPECT_NE(image.u8, input.u8) << "seed " << seed;
    EXPECT_EQ(image.ShapeString(), input.ShapeString());
  }
}

// A shift alone moves whole pixels: nearest sampling copies them.
TEST(RandomAffineTest, TranslationAloneShiftsPixels) {
  Image image = testing::CountingU8Image(4, 5, 1);
  const Image input = image;
  ASSERT_TRUE(
      random_affine::Warp(image, {0.0, {1, 0}, 1.0, {0, 0}}, Make(Interpolation::kNearest, {0}))
          .ok());
  for (int y = 0; y < 4; ++y) {
    EXPECT_EQ(image.u8[y * 5], 0) << "row " << y;
    for (int x = 1; x < 5; ++x) {
      EXPECT_EQ(image.u8[y * 5 + x], input.u8[y * 5 + x - 1]) << y << "," << x;
    }
  }
}

TEST(RandomAffineTest, AFillThatDoesNotFitTheImageIsAnError) {
  auto affine = testing::CreatePlugin<Transform>(Config("degrees: 10 fill: [1, 2, 3]"));
  ASSERT_TRUE(affine.ok()) << affine.status();
  Image gray = testing::CountingU8Image(4, 4, 1);
  SampleRandom random(1, 0, 0);
  EXPECT_EQ((*affine)->Apply(gray, random).message(),
            "random_affine: fill has 3 values but the image has 1 channels (4x4x1); give 1 "
            "value or 1");
  auto bright = testing::CreatePlugin<Transform>(Config("degrees: 10 fill: 256"));
  ASSERT_TRUE(bright.ok()) << bright.status();
  EXPECT_EQ((*bright)->Apply(gray, random).message(),
            "random_affine: fill 256 is outside [0, 255] and the 4x4x1 image is u8");
}

TEST(RandomAffineTest, ValidatorChecksTheOptions) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "degrees takes 1 value d (the range [-d, d]) or 2 ([min, max]), got 0"},
      {"degrees: -5", "a single degrees value d must be >= 0 (the range [-d, d]), got -5"},
      {"degrees: [30, 10]", "degrees [min, max] must have min <= max, got [30, 10]"},
      {"degrees: inf", "degrees must be finite, got inf"},
      {"degrees: 0 translate: 0.1",
       "translate takes 2 fractions (of the width, of the height), or none for no "
       "translation, got 1"},
      {"degrees: 0 translate: [0.1, 1.5]", "translate fractions must be in [0, 1], got 1.5"},
      {"degrees: 0 scale: [0, 1]", "scale values must be > 0, got [0, 1]"},
      {"degrees: 0 scale: [1.2, 0.8]", "scale [min, max] must have min <= max, got [1.2, 0.8]"},
      {"degrees: 0 scale: 1", "scale takes 2 values ([min, max]), or none for no scaling, got 1"},
      {"degrees: 0 shear: -1", "a single shear value d must be >= 0 (the range [-d, d]), got -1"},
      {"degrees: 0 shear: [5, 1]", "shear x [min, max] must have min <= max, got [5, 1]"},
      {"degrees: 0 shear: [1, 5, 3, 2]", "shear y [min, max] must have min <= max, got [3, 2]"},
      {"degrees: 0 shear: [1, 2, 3]",
       "shear takes 1 value s (x in [-s, s]), 2 (x in [min, max]) or 4 (x and y ranges), or "
       "none for no shear, got 3"},
      {"degrees: 5 center: 3", "center takes 2 values (x, y), or none for the image center, got 1"},
      {"degrees: 5 fill: nan", "fill must be finite, got nan"},
  };
  for (const auto& [options, error] : cases) {
    EXPECT_EQ(ValidationError(options), "options: random_affine: " + error) << options;
  }
  EXPECT_TRUE(Registry<Transform>::Global()
                  .Validate(testing::ParsePluginConfig(
                      Config("degrees: [-5, 5] translate: [0, 1] scale: [0.5, 0.5] shear: "
                             "[-1, 1, -2, 2] center: [1, 2]")))
                  .ok());
}

}  // namespace
}  // namespace pipeline
