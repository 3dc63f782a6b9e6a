#include "plugins/transforms/random_rotation/random_rotation.h"

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
using ::pipeline::random_rotation::Settings;
using ::pipeline::testing::TorchvisionFixture;

constexpr char kTestdata[] = "plugins/transforms/random_rotation/testdata/torchvision_";

std::string Config(const std::string& options) {
  return testing::PluginText("random_rotation", "RandomRotationOptions", options);
}

std::string ValidationError(const std::string& options) {
  return testing::ValidationMessage<Transform>(Config(options));
}

Settings Make(Interpolation interpolation, bool expand, std::vector<float> fill,
              std::optional<std::array<double, 2>> center = std::nullopt) {
  Settings settings;
  settings.warp = {interpolation, std::move(fill)};
  settings.expand = expand;
  settings.center = center;
  return settings;
}

// u8 and f32 results match torchvision bit for bit: the same float32
// arithmetic, op for op (expanded outputs of more than 66 pixels included,
// where torch's grid comes from a BLAS product).
TEST(RandomRotationTest, RotationsMatchTorchvision) {
  struct Case {
    const char* fixture;
    double angle;
    Settings settings;
  };
  const Interpolation kNearest = Interpolation::kNearest, kBilinear = Interpolation::kBilinear;
  const std::vector<Case> cases = {
      {"30_nearest_u8", 30.0, Make(kNearest, false, {0})},
      {"m47p5_bilinear_fill_u8", -47.5, Make(kBilinear, false, {10, 200, 77})},
      {"100_nearest_expand_u8", 100.0, Make(kNearest, true, {0})},
      {"17p25_bilinear_expand_u8", 17.25, Make(kBilinear, true, {50})},
      {"60_bilinear_center_u8", 60.0, Make(kBilinear, false, {0}, {{2.0, 5.0}})},
      {"m12_bilinear_gray_u8", -12.0, Make(kBilinear, false, {0})},
      {"33_bilinear_fill_f32", 33.0, Make(kBilinear, false, {0.5})},
      {"200_nearest_expand_gray_f32", 200.0, Make(kNearest, true, {0})},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.fixture);
    const TorchvisionFixture fixture = testing::ReadTorchvisionFixture(
        std::string(kTestdata) + "random_rotation_" + c.fixture + ".txt");
    Image image = fixture.input;
    ASSERT_TRUE(random_rotation::Rotate(image, c.angle, c.settings).ok());
    EXPECT_TRUE(testing::ImagesNear(image, fixture.output, 0)) << fixture.call;
  }
}

TEST(RandomRotationTest, AnglesAreUniformFloat32sInTheRangeAndDeterministic) {
  Settings settings;
  settings.degrees_min = -10;
  settings.degrees_max = 30;
  constexpr int kDraws = 20000;
  double sum = 0;
  int below_zero = 0;
  for (int seed = 0; seed < kDraws; ++seed) {
    SampleRandom random(seed, 3, 4), again(seed, 3, 4);
    const double angle = random_rotation::DrawAngle(settings, random);
    ASSERT_EQ(angle, random_rotation::DrawAngle(settings, again));
    ASSERT_GE(angle, -10.0);
    ASSERT_LE(angle, 30.0);
    ASSERT_EQ(angle, static_cast<float>(angle));
    sum += angle;
    if (angle < 0) ++below_zero;
  }
  // Mean 10, standard deviation 40 / sqrt(12 * 20000) ~ 0.08; a quarter
  // below 0 (+- 0.003).
  EXPECT_NEAR(sum / kDraws, 10.0, 0.4);
  EXPECT_NEAR(below_zero / static_cast<double>(kDraws), 0.25, 0.015);
}

