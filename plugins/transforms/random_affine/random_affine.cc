// transform `random_affine`: torchvision's RandomAffine — an angle, a
// shift, a scale and a shear drawn from the sample's SampleRandom, then the
// image warped by them about its center (or `center`) with nearest or
// bilinear sampling, uncovered pixels set to `fill`. Works on u8 and f32
// images and keeps the type and the size.
//
//   transforms {
//     name: "random_affine"
//     options {
//       [type.googleapis.com/pipeline.RandomAffineOptions] {
//         degrees: 10 translate: [0.1, 0.1] scale: [0.9, 1.1]
//       }
//     }
//   }

#include "plugins/transforms/random_affine/random_affine.h"

#include <cmath>
#include <memory>

#include "absl/strings/str_cat.h"
#include "pipeline/image/image_ops.h"
#include "pipeline/interfaces/transform.h"
#include "pipeline/util/status_macros.h"
#include "plugins/transforms/augment_ops/warp_options.h"
#include "plugins/transforms/random_affine/random_affine.pb.h"

namespace pipeline {
namespace random_affine {
namespace {

double DrawFloat(const Range& range, SampleRandom& random) {
  return static_cast<float>(random.Uniform(range.min, range.max));
}

// int(round(uniform(-max_shift, max_shift))): Python rounds half to even,
// as nearbyint does in the default rounding mode.
double DrawShift(double max_shift, SampleRandom& random) {
  return std::nearbyint(DrawFloat({-max_shift, max_shift}, random));
}

}  // namespace

Params DrawParams(const Settings& settings, int height, int width, SampleRandom& random) {
  Params params;
  params.angle = DrawFloat(settings.degrees, random);
  if (settings.translate) {
    const double max_dx = (*settings.translate)[0] * width;
    const double max_dy = (*settings.translate)[1] * height;
    params.translate[0] = DrawShift(max_dx, random);
    params.translate[1] = DrawShift(max_dy, random);
  }
  if (settings.scale) params.scale = DrawFloat(*settings.scale, random);
  if (settings.shear_x) params.shear[0] = DrawFloat(*settings.shear_x, random);
  if (settings.shear_y) params.shear[1] = DrawFloat(*settings.shear_y, random);
  return params;
}

absl::Status Warp(Image& image, const Params& params, const Settings& settings) {
  RETURN_IF_ERROR(image_ops::CheckImage(image, "random_affine"));
  RETURN_IF_ERROR(augment_ops::CheckFill(image, settings.warp, "random_affine"));
  return augment_ops::Affine(image, params.angle, params.translate, params.scale, params.shear,
                             settings.center, settings.warp);
}

}  // namespace random_affine

namespace {

using augment_ops::CheckFinite;
using Floats = google::protobuf::RepeatedField<float>;

constexpr char kName[] = "random_affine";

absl::Status SetTranslate(const Floats& translate, random_affine::Settings& settings) {
  RETURN_IF_ERROR(CheckFinite(translate, kName, "translate"));
  if (translate.empty()) return absl::OkStatus();
  if (translate.size() != 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "random_affine: translate takes 2 fractions (of the width, of the height), or none for "
        "no translation, got ",
        translate.size()));
  }
  for (float t : translate) {
    if (t < 0 || t > 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("random_affine: translate fractions must be in [0, 1], got ", t));
    }
  }
  settings.translate = std::array<double, 2>{translate[0], translate[1]};
  return absl::OkStatus();
}

absl::Status SetScale(const Floats& scale, random_affine::Settings& settings) {
  RETURN_IF_ERROR(CheckFinite(scale, kName, "scale"));
  if (scale.empty()) return absl::OkStatus();
  if (scale.size() != 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "random_affine: scale takes 2 values ([min, max]), or none for no scaling, got ",
        scale.size()));
  }
  if (scale[0] <= 0 || scale[1] <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "random_affine: scale values must be > 0, got [", scale[0], ", ", scale[1], "]"));
  }
  ASSIGN_OR_RETURN(settings.scale, augment_ops::OrderedRange(scale[0], scale[1], kName, "scale"));
  return absl::OkStatus();
}

// torchvision's _setup_angle(shear, req_sizes=(2, 4)).
absl::Status SetShear(const Floats& shear, random_affine::Settings& settings) {
  RETURN_IF_ERROR(CheckFinite(shear, kName, "shear"));
  switch (shear.size()) {
    case 0:
      return absl::OkStatus();
    case 1: {
      ASSIGN_OR_RETURN(settings.shear_x, augment_ops::SymmetricRange(shear[0], kName, "shear"));
      return absl::OkStatus();
    }
    case 2: {
      ASSIGN_OR_RETURN(settings.shear_x,
                       augment_ops::OrderedRange(shear[0], shear[1], kName, "shear x"));
      return absl::OkStatus();
    }
    case 4: {
      ASSIGN_OR_RETURN(settings.shear_x,
                       augment_ops::OrderedRange(shear[0], shear[1], kName, "shear x"));
      ASSIGN_OR_RETURN(settings.shear_y,
                       augment_ops::OrderedRange(shear[2], shear[3], kName, "shear y"));
      return absl::OkStatus();
    }
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "random_affine: shear takes 1 value s (x in [-s, s]), 2 (x in [min, max]) or 4 (x "
          "and y ranges), or none for no shear, got ",
          shear.size()));
  }
}

absl::StatusOr<random_affine::Settings> SettingsOf(const RandomAffineOptions& options) {
  random_affine::Settings settings;
  ASSIGN_OR_RETURN(settings.degrees, augment_ops::AngleRange(options.degrees(), kName, "degrees"));
  RETURN_IF_ERROR(SetTranslate(options.translate(), settings));
  RETURN_IF_ERROR(SetScale(options.scale(), settings));
  RETURN_IF_ERROR(SetShear(options.shear(), settings));
  ASSIGN_OR_RETURN(settings.center, augment_ops::CenterOf(options.center(), kName));
  if (options.interpolation() == RandomAffineOptions::BILINEAR) {
    settings.warp.interpolation = augment_ops::Interpolation::kBilinear;
  }
  ASSIGN_OR_RETURN(settings.warp.fill, augment_ops::FillOf(options.fill(), kName));
  return settings;
}

class RandomAffineTransform : public Transform {
 public:
  explicit RandomAffineTransform(const random_affine::Settings& settings)
      : settings_(settings) {}

  absl::Status Apply(Image& image, SampleRandom& random) const override {
    const random_affine::Params params =
        random_affine::DrawParams(settings_, image.height, image.width, random);
    return random_affine::Warp(image, params, settings_);
  }

 private:
  const random_affine::Settings settings_;
};

absl::Status ValidateRandomAffineOptions(const RandomAffineOptions& options) {
  return SettingsOf(options).status();
}

PIPELINE_REGISTER_PLUGIN(Transform, "random_affine", RandomAffineOptions,
                         "Rotation, shift, scaling and shear by random amounts",
                         [](const RandomAffineOptions& options, const TransformContext&)
                             -> absl::StatusOr<std::unique_ptr<Transform>> {
                           ASSIGN_OR_RETURN(const random_affine::Settings settings,
                                            SettingsOf(options));
                           return std::make_unique<RandomAffineTransform>(settings);
                         },
                         ValidateRandomAffineOptions);
// Augmentation: inference (predict) runs the training transforms without it.
PIPELINE_PLUGIN_TRAITS(Transform, "random_affine", TransformTraits{.training_only = true});

}  // namespace
}  // namespace pipeline
