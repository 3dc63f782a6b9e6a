#include "pipeline/testing/transform_conformance.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "pipeline/interfaces/image.h"
#include "pipeline/interfaces/random.h"
#include "pipeline/interfaces/transform.h"
#include "pipeline/testing/conformance_config.h"
#include "pipeline/testing/image_checks.h"

namespace pipeline {
namespace testing {

void PrintTo(const TransformConformanceParams& params, std::ostream* out) {
  *out << "transform \"" << params.plugin << "\" with options {" << params.options << "}";
}

std::string TransformConformanceTestName(
    const ::testing::TestParamInfo<TransformConformanceParams>& info) {
  return ConformanceInstanceName(info.index);
}

namespace {

constexpr int kSeeds = 24;
constexpr int kThreads = 4;

// The random stream of sample `index` in epoch 1 of a run with `seed`.
SampleRandom RandomFor(int seed, int index = 0) { return SampleRandom(seed, 1, index); }

// Pseudo-random pixels, the same every run: u8 over [0, 255], f32 in [0, 1].
Image MakeImage(int height, int width, int channels, bool is_float, uint64_t salt) {
  Image image;
  image.height = height;
  image.width = width;
  image.channels = channels;
  SampleRandom random(salt, 0, 0);
  const size_t count = static_cast<size_t>(height) * width * channels;
  if (is_float) {
    image.f32.resize(count);
    for (float& v : image.f32) v = static_cast<float>(random.Uniform());
  } else {
    image.u8.resize(count);
    for (uint8_t& v : image.u8) v = static_cast<uint8_t>(random.Below(256));
  }
  return image;
}

// u8 and f32, 1 and 3 channels; odd, non-square sizes so off-by-one crops and
// rounding show.
std::vector<Image> RepresentativeImages() {
  std::vector<Image> images;
  for (bool is_float : {false, true}) {
    for (int channels : {1, 3}) {
      images.push_back(MakeImage(13, 17, channels, is_float, images.size() + 1));
    }
  }
  return images;
}

absl::StatusOr<std::unique_ptr<Transform>> Create(const TransformConformanceParams& params) {
  absl::StatusOr<PluginConfig> config = ConformanceConfig<Transform>(params.plugin, params.options);
  if (!config.ok()) return config.status();
  return Registry<Transform>::Global().Create(*config, TransformContext{});
}

struct Applied {
  absl::Status status;
  Image image;
};

Applied ApplyCopy(const Transform& transform, const Image& input, SampleRandom random) {
  Applied applied{absl::OkStatus(), input};
  applied.status = transform.Apply(applied.image, random);
  return applied;
}

// The representative images the transform takes (Apply succeeds on).
std::vector<Image> Accepted(const Transform& transform) {
  std::vector<Image> accepted;
  for (const Image& image : RepresentativeImages()) {
    if (ApplyCopy(transform, image, RandomFor(0)).status.ok()) accepted.push_back(image);
  }
  return accepted;
}

#define CREATE_OR_RETURN(transform)                                            \
  absl::StatusOr<std::unique_ptr<Transform>> created_ = Create(GetParam());    \
  ASSERT_TRUE(created_.ok()) << created_.status();                             \
  const Transform& transform = **created_

TEST_P(TransformConformanceTest, TakesARepresentativeImageAndGivesAWellFormedOne) {
  CREATE_OR_RETURN(transform);
  int taken = 0;
  std::string refusals;
  for (const Image& image : RepresentativeImages()) {
    const Applied applied = ApplyCopy(transform, image, RandomFor(0));
    if (!applied.status.ok()) {
      EXPECT_FALSE(applied.status.message().empty()) << Describe(image);
      absl::StrAppend(&refusals, "\n  ", Describe(image), ": ", applied.status.ToString());
      continue;
    }
    ++taken;
    EXPECT_TRUE(WellFormed(applied.image, "output").ok())
        << Describe(image) << ": " << WellFormed(applied.image, "output");
  }
  EXPECT_GT(taken, 0) << "the transform refused every representative image:" << refusals;
}

TEST_P(TransformConformanceTest, TheSameSeedGivesBitwiseTheSameOutput) {
  CREATE_OR_RETURN(transform);
  // A second instance from the same config: nothing random may be drawn
  // when a transform is built.
  absl::StatusOr<std::unique_ptr<Transform>> second = Create(GetParam());
  ASSERT_TRUE(second.ok()) << second.status();
  for (const Image& image : Accepted(transform)) {
    for (int seed = 0; seed < kSeeds; ++seed) {
      const Applied first = ApplyCopy(transform, image, RandomFor(seed, seed % 5));
      const Applied again = ApplyCopy(transform, image, RandomFor(seed, seed % 5));
      const Applied other = ApplyCopy(**second, image, RandomFor(seed, seed % 5));
      ASSERT_TRUE(first.status.ok()) << Describe(image) << " seed " << seed << ": "
                                     << first.status;
      ASSERT_TRUE(again.status.ok()) << again.status;
      ASSERT_TRUE(other.status.ok()) << other.status;
      // The first difference only: the rest would say the same.
      ASSERT_TRUE(Same(first.image, again.image))
          << Describe(image) << " seed " << seed << ": the same seed gave another output";
      ASSERT_TRUE(Same(first.image, other.image))
          << Describe(image) << " seed " << seed << ": a second instance gave another output";
    }
  }
}

TEST_P(TransformConformanceTest, OutputShapeAndTypeDependOnlyOnTheInputShape) {
  CREATE_OR_RETURN(transform);
  for (const Image& image : Accepted(transform)) {
    // Other pixels of the same shape and type.
    const Image other = MakeImage(image.height, image.width, image.channels, image.is_float(), 99);
    const Applied reference = ApplyCopy(transform, image, RandomFor(0));
    ASSERT_TRUE(reference.status.ok()) << reference.status;
    for (int seed = 0; seed < kSeeds; ++seed) {
      for (const Image* input : {&image, &other}) {
        const Applied applied = ApplyCopy(transform, *input, RandomFor(seed, seed));
        ASSERT_TRUE(applied.status.ok()) << Describe(*input) << " seed " << seed << ": "
                                         << applied.status;
        ASSERT_EQ(Describe(applied.image), Describe(reference.image))
            << "input " << Describe(*input) << ", seed " << seed
            << ": samples of one shape must come out in one shape, to stack into a batch";
      }
    }
  }
}

TEST_P(TransformConformanceTest, ApplyingFromSeveralThreadsAtOnceEqualsApplyingInTurn) {
  CREATE_OR_RETURN(transform);
  const std::vector<Image> inputs = Accepted(transform);
  ASSERT_FALSE(inputs.empty());
  // Job j: input j % inputs, seed j.
  constexpr int kJobs = 64;
  std::vector<Image> sequential(kJobs);
  for (int j = 0; j < kJobs; ++j) {
    Applied applied = ApplyCopy(transform, inputs[j % inputs.size()], RandomFor(j, j));
    ASSERT_TRUE(applied.status.ok()) << applied.status;
    sequential[j] = std::move(applied.image);
  }
  // Every thread runs every job, each in its own order, several times over.
  std::vector<std::vector<std::string>> mismatches(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 4; ++round) {
        for (int k = 0; k < kJobs; ++k) {
          const int j = (k * (2 * t + 1) + round) % kJobs;
          const Applied applied =
              ApplyCopy(transform, inputs[j % inputs.size()], RandomFor(j, j));
          if (!applied.status.ok() || !Same(applied.image, sequential[j])) {
            mismatches[t].push_back(absl::StrCat("job ", j, " in round ", round, ": ",
                                                 applied.status.ToString()));
          }
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_TRUE(mismatches[t].empty())
        << "thread " << t << " got other results than applying in turn, first "
        << mismatches[t].front() << " (" << mismatches[t].size() << " in all)";
  }
}

float At(const std::vector<float>& values, int channel) {
  return values.size() == 1 ? values[0] : values[channel];
}

TEST_P(TransformConformanceTest, AChannelMapIsExactlyApply) {
  CREATE_OR_RETURN(transform);
  const std::optional<ChannelMap> map = transform.AsChannelMap();
  if (!map) GTEST_SKIP() << "not a ChannelMap";
  EXPECT_TRUE(map->takes_uint8 || map->takes_float) << "the map takes no image at all";
  int checked = 0;
  for (const Image& image : RepresentativeImages()) {
    const bool takes = image.is_float() ? map->takes_float : map->takes_uint8;
    SampleRandom random = RandomFor(7);
    Image applied = image;
    const absl::Status status = transform.Apply(applied, random);
    if (!takes) {
      EXPECT_FALSE(status.ok()) << "the map says it does not take " << Describe(image)
                                << ", but Apply took it";
      continue;
    }
    bool fits = true;
    for (const std::vector<float>* values : {&map->multiply, &map->subtract, &map->divide}) {
      EXPECT_FALSE(values->empty());
      if (values->size() != 1 && static_cast<int>(values->size()) != image.channels) fits = false;
    }
    if (!fits) continue;  // the loader runs Apply itself then
    ASSERT_TRUE(status.ok()) << "the map says it takes " << Describe(image)
                             << ", but Apply refused it: " << status;
    ++checked;
    // Apply draws no random numbers: the stream is where a fresh one starts.
    SampleRandom fresh = RandomFor(7);
    EXPECT_EQ(random.Uniform(), fresh.Uniform()) << "a ChannelMap's Apply drew random numbers";
    ASSERT_TRUE(applied.is_float()) << "a ChannelMap's Apply gives floats";
    ASSERT_EQ(applied.ShapeString(), image.ShapeString()) << "a ChannelMap keeps the shape";
    ASSERT_TRUE(WellFormed(applied, "output").ok()) << WellFormed(applied, "output");
    // The map, as transform.h and the loader's batch write compute it.
    Image mapped = applied;
    const int channels = image.channels;
    for (size_t i = 0; i < mapped.f32.size(); ++i) {
      const int c = static_cast<int>(i % channels);
      const float v = image.is_float() ? image.f32[i] : static_cast<float>(image.u8[i]);
      mapped.f32[i] = (v * At(map->multiply, c) - At(map->subtract, c)) / At(map->divide, c);
    }
    size_t differing = 0, first = 0;
    for (size_t i = 0; i < mapped.f32.size(); ++i) {
      if (std::memcmp(&mapped.f32[i], &applied.f32[i], 4) != 0 && differing++ == 0) first = i;
    }
    EXPECT_EQ(differing, 0u) << Describe(image) << ": " << differing
                             << " values differ from the map's, the first at " << first
                             << ": Apply " << applied.f32[first] << ", the map "
                             << mapped.f32[first];
  }
  EXPECT_GT(checked, 0) << "no representative image fits the map";
}

TEST_P(TransformConformanceTest, ARegionCropIsPlanRegionThenApplyToRegion) {
  CREATE_OR_RETURN(transform);
  const RegionCrop* crop = transform.AsRegionCrop();
  if (crop == nullptr) GTEST_SKIP() << "not a RegionCrop";
  const std::vector<Image> inputs = Accepted(transform);
  ASSERT_FALSE(inputs.empty());
  for (const Image& image : inputs) {
    for (int seed = 0; seed < kSeeds; ++seed) {
      SampleRandom for_apply = RandomFor(seed, seed);
      SampleRandom for_plan = RandomFor(seed, seed);
      Image applied = image;
      ASSERT_TRUE(transform.Apply(applied, for_apply).ok());
      const ImageRegion region = crop->PlanRegion(image.height, image.width, for_plan);
      EXPECT_EQ(for_apply.Uniform(), for_plan.Uniform())
          << "PlanRegion drew other random numbers than Apply, seed " << seed;
      ASSERT_TRUE(Inside(region, image.height, image.width))
          << "the planned region " << RegionString(region) << " is not inside the "
          << Describe(image) << " image, seed " << seed;
      // The whole image, and the region where the plan put it.
      Image whole = image;
      absl::Status status = crop->ApplyToRegion(whole, region);
      ASSERT_TRUE(status.ok()) << status;
      ASSERT_TRUE(Same(whole, applied))
          << Describe(image) << " seed " << seed << ", region " << RegionString(region)
          << ": ApplyToRegion's output (" << Describe(whole) << ") differs from Apply's ("
          << Describe(applied) << ")";
      // Only the region, as Dataset::GetRegion may hand it out.
      Image part = Cut(image, region);
      status = crop->ApplyToRegion(part, ImageRegion{0, 0, region.height, region.width});
      ASSERT_TRUE(status.ok()) << status;
      ASSERT_TRUE(Same(part, applied))
          << Describe(image) << " seed " << seed << ", region " << RegionString(region)
          << ": ApplyToRegion of the region alone differs from Apply";
    }
  }
  // A region reaching outside the image (a dataset may pass one on) is an
  // error, not a read past the pixels.
  for (const ImageRegion& outside :
       {ImageRegion{-1, 0, 4, 4}, ImageRegion{0, 0, 14, 4}, ImageRegion{10, 15, 4, 4},
        ImageRegion{0, 0, 0, 3}, ImageRegion{0, 0, 3, -2}}) {
    Image image = inputs.front();
    EXPECT_FALSE(crop->ApplyToRegion(image, outside).ok())
        << "ApplyToRegion took " << RegionString(outside) << " of a "
        << Describe(inputs.front()) << " image";
  }
}

TEST_P(TransformConformanceTest, EmptyOrMalformedImagesAreErrorsNotCrashes) {
  CREATE_OR_RETURN(transform);
  std::vector<std::pair<std::string, Image>> bad;
  bad.push_back({"a default Image", Image{}});
  for (bool is_float : {false, true}) {
    const std::string type = is_float ? "f32" : "u8";
    Image zero_height = MakeImage(1, 5, 3, is_float, 1);
    zero_height.height = 0;
    bad.push_back({"0x5x3 " + type + " (values left over)", zero_height});
    Image zero_channels = MakeImage(4, 5, 1, is_float, 2);
    zero_channels.channels = 0;
    bad.push_back({"4x5x0 " + type, zero_channels});
    Image negative = MakeImage(4, 5, 1, is_float, 3);
    negative.width = -5;
    bad.push_back({"4x-5x1 " + type, negative});
    Image short_buffer = MakeImage(4, 5, 3, is_float, 4);
    if (is_float) {
      short_buffer.f32.resize(7);
    } else {
      short_buffer.u8.resize(7);
    }
    bad.push_back({"4x5x3 " + type + " holding 7 values", short_buffer});
    Image long_buffer = MakeImage(4, 5, 1, is_float, 5);
    long_buffer.height = 2;
    bad.push_back({"2x5x1 " + type + " holding 20 values", long_buffer});
  }
  Image shape_only = MakeImage(4, 5, 3, false, 6);
  shape_only.u8.clear();
  bad.push_back({"4x5x3 with no pixels", shape_only});
  Image both = MakeImage(4, 5, 3, false, 7);
  both.f32.assign(both.u8.size(), 0.5f);
  bad.push_back({"4x5x3 holding both u8 and f32", both});

  for (auto& [what, image] : bad) {
    SampleRandom random = RandomFor(0);
    EXPECT_FALSE(transform.Apply(image, random).ok()) << "Apply took " << what;
    if (const RegionCrop* crop = transform.AsRegionCrop()) {
      Image again = image;
      EXPECT_FALSE(crop->ApplyToRegion(again, ImageRegion{0, 0, 1, 1}).ok())
          << "ApplyToRegion took " << what;
    }
  }
}

#undef CREATE_OR_RETURN

}  // namespace

// Plugins instantiate the suite from their own BUILD (conformance.bzl); this
// library's own test may not.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(TransformConformanceTest);

}  // namespace testing
}  // namespace pipeline
