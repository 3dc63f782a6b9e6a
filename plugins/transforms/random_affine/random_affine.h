#ifndef PLUGINS_TRANSFORMS_RANDOM_AFFINE_RANDOM_AFFINE_H_
#define PLUGINS_TRANSFORMS_RANDOM_AFFINE_RANDOM_AFFINE_H_

// torchvision's RandomAffine split for the transform and its tests: the
// drawing of the parameters (get_params) and the warp by given parameters
// (forward's F.affine, with its fill).

#include <array>
#include <optional>

#include "absl/status/status.h"
#include "pipeline/interfaces/image.h"
#include "pipeline/interfaces/random.h"
#include "plugins/transforms/augment_ops/affine.h"
#include "plugins/transforms/augment_ops/warp_options.h"

namespace pipeline {
namespace random_affine {

using augment_ops::Range;

struct Settings {
  Range degrees;
  // Fractions of the width and height; none: no translation.
  std::optional<std::array<double, 2>> translate;
  // None: scale 1.
  std::optional<Range> scale;
  // None: no shear; shear_y only with shear_x.
  std::optional<Range> shear_x;
  std::optional<Range> shear_y;
  // From the top-left corner; none: the image center.
  std::optional<std::array<double, 2>> center;
  // RandomAffine's fill is never None: its default is 0.
  augment_ops::Warp warp = {augment_ops::Interpolation::kNearest, {0.0f}};
};

// What get_params returns.
struct Params {
  double angle = 0;
  // Whole pixels, (x, y).
  std::array<double, 2> translate = {0, 0};
  double scale = 1;
  std::array<double, 2> shear = {0, 0};
};

// get_params for a height x width image: each value uniform in its range
// as a float32 (torch's uniform_ on a float tensor), drawn in torchvision's
// order (angle, x and y shift, scale, x and y shear), and the shifts
// rounded half to even (Python's round).
Params DrawParams(const Settings& settings, int height, int width, SampleRandom& random);

// F.affine(img, angle, translate, scale, shear, interpolation, fill, center)
// in place. Errors (a fill that does not fit the image) start with
// "random_affine".
absl::Status Warp(Image& image, const Params& params, const Settings& settings);

}  // namespace random_affine
}  // namespace pipeline

#endif  // PLUGINS_TRANSFORMS_RANDOM_AFFINE_RANDOM_AFFINE_H_
