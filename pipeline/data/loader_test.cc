#include "pipeline/data/loader.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "ATen/Context.h"
#include "ATen/ops/empty.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/data/device_maps.h"
#include "pipeline/testing/plugin_test_util.h"
#include "pipeline/util/simd.h"
#include "absl/strings/str_cat.h"

namespace pipeline {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Sample i is a 2x3x1 image whose pixels all equal i; the indices in `broken`
// fail (as "<i>.jpg") and `odd` comes out 3x3.
class CountingDataset : public Dataset {
 public:
  CountingDataset(int64_t size, std::set<int64_t> broken = {}, int64_t odd = -1)
      : size_(size), broken_(std::move(broken)), odd_(odd) {}
  int64_t size() const override { return size_; }
  absl::StatusOr<Sample> Get(int64_t index) const override {
    if (broken_.count(index) > 0) {
      return absl::DataLossError(absl::StrCat(index, ".jpg: truncated JPEG"));
    }
    Sample sample;
    sample.image.height = index == odd_ ? 3 : 2;
    sample.image.width = 3;
    sample.image.channels = 1;
    sample.image.u8.assign(sample.image.height * 3, static_cast<uint8_t>(index));
    sample.label = index % 3;
    return sample;
  }
  const std::vector<std::string>& class_names() const override { return names_; }

 private:
  int64_t size_;
  std::set<int64_t> broken_;
  int64_t odd_;
  std::vector<std::string> names_{"a", "b", "c"};
};

// Adds a random amount in [0, 1) to every float pixel.
class Jitter : public Transform {
 public:
  absl::Status Apply(Image& image, SampleRandom& random) const override {
    image.f32.resize(image.u8.size());
    for (size_t i = 0; i < image.u8.size(); ++i) image.f32[i] = image.u8[i] + random.Uniform();
    image.u8.clear();
    return absl::OkStatus();
  }
};

// Sample i is a 5x4 RGB image of varied pixels.
class ColorDataset : public CountingDataset {
 public:
  using CountingDataset::CountingDataset;
  absl::StatusOr<Sample> Get(int64_t index) const override {
    Sample sample;
    sample.image.height = 5;
    sample.image.width = 4;
    sample.image.channels = 3;
    for (int k = 0; k < 60; ++k) sample.image.u8.push_back(static_cast<uint8_t>(index * 31 + k * 37));
    sample.label = index % 3;
    return sample;
  }
};

// Inverts uint8 pixels with probability 1/2.
class RandomInvert : public Transform {
 public:
  absl::Status Apply(Image& image, SampleRandom& random) const override {
    if (random.Uniform() < 0.5) {
      for (uint8_t& v : image.u8) v = static_cast<uint8_t>(255 - v);
    }
    return absl::OkStatus();
  }
};

std::vector<int64_t> Range(int64_t n) {
  std::vector<int64_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

std::vector<Batch> Drain(Loader& loader) {
  std::vector<Batch> batches;
  while (true) {
    auto batch = loader.Next();
    EXPECT_TRUE(batch.ok()) << batch.status();
    if (!batch.ok() || !batch->has_value()) return batches;
    batches.push_back(std::move(**batch));
  }
}

TEST(LoaderTest, BatchesFollowTheSamplerOrder) {
  CountingDataset dataset(10);
  Loader loader(&dataset, {}, {.batch_size = 4, .num_workers = 3});
  std::vector<int64_t> order = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0};
  loader.StartEpoch(0, order);
  std::vector<Batch> batches = Drain(loader);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[0].images.sizes(), (std::vector<int64_t>{4, 1, 2, 3}));
  EXPECT_EQ(batches[2].images.size(0), 2);
  // uint8 pixels are scaled to [0, 1].
  EXPECT_FLOAT_EQ(batches[0].images[1][0][1][2].item<float>(), 8.0f / 255.0f);
  EXPECT_EQ(batches[1].labels[0].item<int64_t>(), 5 % 3);
}

