#ifndef PLUGINS_TRANSFORMS_RANDOM_ERASING_RANDOM_ERASING_H_
#define PLUGINS_TRANSFORMS_RANDOM_ERASING_RANDOM_ERASING_H_

// torchvision's RandomErasing split for the transform and its tests: the
// drawing of the rectangle and its values (get_params), and the erasing
// itself (F.erase).

#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "pipeline/interfaces/image.h"
#include "pipeline/interfaces/random.h"

namespace pipeline {
namespace random_erasing {

struct Settings {
  double p = 0.5;
  double scale_min = 0.02;
  double scale_max = 0.33;
  double ratio_min = 0.3;
  double ratio_max = 3.3;
  std::vector<float> value = {0.0f};  // 1 or one per channel
  bool random_value = false;
};

struct Erasure {
  // May be empty (a height or width of 0): torchvision erases nothing then.
  ImageRegion region;
  // 1 value, one per channel, or (random_value) region height x width x
  // channels values in HWC order.
  std::vector<float> values;
};

// Whether and where a height x width x channels image is erased, as
// torchvision's forward and get_params draw it: the chance p; then up to 10
// tries of an area fraction uniform in [scale_min, scale_max] and a
// log-uniform ratio in [ratio_min, ratio_max], giving height
// round(sqrt(area * ratio)) and width round(sqrt(area / ratio)) (halves to
// even); the first strictly smaller than the image gets its values (normal
// noise for random_value) and a uniform top, then left. nullopt when the
// chance or all 10 tries fail.
std::optional<Erasure> Draw(int height, int width, int channels, const Settings& settings,
                            SampleRandom& random);

// F.erase: `erasure.region` of `image` (which must lie inside it) set to
// its values. On u8 images the values must be integers in [0, 255]. Errors
// start with "random_erasing".
absl::Status Erase(Image& image, const Erasure& erasure);

// Whether Apply can take `image` at all, decided before any drawing so that
// the answer does not depend on the seed: the value count fits the
// channels, u8 images get integer values in [0, 255] and no random_value.
absl::Status CheckTakes(const Image& image, const Settings& settings);

}  // namespace random_erasing
}  // namespace pipeline

#endif  // PLUGINS_TRANSFORMS_RANDOM_ERASING_RANDOM_ERASING_H_
