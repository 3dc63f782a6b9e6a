// transform `random_resized_crop`: picks a random region with torchvision's
// RandomResizedCrop.get_params — up to 10 draws of an area fraction in
// [scale_min, scale_max] and a log-uniform aspect ratio in [ratio_min,
// ratio_max], the first that fits placed uniformly; otherwise the central
// crop closest to the ratio range — and resizes only that region to the
// output size. All draws come from the sample's SampleRandom. Works on u8 and
// f32 images and keeps the type.
//
//   transforms {
//     name: "random_resized_crop"
//     options { [type.googleapis.com/pipeline.RandomResizedCropOptions] { size: 224 } }
//   }

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "pipeline/image/image_ops.h"
#include "pipeline/image/size_options.h"
#include "pipeline/interfaces/transform.h"
#include "pipeline/util/status_macros.h"
#include "plugins/transforms/random_resized_crop/random_resized_crop.pb.h"

namespace pipeline {
namespace {

constexpr int kAttempts = 10;

class RandomResizedCropTransform : public Transform, public RegionCrop {
 public:
  explicit RandomResizedCropTransform(const RandomResizedCropOptions& options)
      : output_(image_ops::SquareOrExactSize(options)),
        scale_min_(options.scale_min()),
        scale_max_(options.scale_max()),
        ratio_min_(options.ratio_min()),
        ratio_max_(options.ratio_max()),
        interpolation_(options.interpolation() == RandomResizedCropOptions::NEAREST
                           ? image_ops::Interpolation::kNearest
                           : image_ops::Interpolation::kBilinear) {}

  absl::Status Apply(Image& image, SampleRandom& random) const override {
    RETURN_IF_ERROR(image_ops::CheckImage(image, "random_resized_crop"));
    return ApplyToRegion(image, PlanRegion(image.height, image.width, random));
  }

  const RegionCrop* AsRegionCrop() const override { return this; }

  absl::Status ApplyToRegion(Image& image, const ImageRegion& region) const override {
    RETURN_IF_ERROR(image_ops::CheckImage(image, "random_resized_crop"));
    ASSIGN_OR_RETURN(image, image_ops::ResizeRegion(image, region, output_.height,
                                                    output_.width, interpolation_));
    return absl::OkStatus();
  }

  ImageRegion PlanRegion(int height, int width, SampleRandom& random) const override {
    const double area = static_cast<double>(height) * width;
    const double log_ratio_min = std::log(ratio_min_);
    const double log_ratio_max = std::log(ratio_max_);
    for (int attempt = 0; attempt < kAttempts; ++attempt) {
      const double target_area = area * random.Uniform(scale_min_, scale_max_);
      const double aspect_ratio = std::exp(random.Uniform(log_ratio_min, log_ratio_max));
      // Rounded (halves to even, as Python) and compared as doubles: an
      // extreme ratio must not overflow an int.
      const double w = std::nearbyint(std::sqrt(target_area * aspect_ratio));
      const double h = std::nearbyint(std::sqrt(target_area / aspect_ratio));
      if (0 < w && w <= width && 0 < h && h <= height) {
        const int crop_h = static_cast<int>(h);
        const int crop_w = static_cast<int>(w);
        const int top = static_cast<int>(random.Below(static_cast<uint64_t>(height - crop_h) + 1));
        const int left = static_cast<int>(random.Below(static_cast<uint64_t>(width - crop_w) + 1));
        return {top, left, crop_h, crop_w};
      }
    }
    // Fallback: the whole image, trimmed to the nearest ratio in range.
    const double in_ratio = static_cast<double>(width) / height;
    int crop_h = height;
    int crop_w = width;
    if (in_ratio < ratio_min_) {
      crop_h = image_ops::RoundHalfEven(width / ratio_min_);
    } else if (in_ratio > ratio_max_) {
      crop_w = image_ops::RoundHalfEven(height * ratio_max_);
    }
    crop_h = std::clamp(crop_h, 1, height);
    crop_w = std::clamp(crop_w, 1, width);
    return {(height - crop_h) / 2, (width - crop_w) / 2, crop_h, crop_w};
  }

  const image_ops::OutputSize output_;
  const double scale_min_;
  const double scale_max_;
  const double ratio_min_;
  const double ratio_max_;
  const image_ops::Interpolation interpolation_;
};

absl::Status ValidateRandomResizedCropOptions(const RandomResizedCropOptions& options) {
  RETURN_IF_ERROR(image_ops::ValidateSizeFields("random_resized_crop", options));
  // Written as !(in range) so NaN fails too.
  for (auto [field, value] : {std::pair{"scale_min", options.scale_min()},
                              std::pair{"scale_max", options.scale_max()}}) {
    if (!(value > 0 && value <= 1)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "random_resized_crop: ", field, " must be in (0, 1] (a fraction of the image's area), "
          "got ", value));
    }
  }
  if (options.scale_min() > options.scale_max()) {
    return absl::InvalidArgumentError(
        absl::StrCat("random_resized_crop: scale_min (", options.scale_min(),
                     ") must be <= scale_max (", options.scale_max(), ")"));
  }
  for (auto [field, value] : {std::pair{"ratio_min", options.ratio_min()},
                              std::pair{"ratio_max", options.ratio_max()}}) {
    if (!(value > 0 && std::isfinite(value))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "random_resized_crop: ", field, " must be > 0 (width / height), got ", value));
    }
  }
  if (options.ratio_min() > options.ratio_max()) {
    return absl::InvalidArgumentError(
        absl::StrCat("random_resized_crop: ratio_min (", options.ratio_min(),
                     ") must be <= ratio_max (", options.ratio_max(), ")"));
  }
  return absl::OkStatus();
}

PIPELINE_REGISTER_PLUGIN(Transform, "random_resized_crop", RandomResizedCropOptions,
                         "A random region (area and aspect ratio) resized to size x size",
                         [](const RandomResizedCropOptions& options, const TransformContext&)
                             -> absl::StatusOr<std::unique_ptr<Transform>> {
                           return std::make_unique<RandomResizedCropTransform>(options);
                         },
                         ValidateRandomResizedCropOptions);
// Augmentation: inference (predict) runs the training transforms without it.
PIPELINE_PLUGIN_TRAITS(Transform, "random_resized_crop", TransformTraits{.training_only = true});

}  // namespace
}  // namespace pipeline