TEST(LoaderTest, DropLastDropsTheIncompleteBatch) {
  CountingDataset dataset(10);
  Loader loader(&dataset, {}, {.batch_size = 4, .drop_last = true});
  EXPECT_EQ(loader.BatchesPerEpoch(10), 2);
  loader.StartEpoch(0, Range(10));
  EXPECT_EQ(Drain(loader).size(), 2u);
}

TEST(LoaderTest, OutputDoesNotDependOnTheNumberOfThreads) {
  CountingDataset dataset(50);
  Jitter jitter;
  auto run = [&](int workers) {
    Loader loader(&dataset, {&jitter}, {.batch_size = 8, .num_workers = workers, .seed = 5});
    loader.StartEpoch(2, Range(50));
    return Drain(loader);
  };
  std::vector<Batch> one = run(1), two = run(2), four = run(4);
  ASSERT_EQ(one.size(), four.size());
  ASSERT_EQ(one.size(), two.size());
  for (size_t i = 0; i < one.size(); ++i) {
    EXPECT_TRUE(one[i].images.equal(two[i].images));
    EXPECT_TRUE(one[i].images.equal(four[i].images));
  }
  // Another epoch draws other augmentation.
  Loader loader(&dataset, {&jitter}, {.batch_size = 8, .seed = 5});
  loader.StartEpoch(3, Range(50));
  EXPECT_FALSE(Drain(loader)[0].images.equal(one[0].images));
}

// to_float then normalize with ImageNet's mean and std: the trailing
// ChannelMaps a typical pipeline ends with.
struct ImageNetNormalization {
  ImageNetNormalization() {
    to_float = OrDie(testing::CreatePlugin<Transform>(R"pb(name: "to_float")pb"));
    normalize = OrDie(testing::CreatePlugin<Transform>(R"pb(
      name: "normalize"
      options { [type.googleapis.com/pipeline.NormalizeOptions] { mean: [0.485, 0.456, 0.406] std: [0.229, 0.224, 0.225] } }
    )pb"));
  }
  static std::unique_ptr<Transform> OrDie(absl::StatusOr<std::unique_ptr<Transform>> made) {
    EXPECT_TRUE(made.ok()) << made.status();
    return made.ok() ? std::move(*made) : nullptr;
  }
  std::unique_ptr<Transform> to_float, normalize;
};

// to_float and normalize at the end of the transforms run while the batch is
// written, with the very same arithmetic as their Apply.
TEST(LoaderTest, ChannelMapsRunInTheBatchWriteBitwiseAsTheTransforms) {
  ColorDataset dataset(12);
  RandomInvert invert;
  const ImageNetNormalization maps;
  ASSERT_TRUE(maps.to_float && maps.normalize);
  ASSERT_TRUE(maps.to_float->AsChannelMap() && maps.normalize->AsChannelMap());
  Loader loader(&dataset, {&invert, maps.to_float.get(), maps.normalize.get()},
                {.batch_size = 4, .num_workers = 2, .seed = 3});
  loader.StartEpoch(1, Range(12));
  std::vector<Batch> batches = Drain(loader);
  ASSERT_EQ(batches.size(), 3u);
  for (int64_t index = 0; index < 12; ++index) {
    // LoadSample applies every transform on its own.
    absl::StatusOr<Sample> sample = loader.LoadSample(index, 1);
    ASSERT_TRUE(sample.ok()) << sample.status();
    ASSERT_TRUE(sample->image.is_float());
    at::Tensor expected = at::empty({3, sample->image.height, sample->image.width}, at::kFloat);
    WriteChw(sample->image, expected.data_ptr<float>());
    EXPECT_TRUE(batches[index / 4].images[index % 4].equal(expected)) << index;
  }
}

// With the maps left to the device, batches leave as uint8 with the maps
// beside them, and applying those gives the batch the loader would have
// written.
TEST(LoaderTest, ChannelMapsLeftToTheDeviceGiveTheSameBatch) {
  ColorDataset dataset(12);
  RandomInvert invert;
  const ImageNetNormalization maps;
  ASSERT_TRUE(maps.to_float && maps.normalize);
  const std::vector<const Transform*> transforms = {&invert, maps.to_float.get(), maps.normalize.get()};
  Loader on_host(&dataset, transforms, {.batch_size = 4, .num_workers = 2, .seed = 3});
  Loader left(&dataset, transforms,
              {.batch_size = 4, .num_workers = 2, .seed = 3, .channel_maps_on_device = true});
  on_host.StartEpoch(1, Range(12));
  left.StartEpoch(1, Range(12));
  const std::vector<Batch> expected = Drain(on_host);
  const std::vector<Batch> got = Drain(left);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t b = 0; b < got.size(); ++b) {
    EXPECT_EQ(got[b].images.scalar_type(), at::kByte);
    ASSERT_EQ(got[b].device_maps.size(), 2u);
    EXPECT_TRUE(expected[b].device_maps.empty());
    const at::Tensor finished = FinishedImages(got[b], at::kCPU);
    EXPECT_EQ(finished.scalar_type(), at::kFloat);
    EXPECT_TRUE(finished.allclose(expected[b].images, 1e-6, 1e-6)) << b;
    EXPECT_TRUE(got[b].labels.equal(expected[b].labels)) << b;
  }
  // No maps at the end: nothing is left over, the batch is float.
  Loader plain(&dataset, {&invert}, {.batch_size = 4, .channel_maps_on_device = true});
  plain.StartEpoch(0, Range(4));
  const std::vector<Batch> unmapped = Drain(plain);
  ASSERT_EQ(unmapped.size(), 1u);
  EXPECT_EQ(unmapped[0].images.scalar_type(), at::kFloat);
  EXPECT_TRUE(unmapped[0].device_maps.empty());
}

