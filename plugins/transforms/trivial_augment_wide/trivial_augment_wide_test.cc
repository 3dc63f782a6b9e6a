#include "plugins/transforms/trivial_augment_wide/trivial_augment_wide.h"

#include <map>
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
using ::pipeline::augment_ops::OpRange;
using ::pipeline::augment_ops::Warp;
using ::pipeline::testing::TorchvisionFixture;
using ::pipeline::trivial_augment_wide::Draws;

constexpr char kTestdata[] = "plugins/transforms/trivial_augment_wide/testdata/torchvision_";

std::string Config(const std::string& options) {
  return testing::PluginText("trivial_augment_wide", "TrivialAugmentWideOptions", options);
}

std::string ValidationError(const std::string& options) {
  return testing::ValidationMessage<Transform>(Config(options));
}

// torch.randint values as forward() consumes them: the op index, a bin
// only for ops with a table, a sign only for signed ops; all must be used.
Draws DrawsFrom(const std::vector<OpRange>& space, const std::vector<int>& values) {
  size_t next = 0;
  Draws draws;
  draws.op_index = values.at(next++);
  const OpRange& range = space.at(draws.op_index);
  if (range.num_bins > 0) draws.bin = values.at(next++);
  if (range.is_signed) draws.negate = values.at(next++) == 1;
  EXPECT_EQ(next, values.size()) << "draws left over";
  return draws;
}

// TrivialAugmentWide.forward with its draws fixed, bit for bit (u8 only).
TEST(TrivialAugmentWideTest, ForwardWithFixedDrawsMatchesTorchvision) {
  struct Case {
    const char* fixture;
    int num_bins;
    Warp warp;
    std::vector<int> draws;
  };
  const Interpolation kNearest = Interpolation::kNearest, kBilinear = Interpolation::kBilinear;
  const std::vector<Case> cases = {
      {"shear_y", 31, {kBilinear, {}}, {2, 17, 1}},
      {"translate_x", 31, {kNearest, {7, 8, 9}}, {3, 2, 0}},
      {"rotate", 31, {kBilinear, {60}}, {5, 30, 1}},
      {"posterize", 31, {kNearest, {}}, {10, 29}},
      {"solarize", 31, {kNearest, {}}, {11, 12}},
      {"sharpness", 5, {kNearest, {}}, {9, 4, 0}},
      {"equalize_gray", 31, {kNearest, {}}, {13}},
      {"brightness_gray", 31, {kNearest, {}}, {6, 20, 1}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.fixture);
    const TorchvisionFixture fixture = testing::ReadTorchvisionFixture(
        std::string(kTestdata) + "trivial_augment_wide_" + c.fixture + ".txt");
    const std::vector<OpRange> space = augment_ops::TrivialAugmentWideSpace(c.num_bins);
    const augment_ops::OpCall call =
        trivial_augment_wide::CallFor(space, DrawsFrom(space, c.draws));
    Image image = fixture.input;
    ASSERT_TRUE(augment_ops::ApplyOp(image, call, c.warp).ok());
    EXPECT_TRUE(testing::ImagesNear(image, fixture.output, 0)) << fixture.call;
  }
}

// torchvision's distribution: a uniform op, a uniform bin of its table, a
// fair sign for signed ops; nothing else drawn.
TEST(TrivialAugmentWideTest, DrawsAreTorchvisionsDistribution) {
  const std::vector<OpRange> space = augment_ops::TrivialAugmentWideSpace(31);
  constexpr int kDraws = 28000;
  std::map<int, int> ops;
  std::map<int, int> rotate_bins;
  int signed_draws = 0, negated = 0;
  for (int seed = 0; seed < kDraws; ++seed) {
    SampleRandom random(seed, 2, 7), again(seed, 2, 7);
    const Draws draws = trivial_augment_wide::Draw(space, random);
    const Draws same = trivial_augment_wide::Draw(space, again);
    ASSERT_EQ(draws.op_index, same.op_index);
    ASSERT_EQ(draws.bin, same.bin);
    ASSERT_EQ(draws.negate, same.negate);
    const OpRange& range = space[draws.op_index];
    ++ops[draws.op_index];
    ASSERT_LT(draws.bin, std::max(range.num_bins, 1));
    ASSERT_TRUE(range.is_signed || !draws.negate);
    if (range.is_signed) {
      ++signed_draws;
      negated += draws.negate;
    }
    if (range.op == augment_ops::Op::kRotate) ++rotate_bins[draws.bin];
    // Exactly the numbers torchvision draws: 1, 2 or 3.
    SampleRandom skipped(seed, 2, 7);
    const int drawn = 1 + (range.num_bins > 0) + range.is_signed;
    for (int i = 0; i < drawn; ++i) skipped.Below(2);
    ASSERT_EQ(random.Uniform(), skipped.Uniform()) << augment_ops::OpName(range.op);
  }
  ASSERT_EQ(ops.size(), 14u);
  for (const auto& [op, count] : ops) {
    // 2000 expected; 5 standard deviations is about 215.
    EXPECT_NEAR(count, 2000, 215) << augment_ops::OpName(space[op].op);
  }
  ASSERT_EQ(rotate_bins.size(), 31u);
  for (const auto& [bin, count] : rotate_bins) EXPECT_NEAR(count, 2000 / 31.0, 40) << bin;
  EXPECT_NEAR(static_cast<double>(negated) / signed_draws, 0.5, 0.02);
}

