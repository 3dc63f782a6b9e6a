#ifndef PLUGINS_TRANSFORMS_RANDOM_ROTATION_RANDOM_ROTATION_H_
#define PLUGINS_TRANSFORMS_RANDOM_ROTATION_RANDOM_ROTATION_H_

// torchvision's RandomRotation split for the transform and its tests: the
// drawing of the angle (get_params) and the rotation by a given angle
// (forward's F.rotate, with its fill).

#include <array>
#include <optional>

#include "absl/status/status.h"
#include "pipeline/interfaces/image.h"
#include "pipeline/interfaces/random.h"
#include "plugins/transforms/augment_ops/affine.h"

namespace pipeline {
namespace random_rotation {

struct Settings {
  double degrees_min = 0;
  double degrees_max = 0;
  bool expand = false;
  // From the top-left corner; none: the image center.
  std::optional<std::array<double, 2>> center;
  // RandomRotation's fill is never None: its default is 0.
  augment_ops::Warp warp = {augment_ops::Interpolation::kNearest, {0.0f}};
};

// get_params: uniform in [degrees_min, degrees_max], as float32 (torch's
// uniform_ on a float tensor).
double DrawAngle(const Settings& settings, SampleRandom& random);

// F.rotate(img, angle, interpolation, expand, center, fill) in place.
// Errors (a fill that does not fit the image) start with "random_rotation".
absl::Status Rotate(Image& image, double angle, const Settings& settings);

}  // namespace random_rotation
}  // namespace pipeline

#endif  // PLUGINS_TRANSFORMS_RANDOM_ROTATION_RANDOM_ROTATION_H_
