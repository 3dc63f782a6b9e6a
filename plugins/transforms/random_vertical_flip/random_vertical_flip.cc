// transform `random_vertical_flip`: mirrors the image top-bottom with
// chance `probability`, drawn from the sample's SampleRandom (one draw per
// sample, whatever the probability, so later transforms see the same random
// stream). Works on u8 and f32 images.
//
//   transforms {
//     name: "random_vertical_flip"
//     options { [type.googleapis.com/pipeline.RandomVerticalFlipOptions] { probability: 0.5 } }
//   }

#include <memory>

#include "absl/strings/str_cat.h"
#include "pipeline/image/image_ops.h"
#include "pipeline/interfaces/transform.h"
#include "pipeline/util/status_macros.h"
#include "plugins/transforms/random_vertical_flip/random_vertical_flip.pb.h"

namespace pipeline {
namespace {

class RandomVerticalFlipTransform : public Transform {
 public:
  explicit RandomVerticalFlipTransform(double probability) : probability_(probability) {}

  absl::Status Apply(Image& image, SampleRandom& random) const override {
    RETURN_IF_ERROR(image_ops::CheckImage(image, "random_vertical_flip"));
    if (random.Bernoulli(probability_)) image_ops::FlipVertical(image);
    return absl::OkStatus();
  }

 private:
  const double probability_;
};

absl::Status ValidateRandomVerticalFlipOptions(const RandomVerticalFlipOptions& options) {
  if (!(options.probability() >= 0 && options.probability() <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "random_vertical_flip: probability must be in [0, 1], got ", options.probability()));
  }
  return absl::OkStatus();
}

PIPELINE_REGISTER_PLUGIN(Transform, "random_vertical_flip", RandomVerticalFlipOptions,
                         "Mirrors the image top-bottom with the given probability",
                         [](const RandomVerticalFlipOptions& options, const TransformContext&)
                             -> absl::StatusOr<std::unique_ptr<Transform>> {
                           return std::make_unique<RandomVerticalFlipTransform>(
                               options.probability());
                         },
                         ValidateRandomVerticalFlipOptions);
// Augmentation: inference (predict) runs the training transforms without it.
PIPELINE_PLUGIN_TRAITS(Transform, "random_vertical_flip", TransformTraits{.training_only = true});

}  // namespace
}  // namespace pipeline
