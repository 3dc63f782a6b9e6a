// transform `grayscale_to_rgb`: copies the one channel of a grayscale image
// into three (R = G = B), for 3-channel models fed with gray datasets such as
// MNIST; 3-channel images pass unchanged, so mixed datasets work too. Other
// channel counts (2, 4) are an error: dropping alpha or the like is not a
// decision to make silently. Works on u8 and f32 images.
//
//   transforms { name: "grayscale_to_rgb" }

#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pipeline/image/image_ops.h"
#include "pipeline/interfaces/transform.h"
#include "pipeline/util/status_macros.h"
#include "plugins/transforms/grayscale_to_rgb/grayscale_to_rgb.pb.h"

namespace pipeline {
namespace {

class GrayscaleToRgbTransform : public Transform {
 public:
  absl::Status Apply(Image& image, SampleRandom& random) const override {
    RETURN_IF_ERROR(image_ops::CheckImage(image, "grayscale_to_rgb"));
    if (image.channels == 3) return absl::OkStatus();
    if (image.channels != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "grayscale_to_rgb: the image has ", image.channels, " channels (", image.ShapeString(),
          "); it takes 1 (copied into 3) or 3 (kept)"));
    }
    image_ops::VisitPixels(image, [](auto& gray) {
      using T = typename std::decay_t<decltype(gray)>::value_type;
      std::vector<T> rgb(gray.size() * 3);
      for (size_t i = 0; i < gray.size(); ++i) {
        rgb[3 * i] = gray[i];
        rgb[3 * i + 1] = gray[i];
        rgb[3 * i + 2] = gray[i];
      }
      gray = std::move(rgb);
    });
    image.channels = 3;
    return absl::OkStatus();
  }
};

PIPELINE_REGISTER_PLUGIN(Transform, "grayscale_to_rgb", GrayscaleToRgbOptions,
                         "1-channel images to 3 equal channels; 3-channel images unchanged",
                         [](const GrayscaleToRgbOptions&, const TransformContext&)
                             -> absl::StatusOr<std::unique_ptr<Transform>> {
                           return std::make_unique<GrayscaleToRgbTransform>();
                         });

}  // namespace
}  // namespace pipeline
