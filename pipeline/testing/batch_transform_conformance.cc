#include "pipeline/testing/batch_transform_conformance.h"

#include <cmath>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "pipeline/interfaces/batch_transform.h"
#include "pipeline/interfaces/random.h"
#include "pipeline/testing/conformance_config.h"
#include "torch/types.h"
#include "torch/utils.h"

namespace pipeline {
namespace testing {

void PrintTo(const BatchTransformConformanceParams& params, std::ostream* out) {
  *out << "batch transform \"" << params.plugin << "\" with options {" << params.options << "}";
}

std::string BatchTransformConformanceTestName(
    const ::testing::TestParamInfo<BatchTransformConformanceParams>& info) {
  return ConformanceInstanceName(info.index);
}

namespace {

// More classes than images in a batch: the classes of no image show the
// label smoothing's floor.
constexpr int64_t kClasses = 10;
constexpr int kSeeds = 16;
// Pixels are in [0, 1]; float blends of them are off by a few ulps.
constexpr double kPixelTolerance = 1e-4;
constexpr double kMassTolerance = 1e-5;
// An image whose share of an output's targets is below this is not
// credited; its pixels can move the output by no more than kPixelTolerance.
constexpr double kCredited = 1e-5;
// A blend's weight is read off the pixels where its two images differ by
// more than kClearDifference: there float rounding moves it by less than
// kBlendTolerance.
constexpr double kClearDifference = 0.1;
constexpr double kBlendTolerance = 1e-3;

absl::StatusOr<std::unique_ptr<BatchTransform>> Create(
    const BatchTransformConformanceParams& params) {
  absl::StatusOr<PluginConfig> config =
      ConformanceConfig<BatchTransform>(params.plugin, params.options);
  if (!config.ok()) return config.status();
  return Registry<BatchTransform>::Global().Create(*config, BatchTransformContext{kClasses});
}

// Odd, non-square images, so that boxes off by one pixel show.
torch::Tensor RandomImages(int64_t count, uint64_t seed) {
  torch::manual_seed(seed);
  return torch::rand({count, 3, 7, 9});
}

torch::Tensor RandomLabels(int64_t count) {
  return torch::randint(kClasses, {count}, torch::kInt64);
}

torch::Tensor DistinctLabels(int64_t count) {
  return torch::randperm(kClasses, torch::kInt64).slice(0, 0, count);
}

// Class probabilities, as a batch transform before this one gives.
torch::Tensor SoftTargets(int64_t count, int64_t classes = kClasses) {
  return torch::softmax(torch::randn({count, classes}), 1);
}

std::string ShapeOf(const torch::Tensor& tensor) {
  if (!tensor.defined()) return "undefined";
  return absl::StrCat("[", absl::StrJoin(tensor.sizes(), ", "), "] ",
                      std::string(c10::toString(tensor.scalar_type())));
}

struct Mixed {
  absl::Status status;
  std::string thrown;  // what an exception said, "" when none escaped Apply
  torch::Tensor images;
  torch::Tensor targets;
};

// Apply to copies of `images` and `targets` with the stream of `seed`.
Mixed ApplyCopy(const BatchTransform& transform, const torch::Tensor& images,
                const torch::Tensor& targets, uint64_t seed) {
  Mixed mixed{absl::OkStatus(), "", images.defined() ? images.clone() : images,
              targets.defined() ? targets.clone() : targets};
  SampleRandom random(seed, /*epoch=*/1, /*index=*/0);
  try {
    mixed.status = transform.Apply(mixed.images, mixed.targets, random);
  } catch (const std::exception& e) {
    const std::string what = e.what();
    mixed.thrown = what.substr(0, what.find('\n'));
  }
  return mixed;
}

::testing::AssertionResult Succeeded(const Mixed& mixed) {
  if (!mixed.thrown.empty()) return ::testing::AssertionFailure() << "threw: " << mixed.thrown;
  if (!mixed.status.ok()) return ::testing::AssertionFailure() << mixed.status;
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult ClassRows(const torch::Tensor& targets, int64_t count) {
  if (targets.defined() && targets.is_floating_point() && targets.dim() == 2 &&
      targets.size(0) == count && targets.size(1) == kClasses) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure()
         << "targets " << ShapeOf(targets) << ", not " << count << " x " << kClasses << " floats";
}

// "{0.05, 0.95; 0.95, 0.05}": a tensor's values on one line, rows apart.
std::string Listed(const torch::Tensor& tensor) {
  const torch::Tensor values = tensor.to(torch::kDouble).contiguous();
  const int64_t row = values.dim() > 1 ? values.size(-1) : values.numel();
  std::string listed = "{";
  for (int64_t i = 0; i < values.numel(); ++i) {
    if (i > 0) absl::StrAppend(&listed, i % row == 0 ? "; " : ", ");
    absl::StrAppend(&listed, values.data_ptr<double>()[i]);
  }
  return listed + "}";
}

// "[n, c, y, x]" of the first true element of `mask`.
std::string FirstPosition(const torch::Tensor& mask) {
  const torch::Tensor first = mask.nonzero()[0];
  std::vector<int64_t> position(first.data_ptr<int64_t>(),
                                first.data_ptr<int64_t>() + first.numel());
  return absl::StrCat("[", absl::StrJoin(position, ", "), "]");
}

#define CREATE_OR_RETURN(transform)                                              \
  absl::StatusOr<std::unique_ptr<BatchTransform>> created_ = Create(GetParam()); \
  ASSERT_TRUE(created_.ok()) << created_.status();                               \
  const BatchTransform& transform = **created_

TEST_P(BatchTransformConformanceTest, TheSameRandomStreamGivesBitwiseTheSameBatch) {
  CREATE_OR_RETURN(transform);
  // A second instance from the same config: nothing random may be drawn
  // when a transform is built.
  absl::StatusOr<std::unique_ptr<BatchTransform>> second = Create(GetParam());
  ASSERT_TRUE(second.ok()) << second.status();
  const torch::Tensor images = RandomImages(6, 1);
  const torch::Tensor labels = RandomLabels(6);
  for (int seed = 0; seed < kSeeds; ++seed) {
    const Mixed first = ApplyCopy(transform, images, labels, seed);
    const Mixed again = ApplyCopy(transform, images, labels, seed);
    const Mixed other = ApplyCopy(**second, images, labels, seed);
    ASSERT_TRUE(Succeeded(first) && Succeeded(again) && Succeeded(other)) << "seed " << seed;
    // The first difference only: the rest would say the same.
    ASSERT_TRUE(first.images.equal(again.images) && first.targets.equal(again.targets))
        << "seed " << seed << ": the same stream gave another batch";
    ASSERT_TRUE(first.images.equal(other.images) && first.targets.equal(other.targets))
        << "seed " << seed << ": a second instance gave another batch";
  }
}

TEST_P(BatchTransformConformanceTest, ImagesKeepTheirShapeAndTargetsBecomeClassRows) {
  CREATE_OR_RETURN(transform);
  for (int64_t count : {6, 5, 2}) {
    const torch::Tensor images = RandomImages(count, count);
    for (const auto& [what, targets] : std::vector<std::tuple<std::string, torch::Tensor>>{
             {"labels", RandomLabels(count)}, {"soft targets", SoftTargets(count)}}) {
      SCOPED_TRACE(absl::StrCat(count, " images with ", what));
      const Mixed mixed = ApplyCopy(transform, images, targets, count);
      ASSERT_TRUE(Succeeded(mixed));
      EXPECT_EQ(ShapeOf(mixed.images), ShapeOf(images)) << "the images' shape or type changed";
      EXPECT_TRUE(ClassRows(mixed.targets, count));
    }
  }
}

// Finite, non-negative rows summing to 1.
::testing::AssertionResult Probabilities(const torch::Tensor& targets) {
  const torch::Tensor rows = targets.to(torch::kDouble);
  if (!rows.isfinite().all().item<bool>()) {
    return ::testing::AssertionFailure() << "targets not finite: " << Listed(targets);
  }
  if (rows.min().item<double>() < 0) {
    return ::testing::AssertionFailure() << "a negative target: " << Listed(targets);
  }
  if ((rows.sum(1) - 1).abs().max().item<double>() > kMassTolerance) {
    return ::testing::AssertionFailure()
           << "rows that do not sum to 1: sums " << Listed(rows.sum(1));
  }
  return ::testing::AssertionSuccess();
}

TEST_P(BatchTransformConformanceTest, TargetRowsAreProbabilities) {
  CREATE_OR_RETURN(transform);
  for (int seed = 0; seed < kSeeds; ++seed) {
    const int64_t count = seed % 2 == 0 ? 6 : 5;
    const torch::Tensor images = RandomImages(count, seed);
    const Mixed mixed = ApplyCopy(transform, images, RandomLabels(count), seed);
    ASSERT_TRUE(Succeeded(mixed)) << "seed " << seed;
    ASSERT_TRUE(ClassRows(mixed.targets, count)) << "seed " << seed;
    ASSERT_TRUE(Probabilities(mixed.targets)) << "seed " << seed << ", from labels";
    // Soft targets from a transform before, as a chain of two gives them.
    const Mixed chained = ApplyCopy(transform, mixed.images, mixed.targets, seed + kSeeds);
    ASSERT_TRUE(Succeeded(chained)) << "seed " << seed << ", from soft targets";
    ASSERT_TRUE(ClassRows(chained.targets, count)) << "seed " << seed;
    ASSERT_TRUE(Probabilities(chained.targets)) << "seed " << seed << ", from soft targets";
  }
}

TEST_P(BatchTransformConformanceTest, EveryOutputPixelLiesWithinTheBatchsPixelsThere) {
  CREATE_OR_RETURN(transform);
  for (int64_t count : {6, 5, 2, 1}) {
    for (int seed = 0; seed < kSeeds; ++seed) {
      const torch::Tensor images = RandomImages(count, seed);
      const Mixed mixed = ApplyCopy(transform, images, RandomLabels(count), seed);
      // A batch of one may be refused (ABatchOfOneIsAnErrorOrComesBackUnmixed).
      if (count == 1 && mixed.thrown.empty() && !mixed.status.ok()) continue;
      ASSERT_TRUE(Succeeded(mixed)) << count << " images, seed " << seed;
      ASSERT_EQ(ShapeOf(mixed.images), ShapeOf(images));
      const torch::Tensor outside =
          mixed.images.lt(images.amin(0) - kPixelTolerance)
              .logical_or(mixed.images.gt(images.amax(0) + kPixelTolerance));
      const int64_t pixels = outside.sum().item<int64_t>();
      EXPECT_EQ(pixels, 0) << count << " images, seed " << seed << ": " << pixels
                           << " output values lie outside the inputs' range at their position, "
                              "the first at "
                           << (pixels > 0 ? FirstPosition(outside) : "");
      if (pixels > 0) return;  // the other seeds would say the same
    }
  }
}

// share[o][m]: the part of output o's targets that credits input image m,
// over the smoothing's floor (the value of the classes of no image in the
// batch), as a fraction of all the credit. `labels` are distinct.
::testing::AssertionResult Shares(const torch::Tensor& targets, const torch::Tensor& labels,
                                  torch::Tensor& share) {
  const torch::Tensor rows = targets.to(torch::kDouble);
  const torch::Tensor absent =
      torch::ones({kClasses}, torch::kBool).index_fill_(0, labels, false).nonzero().view(-1);
  const torch::Tensor floors = rows.index_select(1, absent);
  if ((floors.max() - floors.min()).item<double>() > kMassTolerance) {
    return ::testing::AssertionFailure()
           << "the classes of no image in the batch differ in value: targets " << Listed(targets)
           << " for labels " << Listed(labels);
  }
  const torch::Tensor credit = rows.index_select(1, labels) - floors.mean();
  if (credit.min().item<double>() < -kMassTolerance ||
      credit.sum(1).min().item<double>() <= kMassTolerance) {
    return ::testing::AssertionFailure()
           << "targets " << Listed(targets) << " are not a mix of the rows of labels "
           << Listed(labels);
  }
  share = credit.clamp_min(0) / credit.clamp_min(0).sum(1, /*keepdim=*/true);
  return ::testing::AssertionSuccess();
}

// Output o's pixels within the batch's range (the others are
// EveryOutputPixelLiesWithinTheBatchsPixelsThere's) lie within the range of
// the images its targets credit; and where it is one blend of two images at
// every pixel, its targets weigh them as the blend does.
::testing::AssertionResult MixesWhatItCredits(const torch::Tensor& images,
                                              const torch::Tensor& output,
                                              const torch::Tensor& share) {
  const torch::Tensor credited = share.gt(kCredited).nonzero().view(-1);
  const torch::Tensor sources = images.index_select(0, credited);
  const torch::Tensor in_batch = output.ge(images.amin(0) - kPixelTolerance)
                                     .logical_and(output.le(images.amax(0) + kPixelTolerance));
  const torch::Tensor uncredited =
      in_batch.logical_and(output.lt(sources.amin(0) - kPixelTolerance)
                               .logical_or(output.gt(sources.amax(0) + kPixelTolerance)));
  if (const int64_t pixels = uncredited.sum().item<int64_t>(); pixels > 0) {
    return ::testing::AssertionFailure()
           << pixels << " pixels lie outside the range of the images the targets credit ("
           << Listed(credited) << " with shares " << Listed(share) << "), the first at "
           << FirstPosition(uncredited);
  }
  if (credited.numel() != 2) return ::testing::AssertionSuccess();
  const int64_t i = credited[0].item<int64_t>(), j = credited[1].item<int64_t>();
  const torch::Tensor difference = images[i] - images[j];
  const torch::Tensor clear = difference.abs().gt(kClearDifference);
  const torch::Tensor weight = ((output - images[j]) / difference).masked_select(clear);
  if (weight.numel() == 0) return ::testing::AssertionSuccess();
  // Image i's weight at every clear pixel: one blend when it is the same
  // everywhere and strictly between 0 and 1 (a paste gives 0 or 1).
  const double low = weight.min().item<double>(), high = weight.max().item<double>();
  const bool one_blend =
      high - low < kBlendTolerance && low > kBlendTolerance && high < 1 - kBlendTolerance;
  if (one_blend &&
      std::abs(weight.mean().item<double>() - share[i].item<double>()) > kBlendTolerance) {
    return ::testing::AssertionFailure()
           << "the pixels blend images " << i << " and " << j << " as "
           << weight.mean().item<double>() << " : " << 1 - weight.mean().item<double>()
           << ", the targets credit them " << share[i].item<double>() << " : "
           << share[j].item<double>();
  }
  return ::testing::AssertionSuccess();
}

TEST_P(BatchTransformConformanceTest, TargetsCreditTheImagesMixedIntoEachOutput) {
  CREATE_OR_RETURN(transform);
  for (int seed = 0; seed < kSeeds; ++seed) {
    const int64_t count = seed % 2 == 0 ? 6 : 5;
    const torch::Tensor images = RandomImages(count, seed + 2 * kSeeds);
    const torch::Tensor labels = DistinctLabels(count);
    const Mixed mixed = ApplyCopy(transform, images, labels, seed);
    ASSERT_TRUE(Succeeded(mixed)) << "seed " << seed;
    ASSERT_TRUE(ClassRows(mixed.targets, count)) << "seed " << seed;
    torch::Tensor share;
    ASSERT_TRUE(Shares(mixed.targets, labels, share)) << "seed " << seed;
    for (int64_t o = 0; o < count; ++o) {
      ASSERT_TRUE(MixesWhatItCredits(images, mixed.images[o], share[o]))
          << "seed " << seed << ", output " << o << " of " << count;
    }
  }
}

TEST_P(BatchTransformConformanceTest, ABatchOfOneIsAnErrorOrComesBackUnmixed) {
  CREATE_OR_RETURN(transform);
  constexpr int64_t kLabel = 4;
  const torch::Tensor images = RandomImages(1, 3);
  for (int seed = 0; seed < kSeeds; ++seed) {
    const Mixed mixed = ApplyCopy(transform, images, torch::full({1}, kLabel, torch::kInt64), seed);
    ASSERT_TRUE(mixed.thrown.empty()) << "seed " << seed << ": threw " << mixed.thrown;
    if (!mixed.status.ok()) {
      EXPECT_FALSE(mixed.status.message().empty()) << "an error without a message";
      continue;
    }
    // Its pixels: EveryOutputPixelLiesWithinTheBatchsPixelsThere.
    ASSERT_TRUE(ClassRows(mixed.targets, 1)) << "seed " << seed;
    const torch::Tensor row = mixed.targets[0].to(torch::kDouble);
    const torch::Tensor others = torch::cat({row.slice(0, 0, kLabel), row.slice(0, kLabel + 1)});
    EXPECT_TRUE((others.max() - others.min()).item<double>() <= kMassTolerance &&
                row[kLabel].item<double>() > others.max().item<double>())
        << "seed " << seed << ": the targets " << Listed(mixed.targets) << " of an image of class "
        << kLabel << " credit another class";
  }
}

TEST_P(BatchTransformConformanceTest, InputsThatDoNotFitAreErrorsNotExceptions) {
  CREATE_OR_RETURN(transform);
  const torch::Tensor images = RandomImages(6, 4);
  const torch::Tensor labels = RandomLabels(6);
  torch::Tensor beyond = labels.clone(), negative = labels.clone();
  beyond[2] = kClasses;
  negative[3] = -1;
  const std::vector<std::tuple<std::string, torch::Tensor, torch::Tensor>> misfits = {
      {"an image without a batch dimension", images[0], labels.slice(0, 0, 3)},
      {"five-dimensional images", images.unsqueeze(1), labels},
      {"uint8 images", images.mul(255).to(torch::kByte), labels},
      {"5 labels for 6 images", images, labels.slice(0, 0, 5)},
      {"labels of 6 x 1", images, labels.unsqueeze(1)},
      {"labels as floats", images, labels.to(torch::kFloat)},
      {"a label beyond the classes", images, beyond},
      {"a negative label", images, negative},
      {"soft targets for 5 of 6 images", images, SoftTargets(5)},
      {"soft targets of another number of classes", images, SoftTargets(6, kClasses + 1)},
      {"no targets", images, torch::Tensor()},
  };
  for (const auto& [what, bad_images, bad_targets] : misfits) {
    const Mixed mixed = ApplyCopy(transform, bad_images, bad_targets, 0);
    if (!mixed.thrown.empty()) {
      ADD_FAILURE() << what << " (images " << ShapeOf(bad_images) << ", targets "
                    << ShapeOf(bad_targets) << "): threw " << mixed.thrown;
    } else {
      EXPECT_FALSE(mixed.status.ok()) << "Apply took " << what << " (images " << ShapeOf(bad_images)
                                      << ", targets " << ShapeOf(bad_targets) << ")";
    }
  }
}

#undef CREATE_OR_RETURN

}  // namespace

// Plugins instantiate the suite from their own BUILD (conformance.bzl).
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(BatchTransformConformanceTest);

}  // namespace testing
}  // namespace pipeline
