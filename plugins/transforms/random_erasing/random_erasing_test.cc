#include "plugins/transforms/random_erasing/random_erasing.h"

#include <cmath>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/image/test_images.h"
#include "pipeline/interfaces/transform.h"
#include "pipeline/testing/plugin_test_util.h"
#include "pipeline/testing/torchvision_fixture.h"

namespace pipeline {
namespace {

using ::pipeline::random_erasing::Erasure;
using ::pipeline::random_erasing::Settings;

constexpr char kTestdata[] = "plugins/transforms/random_erasing/testdata/torchvision_";

std::string Config(const std::string& options) {
  return testing::PluginText("random_erasing", "RandomErasingOptions", options);
}

std::string ValidationError(const std::string& options) {
  return testing::ValidationMessage<Transform>(Config(options));
}

TEST(RandomErasingTest, EraseMatchesTorchvision) {
  struct Case {
    const char* fixture;
    ImageRegion region;
    std::vector<float> values;
  };
  for (const Case& c : {
           Case{"random_erasing_zero_u8", {1, 2, 4, 5}, {0}},
           Case{"random_erasing_per_channel_u8", {0, 3, 6, 6}, {10, 200, 77}},
           Case{"random_erasing_per_channel_f32", {2, 0, 3, 8}, {0.5f, -1.25f, 2.0f}},
           Case{"random_erasing_gray_f32", {4, 7, 3, 2}, {-0.75f}},
       }) {
    SCOPED_TRACE(c.fixture);
    const testing::TorchvisionFixture fixture =
        testing::ReadTorchvisionFixture(std::string(kTestdata) + c.fixture + ".txt");
    Image image = fixture.input;
    ASSERT_TRUE(random_erasing::Erase(image, Erasure{c.region, c.values}).ok());
    EXPECT_TRUE(testing::ImagesNear(image, fixture.output, 0)) << fixture.call;
  }
}

TEST(RandomErasingTest, RandomValuesFillTheRegionInHwcOrder) {
  Image image = testing::F32Image(2, 3, 2, std::vector<float>(12, 9.0f));
  ASSERT_TRUE(
      random_erasing::Erase(image, Erasure{{1, 1, 1, 2}, {1, 2, 3, 4}}).ok());
  EXPECT_THAT(image.f32, ::testing::ElementsAre(9, 9, 9, 9, 9, 9, 9, 9, 1, 2, 3, 4));
  // An empty rectangle (torchvision may draw a side of 0) erases nothing.
  ASSERT_TRUE(random_erasing::Erase(image, Erasure{{0, 0, 0, 2}, {0}}).ok());
  EXPECT_EQ(image.f32[0], 9);
}

TEST(RandomErasingTest, DrawsFollowTorchvisionsRanges) {
  Settings settings;  // torchvision's defaults
  settings.p = 0.5;
  constexpr int kDraws = 20000;
  int erased = 0;
  double area_sum = 0;
  for (int seed = 0; seed < kDraws; ++seed) {
    SampleRandom random(seed, 0, 1), again(seed, 0, 1);
    const std::optional<Erasure> erasure = random_erasing::Draw(40, 60, 3, settings, random);
    const std::optional<Erasure> same = random_erasing::Draw(40, 60, 3, settings, again);
    ASSERT_EQ(erasure.has_value(), same.has_value());
    if (!erasure) continue;
    ++erased;
    const ImageRegion& r = erasure->region;
    ASSERT_EQ(r.top, same->region.top);
    ASSERT_EQ(r.left, same->region.left);
    ASSERT_EQ(r.height, same->region.height);
    ASSERT_EQ(r.width, same->region.width);
    // Strictly smaller than the image, inside it.
    ASSERT_GE(r.top, 0);
    ASSERT_GE(r.left, 0);
    ASSERT_LT(r.height, 40);
    ASSERT_LT(r.width, 60);
    ASSERT_LE(r.top + r.height, 40);
    ASSERT_LE(r.left + r.width, 60);
    // Area about [0.02, 0.33] of 2400, after rounding each side.
    const double area = static_cast<double>(r.height) * r.width;
    ASSERT_GE(area, 0.02 * 2400 * 0.7);
    ASSERT_LE(area, 0.33 * 2400 * 1.3);
    area_sum += area;
    EXPECT_THAT(erasure->values, ::testing::ElementsAre(0.0f));
  }
  // p = 0.5: 10000 expected, 5 standard deviations about 350.
  EXPECT_GT(erased, 9650);
  EXPECT_LT(erased, 10350);
  // The mean area fraction is about (0.02 + 0.33) / 2 (some large draws
  // fail and are drawn again, which lowers it a little).
  EXPECT_NEAR(area_sum / erased / 2400, 0.175, 0.03);

  settings.p = 1;
  settings.scale_min = settings.scale_max = 1;
  SampleRandom random(3, 0, 0);
  EXPECT_FALSE(random_erasing::Draw(40, 60, 3, settings, random).has_value())
      << "a rectangle of the whole area never fits strictly inside";
}

TEST(RandomErasingTest, RandomValuesAreStandardNormal) {
  Settings settings;
  settings.p = 1;
  settings.random_value = true;
  double sum = 0, sum_sq = 0;
  size_t n = 0;
  for (int seed = 0; seed < 300; ++seed) {
    SampleRandom random(seed, 0, 0);
    const std::optional<Erasure> erasure = random_erasing::Draw(30, 30, 3, settings, random);
    if (!erasure) continue;
    ASSERT_EQ(erasure->values.size(),
              static_cast<size_t>(erasure->region.height) * erasure->region.width * 3);
    for (float v : erasure->values) {
      sum += v;
      sum_sq += static_cast<double>(v) * v;
      ++n;
    }
  }
  ASSERT_GT(n, 10000u);
  const double mean = sum / n;
  EXPECT_NEAR(mean, 0.0, 0.05);
  EXPECT_NEAR(sum_sq / n - mean * mean, 1.0, 0.05);
}

TEST(RandomErasingTest, ThePluginErasesWithChancePAndIsDeterministic) {
  auto always = testing::CreatePlugin<Transform>(Config("p: 1 value: [1, 2, 3]"));
  ASSERT_TRUE(always.ok()) << always.status();
  auto never = testing::CreatePlugin<Transform>(Config("p: 0"));
  ASSERT_TRUE(never.ok()) << never.status();
  const Image input = testing::U8Image(10, 10, 3, std::vector<uint8_t>(300, 200));
  for (uint64_t seed = 0; seed < 20; ++seed) {
    Image erased = input, again = input, kept = input;
    SampleRandom r0(seed, 0, 0), r1(seed, 0, 0), r2(seed, 0, 0);
    ASSERT_TRUE((*always)->Apply(erased, r0).ok());
    ASSERT_TRUE((*always)->Apply(again, r1).ok());
    ASSERT_TRUE((*never)->Apply(kept, r2).ok());
    EXPECT_EQ(erased.u8, again.u8);
    EXPECT_EQ(kept.u8, input.u8);
    for (size_t i = 0; i < erased.u8.size(); ++i) {
      ASSERT_TRUE(erased.u8[i] == 200 || erased.u8[i] == 1 + i % 3) << i;
    }
  }
}

TEST(RandomErasingTest, ImagesItCannotFillAreRefusedWhateverTheSeed) {
  auto random_value = testing::CreatePlugin<Transform>(Config("p: 0 random_value: true"));
  ASSERT_TRUE(random_value.ok()) << random_value.status();
  Image image = testing::CountingU8Image(4, 5, 3);
  SampleRandom random(1, 0, 0);
  EXPECT_EQ((*random_value)->Apply(image, random).message(),
            "random_erasing: random_value (standard normal noise) needs a float image, "
            "normalized as torchvision's RandomErasing expects; the 4x5x3 image is u8: put "
            "random_erasing after to_float and normalize");
  auto fraction = testing::CreatePlugin<Transform>(Config("p: 0 value: 0.5"));
  ASSERT_TRUE(fraction.ok()) << fraction.status();
  EXPECT_EQ((*fraction)->Apply(image, random).message(),
            "random_erasing: value 0.5 is not a uint8 value (an integer in [0, 255]) and the "
            "4x5x3 image is u8; put random_erasing after to_float for fractions");
  auto two = testing::CreatePlugin<Transform>(Config("p: 0 value: [1, 2]"));
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ((*two)->Apply(image, random).message(),
            "random_erasing: value has 2 values but the image has 3 channels (4x5x3); give 1 "
            "value (for every channel) or 3");
  Image floats = testing::F32Image(1, 1, 1, {0.5f});
  EXPECT_TRUE((*fraction)->Apply(floats, random).ok());
}

TEST(RandomErasingTest, ValidatorChecksTheOptions) {
  EXPECT_EQ(ValidationError("p: 1.5"), "options: random_erasing: p must be in [0, 1], got 1.5");
  EXPECT_EQ(ValidationError("scale_min: 0"),
            "options: random_erasing: scale_min must be in (0, 1] (a fraction of the image's "
            "area), got 0");
  EXPECT_EQ(ValidationError("scale_min: 0.5 scale_max: 0.4"),
            "options: random_erasing: scale_min (0.5) must be <= scale_max (0.4)");
  EXPECT_EQ(ValidationError("ratio_min: -1"),
            "options: random_erasing: ratio_min must be > 0 (height / width), got -1");
  EXPECT_EQ(ValidationError("ratio_min: 3 ratio_max: 2"),
            "options: random_erasing: ratio_min (3) must be <= ratio_max (2)");
  EXPECT_EQ(ValidationError("value: 1 random_value: true"),
            "options: random_erasing: set value or random_value, not both");
  EXPECT_EQ(ValidationError("value: inf"),
            "options: random_erasing: value must be finite, got inf");
}

}  // namespace
}  // namespace pipeline
