// transform `center_crop`: keeps the central height x width pixels, as
// torchvision's CenterCrop: the offset is int(round((h - crop_h) / 2.0)) with
// Python's round (halves to even), and an image smaller than the crop is
// padded with zeros, the extra pixel of an odd padding going to the bottom
// and right. Works on u8 and f32 images and keeps the type.
//
//   transforms {
//     name: "center_crop"
//     options { [type.googleapis.com/pipeline.CenterCropOptions] { size: 224 } }
//   }

#include <memory>

#include "pipeline/image/image_ops.h"
#include "pipeline/image/size_options.h"
#include "pipeline/interfaces/transform.h"
#include "pipeline/util/status_macros.h"
#include "plugins/transforms/center_crop/center_crop.pb.h"

namespace pipeline {
namespace {

// Where the crop starts along one axis of `size` pixels. Past the image's
// edge torchvision pads by (crop - size) // 2 before and crops at 0, which
// puts the crop at minus that padding.
int CropStart(int size, int crop) {
  if (crop > size) return -((crop - size) / 2);
  return image_ops::RoundHalfEven((size - crop) / 2.0);
}

class CenterCropTransform : public Transform {
 public:
  explicit CenterCropTransform(const CenterCropOptions& options)
      : crop_(image_ops::SquareOrExactSize(options)) {}

  absl::Status Apply(Image& image, SampleRandom& random) const override {
    RETURN_IF_ERROR(image_ops::CheckImage(image, "center_crop"));
    if (crop_.height == image.height && crop_.width == image.width) return absl::OkStatus();
    const image_ops::Region region{CropStart(image.height, crop_.height),
                                   CropStart(image.width, crop_.width), crop_.height,
                                   crop_.width};
    ASSIGN_OR_RETURN(image, image_ops::Crop(image, region));
    return absl::OkStatus();
  }

 private:
  const image_ops::OutputSize crop_;
};

absl::Status ValidateCenterCropOptions(const CenterCropOptions& options) {
  return image_ops::ValidateSizeFields("center_crop", options);
}

PIPELINE_REGISTER_PLUGIN(Transform, "center_crop", CenterCropOptions,
                         "The central size x size or height x width pixels, zero-padded",
                         [](const CenterCropOptions& options, const TransformContext&)
                             -> absl::StatusOr<std::unique_ptr<Transform>> {
                           return std::make_unique<CenterCropTransform>(options);
                         },
                         ValidateCenterCropOptions);

}  // namespace
}  // namespace pipeline