TEST(TrivialAugmentWideTest, ThePluginAppliesTheDrawnOpAndIsDeterministic) {
  auto augment = testing::CreatePlugin<Transform>(Config("interpolation: BILINEAR fill: 30"));
  ASSERT_TRUE(augment.ok()) << augment.status();
  const std::vector<OpRange> space = augment_ops::TrivialAugmentWideSpace(31);
  const Warp warp{Interpolation::kBilinear, {30}};
  const Image input = testing::CountingU8Image(9, 11, 3);
  int changed = 0;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    SampleRandom random(seed, 1, 2), again(seed, 1, 2), expected_random(seed, 1, 2);
    Image image = input, same = input, expected = input;
    ASSERT_TRUE((*augment)->Apply(image, random).ok());
    ASSERT_TRUE((*augment)->Apply(same, again).ok());
    const Draws draws = trivial_augment_wide::Draw(space, expected_random);
    ASSERT_TRUE(
        augment_ops::ApplyOp(expected, trivial_augment_wide::CallFor(space, draws), warp).ok());
    EXPECT_EQ(image.u8, same.u8) << "seed " << seed;
    EXPECT_EQ(image.u8, expected.u8) << "seed " << seed;
    if (image.u8 != input.u8) ++changed;
  }
  EXPECT_GT(changed, 30);
}

TEST(TrivialAugmentWideTest, RefusesImagesTorchvisionRefuses) {
  auto augment = testing::CreatePlugin<Transform>(Config("fill: [1, 2, 3]"));
  ASSERT_TRUE(augment.ok()) << augment.status();
  SampleRandom random(1, 0, 0);
  Image f32 = testing::F32Image(2, 2, 1, {0, 0.5f, 1, 0.25f});
  EXPECT_EQ((*augment)->Apply(f32, random).message(),
            "trivial_augment_wide needs a u8 image, as torchvision's uint8 tensors (put it "
            "before to_float), got an f32 2x2x1 image");
  Image rgba = testing::CountingU8Image(3, 3, 4);
  EXPECT_EQ((*augment)->Apply(rgba, random).message(),
            "trivial_augment_wide needs an image of 1 or 3 channels, got 3x3x4");
  Image gray = testing::CountingU8Image(3, 3, 1);
  EXPECT_EQ((*augment)->Apply(gray, random).message(),
            "trivial_augment_wide: fill has 3 values but the image has 1 channels (3x3x1); "
            "give 1 value or 1");
}

TEST(TrivialAugmentWideTest, ValidatorChecksTheOptions) {
  EXPECT_EQ(ValidationError("num_magnitude_bins: 1"),
            "options: trivial_augment_wide: num_magnitude_bins must be >= 2 (each range's "
            "ends), got 1");
  EXPECT_EQ(ValidationError("fill: 256"),
            "options: trivial_augment_wide: fill must be in [0, 255] (u8 values), got 256");
  EXPECT_EQ(ValidationError("fill: [1, 2]"),
            "options: trivial_augment_wide: fill takes 1 value or one per channel (1 or 3), got "
            "2");
  EXPECT_TRUE(Registry<Transform>::Global()
                  .Validate(testing::ParsePluginConfig(Config("num_magnitude_bins: 2 fill: 0")))
                  .ok());
}

}  // namespace
}  // namespace pipeline