// The batch write's AVX2 build does the same arithmetic as the baseline one:
// a run's batches do not depend on the machine's instruction set.
TEST(LoaderTest, BatchWriteIsBitwiseTheSameUnderBothBuilds) {
  const std::vector<ChannelMap> maps = {
      ChannelMap{.multiply = {1.0f / 255}, .takes_uint8 = true, .takes_float = false},
      ChannelMap{.subtract = {0.485f, 0.456f, 0.406f, 0.5f}, .divide = {0.229f, 0.224f, 0.225f, 0.3f}}};
  for (int channels : {1, 3, 4}) {
    Image image;
    image.height = 37;
    image.width = 61;  // more than one 1024-pixel chunk, and a remainder
    image.channels = channels;
    for (size_t i = 0; i < image.pixel_count() * channels; ++i) {
      image.u8.push_back(static_cast<uint8_t>(i * 7919 % 251));
    }
    std::vector<ChannelMap> fitting = maps;
    if (channels != 4) {
      fitting[1].subtract.resize(channels == 3 ? 3 : 1);
      fitting[1].divide.resize(channels == 3 ? 3 : 1);
    }
    std::vector<float> baseline(image.pixel_count() * channels), avx2(baseline.size());
    SetSimdLevelForTesting(SimdLevel::kBaseline);
    ASSERT_TRUE(WriteChwMapped(image, fitting, baseline.data()));
    SetSimdLevelForTesting(SimdLevel::kAvx2);
    ASSERT_TRUE(WriteChwMapped(image, fitting, avx2.data()));
    EXPECT_EQ(baseline, avx2) << channels << " channels";
    // And both are the maps applied one value at a time.
    for (int c = 0; c < channels; ++c) {
      for (size_t p = 0; p < image.pixel_count(); ++p) {
        float v = static_cast<float>(image.u8[p * channels + c]);
        for (const ChannelMap& map : fitting) {
          auto at = [c](const std::vector<float>& values) {
            return values.size() == 1 ? values[0] : values[c];
          };
          v = (v * at(map.multiply) - at(map.subtract)) / at(map.divide);
        }
        ASSERT_EQ(baseline[c * image.pixel_count() + p], v) << c << " " << p;
      }
    }
  }
}

