#ifndef PLUGINS_TRANSFORMS_COLOR_JITTER_COLOR_JITTER_H_
#define PLUGINS_TRANSFORMS_COLOR_JITTER_COLOR_JITTER_H_

// torchvision's ColorJitter split for the transform and its tests: the
// drawing of the four adjustments' order and factors, and applying them
// (the adjustments themselves are augment_ops/color_adjust.h, shared with
// TrivialAugmentWide and RandAugment).

#include <array>
#include <optional>

#include "absl/status/status.h"
#include "pipeline/interfaces/image.h"
#include "pipeline/interfaces/random.h"

namespace pipeline {
namespace color_jitter {

// torchvision's fn_idx values.
enum Op { kBrightness = 0, kContrast = 1, kSaturation = 2, kHue = 3 };

struct Range {
  double min = 0;
  double max = 0;
};

// The factor ranges; an empty one leaves its property alone.
struct Ranges {
  std::optional<Range> brightness;
  std::optional<Range> contrast;
  std::optional<Range> saturation;
  std::optional<Range> hue;
};

// What one sample gets: get_params' fn_idx and factors.
struct Params {
  std::array<int, 4> order = {0, 1, 2, 3};
  std::optional<double> brightness;
  std::optional<double> contrast;
  std::optional<double> saturation;
  std::optional<double> hue;
};

// A uniformly random order (Fisher-Yates, 3 draws), then one uniform factor
// per property from its range, rounded to float32 as torch's uniform_ gives
// it. Draws a factor for every property, set or not, so the stream a sample
// uses does not depend on the options.
Params DrawParams(const Ranges& ranges, SampleRandom& random);

// The adjustments with factors, in `params.order` (ColorJitter.forward).
// Errors for images of other than 1 or 3 channels.
absl::Status ApplyParams(Image& image, const Params& params);

}  // namespace color_jitter
}  // namespace pipeline

#endif  // PLUGINS_TRANSFORMS_COLOR_JITTER_COLOR_JITTER_H_
