// Plugins that each break one rule of the transform and dataset conformance
// suites, instantiated with those suites: conformance_self_test runs this
// binary and checks that exactly the broken rules' tests fail, so the suites
// are known to catch what they claim to.

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/empty.pb.h"
#include "pipeline/interfaces/dataset.h"
#include "pipeline/interfaces/transform.h"
#include "pipeline/testing/dataset_conformance.h"
#include "pipeline/testing/transform_conformance.h"

namespace pipeline {
namespace testing {
namespace {

using google::protobuf::Empty;

absl::Status Check(const Image& image) {
  const size_t held = image.is_float() ? image.f32.size() : image.u8.size();
  if (image.height <= 0 || image.width <= 0 || image.channels <= 0 ||
      (!image.u8.empty() && !image.f32.empty()) ||
      held != image.pixel_count() * image.channels) {
    return absl::InvalidArgumentError("malformed image");
  }
  return absl::OkStatus();
}

Image Crop(const Image& image, const ImageRegion& r) {
  Image out;
  out.height = r.height;
  out.width = r.width;
  out.channels = image.channels;
  for (int y = 0; y < r.height; ++y) {
    for (int x = 0; x < r.width * image.channels; ++x) {
      const size_t from = (static_cast<size_t>(r.top + y) * image.width + r.left) *
                              image.channels + x;
      if (image.is_float()) {
        out.f32.push_back(image.f32[from]);
      } else {
        out.u8.push_back(image.u8[from]);
      }
    }
  }
  return out;
}

// Not deterministic: each call brightens the first value a little more.
class RandomState : public Transform {
 public:
  absl::Status Apply(Image& image, SampleRandom&) const override {
    RETURN_IF_ERROR(Check(image));
    const int step = ++calls_;
    if (image.is_float()) {
      image.f32[0] += step;
    } else {
      image.u8[0] = static_cast<uint8_t>(image.u8[0] + step);
    }
    return absl::OkStatus();
  }
  mutable std::atomic<int> calls_{0};
};

// Says it multiplies by 1/255; multiplies by 2/255.
class LyingChannelMap : public Transform {
 public:
  absl::Status Apply(Image& image, SampleRandom&) const override {
    RETURN_IF_ERROR(Check(image));
    if (image.is_float()) return absl::InvalidArgumentError("u8 only");
    for (uint8_t v : image.u8) image.f32.push_back(v * (2.0f / 255));
    image.u8.clear();
    return absl::OkStatus();
  }
  std::optional<ChannelMap> AsChannelMap() const override {
    return ChannelMap{.multiply = {1.0f / 255}, .takes_uint8 = true, .takes_float = false};
  }
};

// ApplyToRegion ignores the region's top.
class TopBlindCrop : public Transform, public RegionCrop {
 public:
  absl::Status Apply(Image& image, SampleRandom& random) const override {
    RETURN_IF_ERROR(Check(image));
    const ImageRegion region = PlanRegion(image.height, image.width, random);
    image = Crop(image, region);
    return absl::OkStatus();
  }
  const RegionCrop* AsRegionCrop() const override { return this; }
  ImageRegion PlanRegion(int height, int width, SampleRandom& random) const override {
    const int top = static_cast<int>(random.Below(height / 2 + 1));
    const int left = static_cast<int>(random.Below(width / 2 + 1));
    return {top, left, height / 2, width / 2};
  }
  absl::Status ApplyToRegion(Image& image, const ImageRegion& region) const override {
    RETURN_IF_ERROR(Check(image));
    if (region.top < 0 || region.left < 0 || region.height <= 0 || region.width <= 0 ||
        region.top + region.height > image.height || region.left + region.width > image.width) {
      return absl::InvalidArgumentError("region outside");
    }
    image = Crop(image, ImageRegion{0, region.left, region.height, region.width});
    return absl::OkStatus();
  }
};

// Takes anything, malformed images too.
class TakesAnything : public Transform {
 public:
  absl::Status Apply(Image&, SampleRandom&) const override { return absl::OkStatus(); }
};

// The output's width depends on the random draw.
class ShapeByChance : public Transform {
 public:
  absl::Status Apply(Image& image, SampleRandom& random) const override {
    RETURN_IF_ERROR(Check(image));
    image = Crop(image, ImageRegion{0, 0, image.height, image.width - 1 -
                                                          static_cast<int>(random.Below(2))});
    return absl::OkStatus();
  }
};

template <typename T>
void RegisterTransform(const char* name) {
  static const PluginRegistration<Transform, Empty> registration(
      name, "broken on purpose",
      [](const Empty&, const TransformContext&) -> absl::StatusOr<std::unique_ptr<Transform>> {
        return std::make_unique<T>();
      });
}

// Labels beyond its classes, regions one pixel off, any index taken.
class SloppyDataset : public Dataset {
 public:
  int64_t size() const override { return 10; }
  absl::StatusOr<Sample> Get(int64_t index) const override {
    index = std::clamp<int64_t>(index, 0, 9);
    Sample sample;
    sample.label = index;
    sample.image.height = 6;
    sample.image.width = 8;
    sample.image.channels = 1;
    for (int i = 0; i < 48; ++i) sample.image.u8.push_back(static_cast<uint8_t>(i * 5 + index));
    return sample;
  }
  absl::StatusOr<Sample> GetRegion(int64_t index, const RegionPlan& plan,
                                   ImageRegion* region_in_image) const override {
    absl::StatusOr<Sample> sample = Get(index);
    *region_in_image = plan(6, 8);
    if (region_in_image->left > 0) --region_in_image->left;
    return sample;
  }
  const std::vector<std::string>& class_names() const override { return names_; }
  const std::vector<std::string> names_ = {"a", "b", "c"};
};

const bool kRegistered = [] {
  RegisterTransform<RandomState>("broken_random_state");
  RegisterTransform<LyingChannelMap>("broken_channel_map");
  RegisterTransform<TopBlindCrop>("broken_region_crop");
  RegisterTransform<TakesAnything>("broken_takes_anything");
  RegisterTransform<ShapeByChance>("broken_shape_by_chance");
  static const PluginRegistration<Dataset, Empty> dataset(
      "broken_dataset", "broken on purpose",
      [](const Empty&, const DatasetContext&) -> absl::StatusOr<std::unique_ptr<Dataset>> {
        return std::make_unique<SloppyDataset>();
      });
  return true;
}();

#define BROKEN_TRANSFORM(name)                                                    \
  INSTANTIATE_TEST_SUITE_P(name, TransformConformanceTest,                        \
                           ::testing::Values(TransformConformanceParams{#name, ""}), \
                           TransformConformanceTestName)

BROKEN_TRANSFORM(broken_random_state);
BROKEN_TRANSFORM(broken_channel_map);
BROKEN_TRANSFORM(broken_region_crop);
BROKEN_TRANSFORM(broken_takes_anything);
BROKEN_TRANSFORM(broken_shape_by_chance);

INSTANTIATE_TEST_SUITE_P(broken_dataset, DatasetConformanceTest,
                         ::testing::Values(DatasetConformanceParams{"broken_dataset", "", "",
                                                                    "train"}),
                         DatasetConformanceTestName);

}  // namespace
}  // namespace testing
}  // namespace pipeline