// Batch memory is reused, but never while the trainer still holds the batch
// or any view of it.
TEST(LoaderTest, BatchMemoryIsReusedOnlyOnceNothingHoldsIt) {
  CountingDataset dataset(40);
  Loader loader(&dataset, {}, {.batch_size = 4, .num_workers = 2, .prefetch_batches = 1});
  // Held batches (and a view of one) keep their memory and their values.
  loader.StartEpoch(0, Range(40));
  std::vector<Batch> held = Drain(loader);
  ASSERT_EQ(held.size(), 10u);
  at::Tensor view = held[0].images.narrow(0, 1, 2);
  std::set<const void*> memory;
  for (const Batch& batch : held) memory.insert(batch.images.data_ptr());
  EXPECT_EQ(memory.size(), 10u);
  for (size_t b = 0; b < held.size(); ++b) {
    EXPECT_EQ(held[b].images[0][0][0][0].item<float>(), static_cast<float>(4 * b) * (1.0f / 255)) << b;
  }
  // Dropped ones are used again: an epoch taken one batch at a time needs
  // only the pool's few tensors.
  const void* view_memory = view.data_ptr();
  held.clear();
  loader.StartEpoch(1, Range(40));
  std::set<const void*> reused;
  while (true) {
    auto batch = loader.Next();
    ASSERT_TRUE(batch.ok());
    if (!batch->has_value()) break;
    reused.insert((*batch)->images.data_ptr());
    EXPECT_NE((*batch)->images.narrow(0, 1, 2).data_ptr(), view_memory);
  }
  EXPECT_LE(reused.size(), 5u);
  EXPECT_EQ(view[0][0][0][0].item<float>(), 1.0f * (1.0f / 255));
}

// Pinned batches need a CUDA build on a machine with a GPU; elsewhere the
// trainer never asks for them (Strategy::device() is not a CUDA device).
TEST(LoaderTest, PinnedBatchesHoldTheSameValues) {
  if (!at::hasCUDA()) GTEST_SKIP() << "pinned memory needs CUDA";
  CountingDataset dataset(12);
  Loader plain(&dataset, {}, {.batch_size = 4});
  Loader pinned(&dataset, {}, {.batch_size = 4, .pin_memory = true});
  plain.StartEpoch(0, Range(12));
  pinned.StartEpoch(0, Range(12));
  const std::vector<Batch> expected = Drain(plain);
  const std::vector<Batch> got = Drain(pinned);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t b = 0; b < got.size(); ++b) {
    EXPECT_TRUE(got[b].images.is_pinned()) << b;
    EXPECT_TRUE(got[b].labels.is_pinned()) << b;
    EXPECT_TRUE(got[b].images.equal(expected[b].images)) << b;
    EXPECT_TRUE(got[b].labels.equal(expected[b].labels)) << b;
  }
}

TEST(LoaderTest, BatchesAreNotPinnedUnlessAsked) {
  CountingDataset dataset(8);
  Loader loader(&dataset, {}, {.batch_size = 4});
  loader.StartEpoch(0, Range(8));
  for (const Batch& batch : Drain(loader)) {
    EXPECT_FALSE(batch.images.is_pinned());
    EXPECT_FALSE(batch.labels.is_pinned());
  }
}

TEST(LoaderTest, NormalizeOnUint8PixelsStillSaysToAddToFloat) {
  CountingDataset dataset(4);
  auto normalize = testing::CreatePlugin<Transform>(R"pb(
    name: "normalize"
    options { [type.googleapis.com/pipeline.NormalizeOptions] { mean: 0.5 std: 0.5 } }
  )pb");
  ASSERT_TRUE(normalize.ok());
  Loader loader(&dataset, {normalize->get()}, {.batch_size = 4});
  loader.StartEpoch(0, Range(4));
  auto batch = loader.Next();
  ASSERT_FALSE(batch.ok());
  EXPECT_THAT(batch.status().message(), HasSubstr("put a to_float transform before it"));
}

TEST(LoaderTest, ABrokenSampleNamesItsIndexAndFile) {
  CountingDataset dataset(10, /*broken=*/{6});
  Loader loader(&dataset, {}, {.batch_size = 4, .num_workers = 2});
  loader.StartEpoch(0, Range(10));
  ASSERT_TRUE(loader.Next().ok());
  auto batch = loader.Next();
  ASSERT_FALSE(batch.ok());
  EXPECT_EQ(batch.status().message(), "sample 6: 6.jpg: truncated JPEG");
}

