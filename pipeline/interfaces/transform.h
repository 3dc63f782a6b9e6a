#ifndef PIPELINE_INTERFACES_TRANSFORM_H_
#define PIPELINE_INTERFACES_TRANSFORM_H_

#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "pipeline/interfaces/image.h"
#include "pipeline/interfaces/random.h"
#include "pipeline/registry/registry.h"

namespace pipeline {

// One step of per-sample preprocessing, applied in place. Called from several
// loader threads at once: implementations keep no mutable state and draw all
// randomness from `random`.
// What a transform does when it only maps each value v of channel c through
//   v -> (v * multiply[c] - subtract[c]) / divide[c]
// (one value in a vector applies to every channel). The loader runs a
// trailing run of such transforms inside the one pass that writes the batch
// tensor, instead of one pass and one float image each; the arithmetic is
// Apply's own, so the results are bitwise the same.
struct ChannelMap {
  std::vector<float> multiply = {1.0f};
  std::vector<float> subtract = {0.0f};
  std::vector<float> divide = {1.0f};
  // Which images Apply takes: to_float takes uint8 only, normalize float only.
  bool takes_uint8 = false;
  bool takes_float = true;
};

// What a crop is when the part of the image it reads depends only on the
// image's size and its random draws (random_resized_crop). The loader then
// asks the dataset for just that part (Dataset::GetRegion), so a JPEG is
// decoded only as far as the crop needs.
class RegionCrop {
 public:
  virtual ~RegionCrop() = default;
  // The region Apply reads of a height x width image, drawing from `random`
  // exactly the numbers Apply draws.
  virtual ImageRegion PlanRegion(int height, int width, SampleRandom& random) const = 0;
  // The rest of Apply: `region` is where the planned region lies in `image`.
  virtual absl::Status ApplyToRegion(Image& image, const ImageRegion& region) const = 0;
};

class Transform {
 public:
  virtual ~Transform() = default;
  virtual absl::Status Apply(Image& image, SampleRandom& random) const = 0;
  // Set only by transforms that are exactly a ChannelMap and draw no random
  // numbers.
  virtual std::optional<ChannelMap> AsChannelMap() const { return std::nullopt; }
  // Set only by crops whose Apply is PlanRegion then ApplyToRegion.
  virtual const RegionCrop* AsRegionCrop() const { return nullptr; }
};

struct TransformContext {};

// What a transform declares about itself (PIPELINE_PLUGIN_TRAITS).
struct TransformTraits {
  // A random augmentation that belongs in training only: inference
  // (predict) runs a training pipeline's transforms without it.
  bool training_only = false;
};

template <>
struct PluginKind<Transform> {
  static constexpr const char* kName = "transform";
  using Context = TransformContext;
  using Traits = TransformTraits;
};

}  // namespace pipeline

#endif  // PIPELINE_INTERFACES_TRANSFORM_H_
