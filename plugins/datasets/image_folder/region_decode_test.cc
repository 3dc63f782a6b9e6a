// The loader with a random_resized_crop first, on a real image_folder: each
// crop's part of a JPEG is decoded alone (Dataset::GetRegion), and the
// batches are bit for bit those of decoding every image whole.

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "pipeline/data/loader.h"
#include "pipeline/image/image_codec.h"
#include "pipeline/interfaces/dataset.h"
#include "pipeline/interfaces/transform.h"
#include "pipeline/testing/plugin_test_util.h"

namespace pipeline {
namespace {

namespace fs = std::filesystem;


// The dataset without its GetRegion: every image decoded whole.
class WholeDecodes : public Dataset {
 public:
  explicit WholeDecodes(const Dataset* dataset) : dataset_(dataset) {}
  int64_t size() const override { return dataset_->size(); }
  absl::StatusOr<Sample> Get(int64_t index) const override { return dataset_->Get(index); }
  const std::vector<std::string>& class_names() const override {
    return dataset_->class_names();
  }

 private:
  const Dataset* dataset_;
};

// The loader's batches over 3 epochs from an image_folder with `options`
// added, against those of decoding every image whole.
void ExpectTheBatchesOfWholeDecodes(const std::string& options) {
  const fs::path root = fs::path(::testing::TempDir()) / "region_decode";
  fs::remove_all(root);
  uint32_t state = 5;
  for (int i = 0; i < 12; ++i) {
    Image image;
    image.height = 120 + 17 * i;
    image.width = 160 - 5 * i;
    image.channels = 3;
    image.u8.resize(image.pixel_count() * 3);
    for (size_t p = 0; p < image.u8.size(); ++p) {
      state = state * 1664525u + 1013904223u;
      image.u8[p] = static_cast<uint8_t>((p / 3 % 97) + (state >> 26));
    }
    const fs::path path = root / (i % 2 ? "cat" : "dog") / ("img" + std::to_string(i) + ".jpg");
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << *EncodeJpeg(image, i % 3 == 0 ? 95 : 75);
  }
  auto dataset = testing::CreatePlugin<Dataset>(
      "name: \"image_folder\" options { [type.googleapis.com/pipeline.ImageFolderOptions] { "
      "root: \"" + root.string() + "\" color: RGB " + options + " } }");
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  std::vector<std::unique_ptr<Transform>> owned;
  for (const char* config : {
           R"pb(name: "random_resized_crop"
                options { [type.googleapis.com/pipeline.RandomResizedCropOptions] { size: 48 } })pb",
           R"pb(name: "random_horizontal_flip")pb", R"pb(name: "to_float")pb"}) {
    auto transform = testing::CreatePlugin<Transform>(config);
    ASSERT_TRUE(transform.ok()) << transform.status();
    owned.push_back(*std::move(transform));
  }
  ASSERT_NE(owned[0]->AsRegionCrop(), nullptr);
  const std::vector<const Transform*> transforms = {owned[0].get(), owned[1].get(),
                                                    owned[2].get()};
  const WholeDecodes whole(dataset->get());
  Loader cropped_loader(dataset->get(), transforms, {.batch_size = 5, .num_workers = 2, .seed = 9});
  Loader whole_loader(&whole, transforms, {.batch_size = 5, .num_workers = 2, .seed = 9});
  std::vector<int64_t> order(12);
  for (int64_t i = 0; i < 12; ++i) order[i] = (i * 5) % 12;
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    cropped_loader.StartEpoch(epoch, order);
    whole_loader.StartEpoch(epoch, order);
    int batches = 0;
    while (true) {
      auto cropped = cropped_loader.Next();
      auto expected = whole_loader.Next();
      ASSERT_TRUE(cropped.ok() && expected.ok());
      ASSERT_EQ(cropped->has_value(), expected->has_value());
      if (!cropped->has_value()) break;
      EXPECT_TRUE((*cropped)->images.equal((*expected)->images)) << "epoch " << epoch;
      EXPECT_TRUE((*cropped)->labels.equal((*expected)->labels));
      ++batches;
    }
    EXPECT_EQ(batches, 3);
  }
}

// A random_resized_crop first lets the loader decode only each crop's part
// of a JPEG; the batches are bit for bit those of decoding every image whole.
TEST(RegionDecodeTest, CropsDecodedAloneGiveTheBatchesOfWholeDecodes) {
  ExpectTheBatchesOfWholeDecodes("");
}

// With cache_decoded_mb, the first epoch decodes whole images and keeps
// them, the later ones crop from memory: the same batches again.
TEST(RegionDecodeTest, KeptDecodesGiveTheSameBatches) {
  ExpectTheBatchesOfWholeDecodes("cache_decoded_mb: 1");
}

}  // namespace
}  // namespace pipeline
