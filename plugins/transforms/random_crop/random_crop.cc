// transform `random_crop`: torchvision's RandomCrop — pads the image by
// `padding` (and, with pad_if_needed, up to the crop size), then crops
// height x width at a place drawn uniformly from the sample's SampleRandom.
// Works on u8 and f32 images and keeps the type.
//
//   transforms {
//     name: "random_crop"
//     options { [type.googleapis.com/pipeline.RandomCropOptions] { size: 28 padding: 4 } }
//   }

#include "plugins/transforms/random_crop/random_crop.h"

#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pipeline/image/image_ops.h"
#include "pipeline/interfaces/transform.h"
#include "pipeline/util/status_macros.h"
#include "plugins/transforms/random_crop/random_crop.pb.h"

namespace pipeline {
namespace random_crop {

absl::StatusOr<Image> PadForCrop(const Image& image, const Settings& settings) {
  Image out = image;
  if (settings.padding) {
    ASSIGN_OR_RETURN(out, padding::Pad(out, *settings.padding, settings.fill, settings.mode,
                                       "random_crop"));
  }
  // torchvision reads both sides before padding either, and pads the width
  // first: padding = [size - width, 0], i.e. that much on the left AND right.
  const int height = out.height;
  const int width = out.width;
  if (settings.pad_if_needed && width < settings.size.width) {
    const int more = settings.size.width - width;
    ASSIGN_OR_RETURN(out, padding::Pad(out, padding::Padding{more, 0, more, 0}, settings.fill,
                                       settings.mode, "random_crop"));
  }
  if (settings.pad_if_needed && height < settings.size.height) {
    const int more = settings.size.height - height;
    ASSIGN_OR_RETURN(out, padding::Pad(out, padding::Padding{0, more, 0, more}, settings.fill,
                                       settings.mode, "random_crop"));
  }
  if (out.height < settings.size.height || out.width < settings.size.width) {
    return absl::InvalidArgumentError(absl::StrCat(
        "random_crop: the ", settings.size.height, "x", settings.size.width,
        " crop is larger than the ", out.ShapeString(), " image",
        settings.padding ? " (after padding)" : "",
        settings.pad_if_needed ? "" : "; set pad_if_needed to pad it up to the crop"));
  }
  return out;
}

ImageRegion DrawCrop(int height, int width, const image_ops::OutputSize& size,
                     SampleRandom& random) {
  const int top = static_cast<int>(random.Below(static_cast<uint64_t>(height - size.height) + 1));
  const int left = static_cast<int>(random.Below(static_cast<uint64_t>(width - size.width) + 1));
  return {top, left, size.height, size.width};
}

}  // namespace random_crop

namespace {

padding::PaddingMode ToPaddingMode(RandomCropOptions::PaddingMode mode) {
  switch (mode) {
    case RandomCropOptions::EDGE:
      return padding::PaddingMode::kEdge;
    case RandomCropOptions::REFLECT:
      return padding::PaddingMode::kReflect;
    case RandomCropOptions::SYMMETRIC:
      return padding::PaddingMode::kSymmetric;
    case RandomCropOptions::CONSTANT:
      break;
  }
  return padding::PaddingMode::kConstant;
}

absl::StatusOr<random_crop::Settings> SettingsOf(const RandomCropOptions& options) {
  RETURN_IF_ERROR(image_ops::ValidateSizeFields("random_crop", options));
  random_crop::Settings settings;
  settings.size = image_ops::SquareOrExactSize(options);
  if (!options.padding().empty()) {
    ASSIGN_OR_RETURN(settings.padding,
                     padding::PaddingFromValues(std::vector<int>(options.padding().begin(),
                                                                 options.padding().end()),
                                                "random_crop"));
  }
  settings.pad_if_needed = options.pad_if_needed();
  if (!std::isfinite(options.fill())) {
    return absl::InvalidArgumentError(
        absl::StrCat("random_crop: fill must be a finite number, got ", options.fill()));
  }
  settings.fill = options.fill();
  settings.mode = ToPaddingMode(options.padding_mode());
  return settings;
}

class RandomCropTransform : public Transform {
 public:
  explicit RandomCropTransform(const random_crop::Settings& settings) : settings_(settings) {}

  absl::Status Apply(Image& image, SampleRandom& random) const override {
    RETURN_IF_ERROR(image_ops::CheckImage(image, "random_crop"));
    ASSIGN_OR_RETURN(const Image padded, random_crop::PadForCrop(image, settings_));
    const ImageRegion region =
        random_crop::DrawCrop(padded.height, padded.width, settings_.size, random);
    ASSIGN_OR_RETURN(image, image_ops::Crop(padded, region));
    return absl::OkStatus();
  }

 private:
  const random_crop::Settings settings_;
};

absl::Status ValidateRandomCropOptions(const RandomCropOptions& options) {
  return SettingsOf(options).status();
}

PIPELINE_REGISTER_PLUGIN(Transform, "random_crop", RandomCropOptions,
                         "A height x width crop at a random place, after optional padding",
                         [](const RandomCropOptions& options, const TransformContext&)
                             -> absl::StatusOr<std::unique_ptr<Transform>> {
                           ASSIGN_OR_RETURN(const random_crop::Settings settings,
                                            SettingsOf(options));
                           return std::make_unique<RandomCropTransform>(settings);
                         },
                         ValidateRandomCropOptions);
// Augmentation: inference (predict) runs the training transforms without it.
PIPELINE_PLUGIN_TRAITS(Transform, "random_crop", TransformTraits{.training_only = true});

}  // namespace
}  // namespace pipeline
