#include "pipeline/data/loader.h"

#include <numeric>

#include "ATen/ops/empty.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/testing/plugin_test_util.h"

namespace pipeline {
namespace {

using ::testing::HasSubstr;

// Sample i is a 2x3x1 image whose pixels all equal i; index `broken` fails and
// `odd` comes out 3x3.
class CountingDataset : public Dataset {
 public:
  CountingDataset(int64_t size, int64_t broken = -1, int64_t odd = -1)
      : size_(size), broken_(broken), odd_(odd) {}
  int64_t size() const override { return size_; }
  absl::StatusOr<Sample> Get(int64_t index) const override {
    if (index == broken_) return absl::DataLossError("cat.jpg: truncated JPEG");
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
  int64_t size_, broken_, odd_;
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

// to_float and normalize at the end of the transforms run while the batch is
// written, with the very same arithmetic as their Apply.
TEST(LoaderTest, ChannelMapsRunInTheBatchWriteBitwiseAsTheTransforms) {
  ColorDataset dataset(12);
  RandomInvert invert;
  auto to_float = testing::CreatePlugin<Transform>(R"pb(name: "to_float")pb");
  auto normalize = testing::CreatePlugin<Transform>(R"pb(
    name: "normalize"
    options { [type.googleapis.com/pipeline.NormalizeOptions] { mean: [0.485, 0.456, 0.406] std: [0.229, 0.224, 0.225] } }
  )pb");
  ASSERT_TRUE(to_float.ok() && normalize.ok());
  ASSERT_TRUE((*to_float)->AsChannelMap() && (*normalize)->AsChannelMap());
  Loader loader(&dataset, {&invert, to_float->get(), normalize->get()},
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
  CountingDataset dataset(10, /*broken=*/6);
  Loader loader(&dataset, {}, {.batch_size = 4, .num_workers = 2});
  loader.StartEpoch(0, Range(10));
  ASSERT_TRUE(loader.Next().ok());
  auto batch = loader.Next();
  ASSERT_FALSE(batch.ok());
  EXPECT_EQ(batch.status().message(), "sample 6: cat.jpg: truncated JPEG");
}

TEST(LoaderTest, MixedImageSizesInABatchSayWhichTransformToAdd) {
  CountingDataset dataset(4, -1, /*odd=*/2);
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

}  // namespace
}  // namespace pipeline