TEST(LoaderTest, MixedImageSizesInABatchSayWhichTransformToAdd) {
  CountingDataset dataset(4, {}, /*odd=*/2);
  Loader loader(&dataset, {}, {.batch_size = 4});
  loader.StartEpoch(0, Range(4));
  auto batch = loader.Next();
  ASSERT_FALSE(batch.ok());
  EXPECT_THAT(batch.status().message(),
              HasSubstr("sample 2 is 3x3x1 (HxWxC) after its transforms but sample 0 of the same "
                        "batch is 2x3x1; add a resize"));
}

TEST(LoaderTest, LabelMapAndRestartingAnEpoch) {
  CountingDataset dataset(6);
  Loader loader(&dataset, {}, {.batch_size = 6, .label_map = {2, 0, 1}});
  loader.StartEpoch(0, Range(6));
  loader.StartEpoch(1, Range(6));  // abandons epoch 0 mid-way
  std::vector<Batch> batches = Drain(loader);
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_EQ(batches[0].labels[0].item<int64_t>(), 2);
  EXPECT_EQ(batches[0].labels[1].item<int64_t>(), 0);
}

// The sample each row of `batch` holds (its pixels equal its index).
std::vector<int64_t> Rows(const Batch& batch) {
  std::vector<int64_t> rows;
  for (int64_t i = 0; i < batch.images.size(0); ++i) {
    rows.push_back(std::lround(batch.images[i][0][0][0].item<float>() * 255.0f));
  }
  return rows;
}

std::vector<int64_t> SkippedIndices(const SkippedSamples& skipped) {
  std::vector<int64_t> indices;
  for (const SkippedSample& sample : skipped.first) indices.push_back(sample.index);
  return indices;
}

TEST(LoaderTest, ReplaceFillsTheBatchWithTheNextSampleThatLoads) {
  CountingDataset dataset(10, /*broken=*/{2, 3, 9});
  Loader loader(&dataset, {},
                {.batch_size = 4, .num_workers = 2, .on_bad_sample = BadSamplePolicy::kReplace});
  loader.StartEpoch(0, Range(10));
  std::vector<Batch> batches = Drain(loader);
  ASSERT_EQ(batches.size(), 3u);
  // 2 and 3 become 4 (the next good one); 9, the last, wraps around to 0.
  EXPECT_THAT(Rows(batches[0]), ElementsAre(0, 1, 4, 4));
  EXPECT_THAT(Rows(batches[1]), ElementsAre(4, 5, 6, 7));
  EXPECT_THAT(Rows(batches[2]), ElementsAre(8, 0));
  EXPECT_EQ(batches[0].labels[2].item<int64_t>(), 4 % 3);  // the label comes along
  EXPECT_EQ(loader.skipped().count, 3);
  EXPECT_THAT(SkippedIndices(loader.skipped()), ElementsAre(2, 3, 9));
  EXPECT_EQ(loader.skipped().first[2].error, "sample 9: 9.jpg: truncated JPEG");
  // A new epoch starts a new count.
  loader.StartEpoch(1, {0, 1, 2});
  EXPECT_EQ(loader.skipped().count, 0);
  Drain(loader);
  EXPECT_EQ(loader.skipped().count, 1);
}

