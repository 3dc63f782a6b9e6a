#include "plugins/transforms/rand_augment/rand_augment.h"

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
using ::pipeline::augment_ops::OpCall;
using ::pipeline::augment_ops::OpRange;
using ::pipeline::augment_ops::Warp;
using ::pipeline::rand_augment::Draws;
using ::pipeline::testing::TorchvisionFixture;

constexpr char kTestdata[] = "plugins/transforms/rand_augment/testdata/torchvision_";

std::string Config(const std::string& options) {
  return testing::PluginText("rand_augment", "RandAugmentOptions", options);
}

std::string ValidationError(const std::string& options) {
  return testing::ValidationMessage<Transform>(Config(options));
}

// torch.randint values as forward() consumes them: per op its index, then
// a sign only for signed ops; all must be used.
std::vector<Draws> DrawsFrom(const std::vector<OpRange>& space, int num_ops,
                             const std::vector<int>& values) {
  size_t next = 0;
  std::vector<Draws> draws(num_ops);
  for (Draws& d : draws) {
    d.op_index = values.at(next++);
    if (space.at(d.op_index).is_signed) d.negate = values.at(next++) == 1;
  }
  EXPECT_EQ(next, values.size()) << "draws left over";
  return draws;
}

absl::Status ApplyAll(Image& image, const std::vector<OpCall>& calls, const Warp& warp) {
  for (const OpCall& call : calls) {
    absl::Status status = augment_ops::ApplyOp(image, call, warp);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

// RandAugment.forward with its draws fixed, bit for bit (u8 only).
TEST(RandAugmentTest, ForwardWithFixedDrawsMatchesTorchvision) {
  struct Case {
    const char* fixture;
    int num_ops, magnitude, num_bins;
    Warp warp;
    std::vector<int> draws;
  };
  const Interpolation kNearest = Interpolation::kNearest, kBilinear = Interpolation::kBilinear;
  const std::vector<Case> cases = {
      {"defaults", 2, 9, 31, {kNearest, {}}, {1, 0, 11}},
      {"translate_contrast", 2, 9, 31, {kBilinear, {20, 30, 40}}, {4, 1, 8, 0}},
      {"three_ops", 3, 30, 31, {kBilinear, {128}}, {5, 1, 10, 9, 1}},
      {"zero_magnitude", 2, 0, 5, {kNearest, {}}, {3, 0, 12}},
      {"gray", 2, 14, 31, {kBilinear, {}}, {2, 0, 13}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.fixture);
    const TorchvisionFixture fixture = testing::ReadTorchvisionFixture(
        std::string(kTestdata) + "rand_augment_" + c.fixture + ".txt");
    Image image = fixture.input;
    const std::vector<OpRange> space =
        augment_ops::RandAugmentSpace(c.num_bins, image.height, image.width);
    const std::vector<OpCall> calls =
        rand_augment::CallsFor(space, c.magnitude, DrawsFrom(space, c.num_ops, c.draws));
    ASSERT_TRUE(ApplyAll(image, calls, c.warp).ok());
    EXPECT_TRUE(testing::ImagesNear(image, fixture.output, 0)) << fixture.call;
  }
}

// torchvision's distribution: each op uniform and independent, at the one
// magnitude, with a fair sign for signed ops; nothing else drawn.
TEST(RandAugmentTest, DrawsAreTorchvisionsDistribution) {
  const std::vector<OpRange> space = augment_ops::RandAugmentSpace(31, 32, 32);
  constexpr int kSamples = 14000;
  std::map<int, int> firsts, seconds;
  int signed_draws = 0, negated = 0, repeats = 0;
  for (int seed = 0; seed < kSamples; ++seed) {
    SampleRandom random(seed, 5, 1), again(seed, 5, 1);
    const std::vector<Draws> draws = rand_augment::Draw(space, 2, random);
    const std::vector<Draws> same = rand_augment::Draw(space, 2, again);
    ASSERT_EQ(draws.size(), 2u);
    for (int i = 0; i < 2; ++i) {
      ASSERT_EQ(draws[i].op_index, same[i].op_index);
      ASSERT_EQ(draws[i].negate, same[i].negate);
      const OpRange& range = space[draws[i].op_index];
      ASSERT_TRUE(range.is_signed || !draws[i].negate);
      if (range.is_signed) {
        ++signed_draws;
        negated += draws[i].negate;
      }
    }
    // Exactly the numbers torchvision draws: per op 1, or 2 if signed.
    SampleRandom skipped(seed, 5, 1);
    for (const Draws& d : draws) {
      for (int i = 0; i < 1 + space[d.op_index].is_signed; ++i) skipped.Below(2);
    }
    ASSERT_EQ(random.Uniform(), skipped.Uniform());
    ++firsts[draws[0].op_index];
    ++seconds[draws[1].op_index];
    if (draws[0].op_index == draws[1].op_index) ++repeats;
    // Every op at bin 9, signed as drawn.
    const std::vector<OpCall> calls = rand_augment::CallsFor(space, 9, draws);
    for (int i = 0; i < 2; ++i) {
      const double magnitude = augment_ops::MagnitudeAt(space[draws[i].op_index], 9);
      ASSERT_EQ(calls[i].magnitude, draws[i].negate ? -magnitude : magnitude);
    }
  }
  ASSERT_EQ(firsts.size(), 14u);
  ASSERT_EQ(seconds.size(), 14u);
  for (const auto* counts : {&firsts, &seconds}) {
    // 1000 expected; 5 standard deviations is about 155.
    for (const auto& [op, count] : *counts) EXPECT_NEAR(count, 1000, 155) << op;
  }
  // Independent draws: the same op twice 1/14 of the time (1000 +- 155).
  EXPECT_NEAR(repeats, 1000, 155);
  EXPECT_NEAR(static_cast<double>(negated) / signed_draws, 0.5, 0.02);
}

TEST(RandAugmentTest, TranslationFollowsTheImageSize) {
  // 150/331 of the side at the last bin, as torchvision's space.
  const std::vector<OpRange> space = augment_ops::RandAugmentSpace(31, 100, 331);
  EXPECT_FLOAT_EQ(augment_ops::MagnitudeAt(space[3], 30), 150.0f);
  EXPECT_FLOAT_EQ(augment_ops::MagnitudeAt(space[4], 30), 150.0f * 100 / 331);
}

TEST(RandAugmentTest, ThePluginAppliesTheDrawnOpsAndIsDeterministic) {
  auto augment = testing::CreatePlugin<Transform>(Config("num_ops: 3 magnitude: 20"));
  ASSERT_TRUE(augment.ok()) << augment.status();
  const Warp warp{Interpolation::kNearest, {}};
  const Image input = testing::CountingU8Image(9, 11, 3);
  const std::vector<OpRange> space = augment_ops::RandAugmentSpace(31, 9, 11);
  int changed = 0;
  for (uint64_t seed = 0; seed < 30; ++seed) {
    SampleRandom random(seed, 1, 2), again(seed, 1, 2), expected_random(seed, 1, 2);
    Image image = input, same = input, expected = input;
    ASSERT_TRUE((*augment)->Apply(image, random).ok());
    ASSERT_TRUE((*augment)->Apply(same, again).ok());
    const std::vector<Draws> draws = rand_augment::Draw(space, 3, expected_random);
    ASSERT_TRUE(ApplyAll(expected, rand_augment::CallsFor(space, 20, draws), warp).ok());
    EXPECT_EQ(image.u8, same.u8) << "seed " << seed;
    EXPECT_EQ(image.u8, expected.u8) << "seed " << seed;
    if (image.u8 != input.u8) ++changed;
  }
  EXPECT_GT(changed, 25);
  // num_ops 0 changes nothing.
  auto none = testing::CreatePlugin<Transform>(Config("num_ops: 0"));
  ASSERT_TRUE(none.ok()) << none.status();
  Image image = input;
  SampleRandom random(3, 0, 0);
  ASSERT_TRUE((*none)->Apply(image, random).ok());
  EXPECT_EQ(image.u8, input.u8);
}

TEST(RandAugmentTest, RefusesImagesTorchvisionRefuses) {
  auto augment = testing::CreatePlugin<Transform>(Config(""));
  ASSERT_TRUE(augment.ok()) << augment.status();
  SampleRandom random(1, 0, 0);
  Image f32 = testing::F32Image(2, 2, 3, std::vector<float>(12, 0.5f));
  EXPECT_EQ((*augment)->Apply(f32, random).message(),
            "rand_augment needs a u8 image, as torchvision's uint8 tensors (put it before "
            "to_float), got an f32 2x2x3 image");
  Image two = testing::CountingU8Image(3, 3, 2);
  EXPECT_EQ((*augment)->Apply(two, random).message(),
            "rand_augment needs an image of 1 or 3 channels, got 3x3x2");
}

TEST(RandAugmentTest, ValidatorChecksTheOptions) {
  EXPECT_EQ(ValidationError("num_magnitude_bins: 1 magnitude: 0"),
            "options: rand_augment: num_magnitude_bins must be >= 2 (each range's ends), got 1");
  EXPECT_EQ(ValidationError("magnitude: -1"),
            "options: rand_augment: magnitude must be in [0, num_magnitude_bins - 1] = [0, 30], "
            "got -1");
  EXPECT_EQ(ValidationError("magnitude: 10 num_magnitude_bins: 10"),
            "options: rand_augment: magnitude must be in [0, num_magnitude_bins - 1] = [0, 9], "
            "got 10");
  EXPECT_EQ(ValidationError("num_ops: -2"), "options: rand_augment: num_ops must be >= 0, got -2");
  EXPECT_EQ(ValidationError("fill: [1, 2, 300]"),
            "options: rand_augment: fill must be in [0, 255] (u8 values), got 300");
  EXPECT_TRUE(Registry<Transform>::Global()
                  .Validate(testing::ParsePluginConfig(
                      Config("magnitude: 30 num_magnitude_bins: 31 fill: [1, 2, 3]")))
                  .ok());
}

}  // namespace
}  // namespace pipeline
