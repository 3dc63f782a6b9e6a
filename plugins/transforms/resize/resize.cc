// transform `resize`: scales the image so its shorter side is `size` pixels,
// keeping the aspect ratio (torchvision's Resize(int)), or to exactly
// height x width. Bilinear (default) or nearest, without antialias, as
// torchvision does on tensors. Works on u8 and f32 images and keeps the type.
//
//   transforms {
//     name: "resize"
//     options { [type.googleapis.com/pipeline.ResizeOptions] { size: 32 } }
//   }

#include <algorithm>
#include <cstdint>
#include <memory>

#include "pipeline/image/image_ops.h"
#include "pipeline/image/size_options.h"
#include "pipeline/interfaces/transform.h"
#include "pipeline/util/status_macros.h"
#include "plugins/transforms/resize/resize.pb.h"

namespace pipeline {
namespace {

class ResizeTransform : public Transform {
 public:
  explicit ResizeTransform(const ResizeOptions& options) : options_(options) {}

  absl::Status Apply(Image& image, SampleRandom& random) const override {
    RETURN_IF_ERROR(image_ops::CheckImage(image, "resize"));
    const image_ops::OutputSize size = OutputSizeFor(image);
    if (size.height == image.height && size.width == image.width) return absl::OkStatus();
    ASSIGN_OR_RETURN(image, image_ops::Resize(image, size.height, size.width,
                                              options_.interpolation() == ResizeOptions::NEAREST
                                                  ? image_ops::Interpolation::kNearest
                                                  : image_ops::Interpolation::kBilinear));
    return absl::OkStatus();
  }

 private:
  image_ops::OutputSize OutputSizeFor(const Image& image) const {
    if (options_.has_height()) return {options_.height(), options_.width()};
    // torchvision's _compute_resized_output_size: int(size * long / short),
    // a true division then truncation.
    const int shorter = std::min(image.height, image.width);
    const int longer = std::max(image.height, image.width);
    const int new_longer = static_cast<int>(
        static_cast<double>(static_cast<int64_t>(options_.size()) * longer) / shorter);
    if (image.width <= image.height) return {new_longer, options_.size()};
    return {options_.size(), new_longer};
  }

  const ResizeOptions options_;
};

absl::Status ValidateResizeOptions(const ResizeOptions& options) {
  return image_ops::ValidateSizeFields("resize", options);
}

PIPELINE_REGISTER_PLUGIN(Transform, "resize", ResizeOptions,
                         "Scales to a shorter side of `size` (aspect kept) or to height x width",
                         [](const ResizeOptions& options, const TransformContext&)
                             -> absl::StatusOr<std::unique_ptr<Transform>> {
                           return std::make_unique<ResizeTransform>(options);
                         },
                         ValidateResizeOptions);

}  // namespace
}  // namespace pipeline