TEST(RandomRotationTest, ThePluginRotatesByTheDrawnAngle) {
  auto rotation = testing::CreatePlugin<Transform>(
      Config("degrees: [-45, 45] interpolation: BILINEAR fill: 9"));
  ASSERT_TRUE(rotation.ok()) << rotation.status();
  Settings settings = Make(Interpolation::kBilinear, false, {9});
  settings.degrees_min = -45;
  settings.degrees_max = 45;
  const Image input = testing::CountingU8Image(9, 11, 3);
  for (uint64_t seed = 0; seed < 10; ++seed) {
    SampleRandom random(seed, 1, 2), expected_random(seed, 1, 2);
    Image image = input, expected = input;
    ASSERT_TRUE((*rotation)->Apply(image, random).ok());
    const double angle = random_rotation::DrawAngle(settings, expected_random);
    ASSERT_TRUE(random_rotation::Rotate(expected, angle, settings).ok());
    EXPECT_EQ(image.u8, expected.u8) << "seed " << seed;
    EXPECT_NE(image.u8, input.u8) << "seed " << seed;
  }
}

TEST(RandomRotationTest, ExpandGrowsTheImageToHoldItAll) {
  auto rotation = testing::CreatePlugin<Transform>(Config("degrees: [90, 90] expand: true"));
  ASSERT_TRUE(rotation.ok()) << rotation.status();
  Image image = testing::CountingU8Image(4, 6, 1);
  SampleRandom random(1, 0, 0);
  ASSERT_TRUE((*rotation)->Apply(image, random).ok());
  EXPECT_EQ(image.ShapeString(), "6x4x1");
}

TEST(RandomRotationTest, AFillThatDoesNotFitTheImageIsAnError) {
  auto rotation = testing::CreatePlugin<Transform>(Config("degrees: 10 fill: [1, 2, 3]"));
  ASSERT_TRUE(rotation.ok()) << rotation.status();
  Image gray = testing::CountingU8Image(4, 4, 1);
  SampleRandom random(1, 0, 0);
  EXPECT_EQ((*rotation)->Apply(gray, random).message(),
            "random_rotation: fill has 3 values but the image has 1 channels (4x4x1); give 1 "
            "value or 1");
  auto bright = testing::CreatePlugin<Transform>(Config("degrees: 10 fill: 256"));
  ASSERT_TRUE(bright.ok()) << bright.status();
  EXPECT_EQ((*bright)->Apply(gray, random).message(),
            "random_rotation: fill 256 is outside [0, 255] and the 4x4x1 image is u8");
  Image f32 = testing::F32Image(2, 2, 1, {0, 1, 0, 1});
  EXPECT_TRUE((*bright)->Apply(f32, random).ok());
}

TEST(RandomRotationTest, ValidatorChecksTheOptions) {
  EXPECT_EQ(ValidationError(""),
            "options: random_rotation: degrees takes 1 value d (the range [-d, d]) or 2 ([min, "
            "max]), got 0");
  EXPECT_EQ(ValidationError("degrees: -5"),
            "options: random_rotation: a single degrees value d must be >= 0 (the range [-d, "
            "d]), got -5");
  EXPECT_EQ(ValidationError("degrees: [30, 10]"),
            "options: random_rotation: degrees [min, max] must have min <= max, got [30, 10]");
  EXPECT_EQ(ValidationError("degrees: [1, 2, 3]"),
            "options: random_rotation: degrees takes 1 value d (the range [-d, d]) or 2 ([min, "
            "max]), got 3");
  EXPECT_EQ(ValidationError("degrees: inf"),
            "options: random_rotation: degrees must be finite, got inf");
  EXPECT_EQ(ValidationError("degrees: 5 center: 3"),
            "options: random_rotation: center takes 2 values (x, y), or none for the image "
            "center, got 1");
  EXPECT_EQ(ValidationError("degrees: 5 fill: nan"),
            "options: random_rotation: fill must be finite, got nan");
  EXPECT_TRUE(Registry<Transform>::Global()
                  .Validate(testing::ParsePluginConfig(Config("degrees: [-5, 5] center: [1, 2]")))
                  .ok());
}

}  // namespace
}  // namespace pipeline