TEST(LoaderTest, ReplacementDoesNotDependOnTheNumberOfThreads) {
  std::set<int64_t> broken;
  for (int64_t i = 0; i < 200; i += 7) broken.insert(i);
  for (int64_t i = 100; i < 130; ++i) broken.insert(i);  // a run longer than a batch
  CountingDataset dataset(200, broken);
  Jitter jitter;
  std::vector<int64_t> order = Range(200);
  std::reverse(order.begin(), order.begin() + 100);
  auto run = [&](int workers, std::vector<int64_t>* skipped) {
    Loader loader(&dataset, {&jitter},
                  {.batch_size = 8, .num_workers = workers, .prefetch_batches = 3, .seed = 5,
                   .on_bad_sample = BadSamplePolicy::kReplace});
    loader.StartEpoch(2, order);
    std::vector<Batch> batches = Drain(loader);
    *skipped = SkippedIndices(loader.skipped());
    skipped->push_back(loader.skipped().count);
    return batches;
  };
  std::vector<int64_t> skipped_one, skipped_four;
  std::vector<Batch> one = run(1, &skipped_one), four = run(4, &skipped_four);
  ASSERT_EQ(one.size(), 25u);
  ASSERT_EQ(four.size(), 25u);
  for (size_t i = 0; i < one.size(); ++i) {
    EXPECT_EQ(one[i].images.size(0), 8);
    EXPECT_TRUE(one[i].images.equal(four[i].images)) << "batch " << i;
    EXPECT_TRUE(one[i].labels.equal(four[i].labels)) << "batch " << i;
  }
  EXPECT_EQ(skipped_one, skipped_four);
  EXPECT_EQ(skipped_one.back(), static_cast<int64_t>(broken.size()));
}

TEST(LoaderTest, DropLeavesTheSampleOutAndPassesOverAnEmptyBatch) {
  CountingDataset dataset(10, /*broken=*/{0, 1, 2, 3, 9});
  Loader loader(&dataset, {}, {.batch_size = 4, .on_bad_sample = BadSamplePolicy::kDrop});
  loader.StartEpoch(0, Range(10));
  std::vector<Batch> batches = Drain(loader);
  // Batch 0 held only broken samples.
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_THAT(Rows(batches[0]), ElementsAre(4, 5, 6, 7));
  EXPECT_THAT(Rows(batches[1]), ElementsAre(8));
  EXPECT_EQ(batches[1].labels.size(0), 1);
  EXPECT_EQ(loader.skipped().count, 5);
  EXPECT_THAT(SkippedIndices(loader.skipped()), ElementsAre(0, 1, 2, 3, 9));
}

TEST(LoaderTest, WhenNothingLoadsReplaceFailsInsteadOfLooping) {
  CountingDataset dataset(5, /*broken=*/{0, 1, 2, 3, 4});
  Loader loader(&dataset, {},
                {.batch_size = 2, .num_workers = 2, .on_bad_sample = BadSamplePolicy::kReplace});
  const std::string expected =
      "every one of the 5 samples failed to load, so on_bad_sample: SKIP has none to use "
      "instead; the first: sample 0: 0.jpg: truncated JPEG";
  EXPECT_EQ(loader.FirstSample(0).status().message(), expected);
  loader.StartEpoch(0, Range(5));
  auto batch = loader.Next();
  ASSERT_FALSE(batch.ok());
  EXPECT_EQ(batch.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(batch.status().message(), expected);
}

TEST(LoaderTest, FirstSampleFollowsThePolicy) {
  CountingDataset dataset(5, /*broken=*/{0, 1});
  Loader failing(&dataset, {}, {});
  EXPECT_EQ(failing.FirstSample(0).status().message(), "sample 0: 0.jpg: truncated JPEG");
  Loader replacing(&dataset, {}, {.on_bad_sample = BadSamplePolicy::kReplace});
  auto sample = replacing.FirstSample(0);
  ASSERT_TRUE(sample.ok()) << sample.status();
  EXPECT_EQ(sample->image.u8[0], 2);
}

TEST(LoaderTest, TheListOfSkippedSamplesIsBounded) {
  std::set<int64_t> broken;
  for (int64_t i = 0; i < 50; ++i) broken.insert(i);
  CountingDataset dataset(100, broken);
  Loader loader(&dataset, {},
                {.batch_size = 10, .num_workers = 2, .on_bad_sample = BadSamplePolicy::kReplace});
  loader.StartEpoch(0, Range(100));
  EXPECT_EQ(Drain(loader).size(), 10u);
  EXPECT_EQ(loader.skipped().count, 50);
  ASSERT_EQ(loader.skipped().first.size(), SkippedSamples::kMaxListed);
  EXPECT_EQ(loader.skipped().first.front().index, 0);
  EXPECT_EQ(loader.skipped().first.back().index, 19);
}

}  // namespace
}  // namespace pipeline
