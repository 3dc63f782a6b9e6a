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

#include <cmath>
#include <memory>

#include "absl/strings/str_cat.h"
#include "pipeline/image/image_ops.h"
#include "pipeline/interfaces/transform.h"
#include "pipeline/util/status_macros.h"
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

absl::Status CheckFinite(const google::protobuf::RepeatedField<float>& values,
                         const char* field) {
  for (float v : values) {
    if (!std::isfinite(v)) {
      return absl::InvalidArgumentError(
          absl::StrCat("random_rotation: ", field, " must be finite, got ", v));
    }
  }
  return absl::OkStatus();
}

// torchvision's _setup_angle: one value d is [-d, d], two are [min, max].
absl::Status SetDegrees(const RandomRotationOptions& options,
                        random_rotation::Settings& settings) {
  const auto& degrees = options.degrees();
  RETURN_IF_ERROR(CheckFinite(degrees, "degrees"));
  if (degrees.size() == 1) {
    if (degrees[0] < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "random_rotation: a single degrees value d must be >= 0 (the range [-d, d]), got ",
          degrees[0]));
    }
    settings.degrees_min = -degrees[0];
    settings.degrees_max = degrees[0];
  } else if (degrees.size() == 2) {
    if (degrees[0] > degrees[1]) {
      return absl::InvalidArgumentError(
          absl::StrCat("random_rotation: degrees [min, max] must have min <= max, got [",
                       degrees[0], ", ", degrees[1], "]"));
    }
    settings.degrees_min = degrees[0];
    settings.degrees_max = degrees[1];
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "random_rotation: degrees takes 1 value d (the range [-d, d]) or 2 ([min, max]), got ",
        degrees.size()));
  }
  return absl::OkStatus();
}

absl::StatusOr<random_rotation::Settings> SettingsOf(const RandomRotationOptions& options) {
  random_rotation::Settings settings;
  RETURN_IF_ERROR(SetDegrees(options, settings));
  settings.expand = options.expand();
  RETURN_IF_ERROR(CheckFinite(options.center(), "center"));
  if (options.center_size() == 2) {
    settings.center = std::array<double, 2>{options.center(0), options.center(1)};
  } else if (options.center_size() != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "random_rotation: center takes 2 values (x, y), or none for the image center, got ",
        options.center_size()));
  }
  if (options.interpolation() == RandomRotationOptions::BILINEAR) {
    settings.warp.interpolation = augment_ops::Interpolation::kBilinear;
  }
  RETURN_IF_ERROR(CheckFinite(options.fill(), "fill"));
  if (!options.fill().empty()) {
    settings.warp.fill.assign(options.fill().begin(), options.fill().end());
  }
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
