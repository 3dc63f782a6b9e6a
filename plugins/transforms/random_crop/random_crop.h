#ifndef PLUGINS_TRANSFORMS_RANDOM_CROP_RANDOM_CROP_H_
#define PLUGINS_TRANSFORMS_RANDOM_CROP_RANDOM_CROP_H_

// The two halves of torchvision's RandomCrop.forward, for the transform and
// its tests: the padding (deterministic) and the crop's place (random).

#include <optional>

#include "absl/status/statusor.h"
#include "pipeline/image/size_options.h"
#include "pipeline/interfaces/image.h"
#include "pipeline/interfaces/random.h"
#include "plugins/transforms/pad/padding.h"

namespace pipeline {
namespace random_crop {

struct Settings {
  image_ops::OutputSize size;
  std::optional<padding::Padding> padding;
  bool pad_if_needed = false;
  float fill = 0;
  padding::PaddingMode mode = padding::PaddingMode::kConstant;
};

// `image` padded as RandomCrop.forward pads it: `padding` first, then, with
// pad_if_needed, the width and then the height, each by the whole shortfall
// on both ends. Errors when the result is still smaller than the crop.
absl::StatusOr<Image> PadForCrop(const Image& image, const Settings& settings);

// Where the crop goes in a height x width (padded) image at least as large
// as `size`: top uniform in [0, height - size.height], then left uniform in
// [0, width - size.width] (torchvision's get_params). Always draws both.
ImageRegion DrawCrop(int height, int width, const image_ops::OutputSize& size,
                     SampleRandom& random);

}  // namespace random_crop
}  // namespace pipeline

#endif  // PLUGINS_TRANSFORMS_RANDOM_CROP_RANDOM_CROP_H_
