// transform `random_rotation`: torchvision's RandomRotation — an angle drawn
// uniformly from [min, max] from the sample's SampleRandom, then the image
// rotated about its center (or `center`) with nearest or bilinear
// sampling, uncovered pixels set to `fill`. Works on u8 and f32 images and
// keeps the type; the size too, unless `expand`.
//
//   transforms {
//     name: "random_rotation"
//     options {
//       [type.googleapis.com/pipeline.RandomRotationOptions] {
//         degrees: 15 interpolation: BILINEAR
//       }
//     }
//   }

#include "plugins/transforms/random_rotation/random_rotation.h"

#include <memory>

#include "pipeline/image/image_ops.h"
#include "pipeline/interfaces/transform.h"
#include "pipeline/util/status_macros.h"
#include "plugins/transforms/augment_ops/warp_options.h"
#include "plugins/transforms/random_rotation/random_rotation.pb.h"

namespace pipeline {
namespace random_rotation {

double DrawAngle(const Settings& settings, SampleRandom& random) {
  return static_cast<float>(random.Uniform(settings.degrees_min, settings.degrees_max));
}

absl::Status Rotate(Image& image, double angle, const Settings& settings) {
  RETURN_IF_ERROR(image_ops::CheckImage(image, "random_rotation"));
  RETURN_IF_ERROR(augment_ops::CheckFill(image, settings.warp, "random_rotation"));
  return augment_ops::Rotate(image, angle, settings.expand, settings.center, settings.warp);
}

}  // namespace random_rotation

namespace {

absl::StatusOr<random_rotation::Settings> SettingsOf(const RandomRotationOptions& options) {
  constexpr char kName[] = "random_rotation";
  random_rotation::Settings settings;
  ASSIGN_OR_RETURN(const augment_ops::Range degrees,
                   augment_ops::AngleRange(options.degrees(), kName, "degrees"));
  settings.degrees_min = degrees.min;
  settings.degrees_max = degrees.max;
  settings.expand = options.expand();
  ASSIGN_OR_RETURN(settings.center, augment_ops::CenterOf(options.center(), kName));
  if (options.interpolation() == RandomRotationOptions::BILINEAR) {
    settings.warp.interpolation = augment_ops::Interpolation::kBilinear;
  }
  ASSIGN_OR_RETURN(settings.warp.fill, augment_ops::FillOf(options.fill(), kName));
  return settings;
}

class RandomRotationTransform : public Transform {
 public:
  explicit RandomRotationTransform(const random_rotation::Settings& settings)
      : settings_(settings) {}

  absl::Status Apply(Image& image, SampleRandom& random) const override {
    const double angle = random_rotation::DrawAngle(settings_, random);
    return random_rotation::Rotate(image, angle, settings_);
  }

 private:
  const random_rotation::Settings settings_;
};

absl::Status ValidateRandomRotationOptions(const RandomRotationOptions& options) {
  return SettingsOf(options).status();
}

PIPELINE_REGISTER_PLUGIN(Transform, "random_rotation", RandomRotationOptions,
                         "Rotation by a random angle",
                         [](const RandomRotationOptions& options, const TransformContext&)
                             -> absl::StatusOr<std::unique_ptr<Transform>> {
                           ASSIGN_OR_RETURN(const random_rotation::Settings settings,
                                            SettingsOf(options));
                           return std::make_unique<RandomRotationTransform>(settings);
                         },
                         ValidateRandomRotationOptions);
// Augmentation: inference (predict) runs the training transforms without it.
PIPELINE_PLUGIN_TRAITS(Transform, "random_rotation", TransformTraits{.training_only = true});

}  // namespace
}  // namespace pipeline
