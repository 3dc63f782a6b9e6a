// transform `random_horizontal_flip`: mirrors the image left-right with
// chance `probability`, drawn from the sample's SampleRandom (one draw per
// sample, whatever the probability, so later transforms see the same random
// stream). Works on u8 and f32 images.
//
//   transforms {
//     name: "random_horizontal_flip"
//     options { [type.googleapis.com/pipeline.RandomHorizontalFlipOptions] { probability: 0.5 } }
//   }

#include <memory>

#include "absl/strings/str_cat.h"
#include "pipeline/image/image_ops.h"
#include "pipeline/interfaces/transform.h"
#include "pipeline/util/status_macros.h"
#include "plugins/transforms/random_horizontal_flip/random_horizontal_flip.pb.h"

namespace pipeline {
namespace {

class RandomHorizontalFlipTransform : public Transform {
 public:
  explicit RandomHorizontalFlipTransform(double probability) : probability_(probability) {}

  absl::Status Apply(Image& image, SampleRandom& random) const override {
    RETURN_IF_ERROR(image_ops::CheckImage(image, "random_horizontal_flip"));
    if (random.Bernoulli(probability_)) image_ops::FlipHorizontal(image);
    return absl::OkStatus();
  }

 private:
  const double probability_;
};

absl::Status ValidateRandomHorizontalFlipOptions(const RandomHorizontalFlipOptions& options) {
  if (!(options.probability() >= 0 && options.probability() <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "random_horizontal_flip: probability must be in [0, 1], got ", options.probability()));
  }
  return absl::OkStatus();
}

PIPELINE_REGISTER_PLUGIN(Transform, "random_horizontal_flip", RandomHorizontalFlipOptions,
                         "Mirrors the image left-right with the given probability",
                         [](const RandomHorizontalFlipOptions& options, const TransformContext&)
                             -> absl::StatusOr<std::unique_ptr<Transform>> {
                           return std::make_unique<RandomHorizontalFlipTransform>(
                               options.probability());
                         },
                         ValidateRandomHorizontalFlipOptions);
// Augmentation: inference (predict) runs the training transforms without it.
PIPELINE_PLUGIN_TRAITS(Transform, "random_horizontal_flip", TransformTraits{.training_only = true});

}  // namespace
}  // namespace pipeline
