#include "plugins/batch_transforms/mixup/mix.h"

#include <cmath>
#include <memory>

#include "gtest/gtest.h"
#include "pipeline/interfaces/batch_transform.h"
#include "pipeline/testing/plugin_test_util.h"
#include "torch/torch.h"

namespace pipeline {
namespace {

// Beta(a, a) has mean 1/2 and variance 1 / (4 (2a + 1)).
void ExpectBetaMoments(double alpha) {
  SampleRandom random(1, 2, 3);
  const int n = 40000;
  double sum = 0, squares = 0;
  for (int i = 0; i < n; ++i) {
    const double x = SampleBeta(alpha, random);
    ASSERT_TRUE(x >= 0 && x <= 1) << x;
    sum += x;
    squares += x * x;
  }
  const double mean = sum / n, variance = squares / n - mean * mean;
  EXPECT_NEAR(mean, 0.5, 0.01) << alpha;
  EXPECT_NEAR(variance, 1.0 / (4 * (2 * alpha + 1)), 0.01) << alpha;
}

TEST(MixTest, BetaVariatesHaveBetasMoments) {
  ExpectBetaMoments(0.2);  // shape < 1: the boosted Gamma
  ExpectBetaMoments(0.8);
  ExpectBetaMoments(1.0);
}

// timm's mixup_target: off = s / classes, on = 1 - s + off, rows mixed with
// the flipped batch's.
TEST(MixTest, TargetsAreTimmsMixupTarget) {
  const torch::Tensor labels = torch::tensor({0, 2}, torch::kLong);
  const torch::Tensor targets = MixTargets(labels, 3, 0.7, 0.1);
  const double off = 0.1 / 3, on = 1 - 0.1 + off;
  const torch::Tensor expected = torch::tensor(
      {{0.7 * on + 0.3 * off, off, 0.7 * off + 0.3 * on},
       {0.7 * off + 0.3 * on, off, 0.7 * on + 0.3 * off}}, torch::kFloat);
  EXPECT_TRUE(targets.allclose(expected, 1e-6, 1e-7)) << targets;
  EXPECT_TRUE(targets.sum(1).allclose(torch::ones({2}), 1e-6, 1e-6));
  // Soft targets from an earlier transform are mixed as they are.
  const torch::Tensor again = MixTargets(targets, 3, 0.5, 0.1);
  EXPECT_TRUE(again.allclose((targets + targets.flip(0)) / 2, 1e-6, 1e-7));
}

TEST(MixTest, MixupMixesEachImageWithItsMirror) {
  torch::Tensor images = torch::rand({3, 1, 2, 2});
  const torch::Tensor before = images.clone();
  MixupImages(images, 0.25);
  EXPECT_TRUE(images.allclose(0.25 * before + 0.75 * before.flip(0), 1e-6, 1e-6));
}

// rand_bbox: sides int(side * sqrt(1 - lam)), centred, clipped.
TEST(MixTest, CutmixBoxIsTimmsRandBbox) {
  SampleRandom random(7, 0, 0);
  for (int i = 0; i < 200; ++i) {
    const Box box = CutmixBox(8, 10, 0.75, random);  // cuts 4 x 5
    EXPECT_TRUE(0 <= box.y0 && box.y0 <= box.y1 && box.y1 <= 8);
    EXPECT_TRUE(0 <= box.x0 && box.x0 <= box.x1 && box.x1 <= 10);
    EXPECT_LE(box.y1 - box.y0, 4);
    EXPECT_LE(box.x1 - box.x0, 4);  // 5 / 2 = 2 each side of the centre
    if (box.y0 > 0 && box.y1 < 8) {
      EXPECT_EQ(box.y1 - box.y0, 4);
    }
  }
}

TEST(MixTest, CutmixPastesTheMirrorsBox) {
  torch::Tensor images = torch::arange(2 * 1 * 4 * 4, torch::kFloat).view({2, 1, 4, 4});
  const torch::Tensor before = images.clone();
  CutmixImages(images, Box{1, 3, 0, 2});
  using torch::indexing::Slice;
  EXPECT_TRUE(images.index({0, 0, Slice(1, 3), Slice(0, 2)})
                  .equal(before.index({1, 0, Slice(1, 3), Slice(0, 2)})));
  EXPECT_TRUE(images.index({0, 0, 0}).equal(before.index({0, 0, 0})));
  EXPECT_TRUE(images.index({1, 0, Slice(1, 3), Slice(0, 2)})
                  .equal(before.index({0, 0, Slice(1, 3), Slice(0, 2)})));
}

TEST(MixTest, UnmixedBatchesStillGetSmoothedTargets) {
  MixSettings settings;
  settings.mixup_alpha = 0.8;
  settings.prob = 0;
  torch::Tensor images = torch::rand({2, 1, 2, 2});
  const torch::Tensor before = images.clone();
  torch::Tensor targets = torch::tensor({1, 0}, torch::kLong);
  SampleRandom random(1, 1, 1);
  ASSERT_TRUE(ApplyMix(settings, 2, images, targets, random).ok());
  EXPECT_TRUE(images.equal(before));
  EXPECT_TRUE(targets.allclose(torch::tensor({{0.05f, 0.95f}, {0.95f, 0.05f}})));
}

// With cutmix corrected, the targets' mix is the pasted area's share.
TEST(MixTest, CutmixTargetsFollowThePastedArea) {
  MixSettings settings;
  settings.cutmix_alpha = 1.0;
  settings.label_smoothing = 0;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    torch::Tensor images = torch::stack({torch::zeros({1, 8, 8}), torch::ones({1, 8, 8})});
    torch::Tensor targets = torch::tensor({0, 1}, torch::kLong);
    SampleRandom random(seed, 0, 0);
    ASSERT_TRUE(ApplyMix(settings, 2, images, targets, random).ok());
    const double pasted = images[0].mean().item<double>();  // ones pasted into zeros
    EXPECT_NEAR(targets[0][1].item<double>(), pasted, 1e-6) << seed;
    EXPECT_NEAR(targets[0][0].item<double>(), 1 - pasted, 1e-6) << seed;
  }
}

TEST(MixTest, TheSameRandomStreamMixesTheSame) {
  auto mixed = [](uint64_t seed) {
    MixSettings settings;
    settings.mixup_alpha = 0.8;
    settings.cutmix_alpha = 1.0;
    torch::manual_seed(0);
    torch::Tensor images = torch::rand({4, 3, 6, 6});
    torch::Tensor targets = torch::tensor({0, 1, 2, 3}, torch::kLong);
    SampleRandom random(seed, 5, 0);
    EXPECT_TRUE(ApplyMix(settings, 4, images, targets, random).ok());
    return images;
  };
  EXPECT_TRUE(mixed(3).equal(mixed(3)));
  EXPECT_FALSE(mixed(3).equal(mixed(4)));
}

TEST(MixTest, RefusesABatchThatDoesNotFit) {
  MixSettings settings;
  settings.mixup_alpha = 0.8;
  auto message = [&](torch::Tensor images, torch::Tensor targets) {
    SampleRandom random(1, 1, 1);
    return std::string(ApplyMix(settings, 3, images, targets, random).message());
  };
  const torch::Tensor images = torch::rand({2, 1, 2, 2});
  EXPECT_EQ(message(images[0], torch::tensor({0}, torch::kLong)),
            "images [1, 2, 2] (Float): a batch is N x C x H x W float32");
  EXPECT_EQ(message(images.to(torch::kByte), torch::tensor({0, 1}, torch::kLong)),
            "images [2, 1, 2, 2] (Byte): a batch is N x C x H x W float32");
  EXPECT_EQ(message(images, torch::tensor({0}, torch::kLong)),
            "labels [1] for 2 images; they are N class indices");
  EXPECT_EQ(message(images, torch::tensor({0, 3}, torch::kLong)),
            "label 3 is not one of the 3 classes");
  EXPECT_EQ(message(images, torch::tensor({-1, 2}, torch::kLong)),
            "label -1 is not one of the 3 classes");
  EXPECT_EQ(message(images, torch::full({2, 4}, 0.25)),
            "soft targets [2, 4] for 2 images of 3 classes; they are N x classes");
  EXPECT_EQ(message(images, torch::Tensor()), "a batch without targets");
}

absl::StatusOr<std::unique_ptr<BatchTransform>> MakeMixup(const std::string& options,
                                                          int64_t classes) {
  return testing::CreatePlugin<BatchTransform>(
      "name: \"mixup\" options { [type.googleapis.com/pipeline.MixupOptions] { " + options +
          " } }",
      BatchTransformContext{classes});
}

TEST(MixupPluginTest, MixesABatchIntoSoftTargets) {
  auto mixup = MakeMixup("alpha: 0.8", 3);
  ASSERT_TRUE(mixup.ok()) << mixup.status();
  torch::Tensor images = torch::rand({4, 1, 2, 2});
  torch::Tensor targets = torch::tensor({0, 1, 2, 0}, torch::kLong);
  SampleRandom random(9, 0, 0);
  ASSERT_TRUE((*mixup)->Apply(images, targets, random).ok());
  EXPECT_EQ(targets.sizes(), (std::vector<int64_t>{4, 3}));
  EXPECT_TRUE(targets.sum(1).allclose(torch::ones({4}), 1e-6, 1e-6));
}

TEST(MixupPluginTest, BadOptionsNameTheFieldAndRange) {
  EXPECT_EQ(MakeMixup("alpha: -1", 3).status().message(), "options: alpha: -1; must be >= 0");
  EXPECT_EQ(MakeMixup("prob: 1.5", 3).status().message(), "options: prob: 1.5; must be in [0, 1]");
  EXPECT_EQ(MakeMixup("label_smoothing: 1", 3).status().message(),
            "options: label_smoothing: 1; must be in [0, 1)");
  EXPECT_EQ(MakeMixup("alpha: 0", 3).status().message(),
            "options: alpha: 0 mixes nothing; give it a value > 0 (timm: 0.8 for mixup, 1.0 for "
            "cutmix) or remove the batch transform");
  EXPECT_EQ(MakeMixup("", 1).status().message(),
            "batch_transform \"mixup\": mixing needs at least 2 classes, and the training data "
            "has 1");
}

}  // namespace
}  // namespace pipeline
