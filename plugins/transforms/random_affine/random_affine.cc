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

using random_affine::Range;
using Floats = google::protobuf::RepeatedField<float>;

absl::Status CheckFinite(const Floats& values, const char* field) {
  for (float v : values) {
    if (!std::isfinite(v)) {
      return absl::InvalidArgumentError(
          absl::StrCat("random_affine: ", field, " must be finite, got ", v));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckOrdered(float min, float max, const char* field) {
  if (min > max) {
    return absl::InvalidArgumentError(absl::StrCat("random_affine: ", field,
                                                   " [min, max] must have min <= max, got [",
                                                   min, ", ", max, "]"));
  }
  return absl::OkStatus();
}

// torchvision's _setup_angle for one value d >= 0, the range [-d, d].
absl::StatusOr<Range> SymmetricRange(float d, const char* field) {
  if (d < 0) {
    return absl::InvalidArgumentError(absl::StrCat("random_affine: a single ", field,
                                                   " value d must be >= 0 (the range [-d, d]), "
                                                   "got ",
                                                   d));
  }
  return Range{-d, d};
}

absl::StatusOr<Range> DegreesOf(const Floats& degrees) {
  RETURN_IF_ERROR(CheckFinite(degrees, "degrees"));
  if (degrees.size() == 1) return SymmetricRange(degrees[0], "degrees");
  if (degrees.size() == 2) {
    RETURN_IF_ERROR(CheckOrdered(degrees[0], degrees[1], "degrees"));
    return Range{degrees[0], degrees[1]};
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "random_affine: degrees takes 1 value d (the range [-d, d]) or 2 ([min, max]), got ",
      degrees.size()));
}

absl::Status SetTranslate(const Floats& translate, random_affine::Settings& settings) {
  RETURN_IF_ERROR(CheckFinite(translate, "translate"));
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
  RETURN_IF_ERROR(CheckFinite(scale, "scale"));
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
  RETURN_IF_ERROR(CheckOrdered(scale[0], scale[1], "scale"));
  settings.scale = Range{scale[0], scale[1]};
  return absl::OkStatus();
}

absl::Status SetShear(const Floats& shear, random_affine::Settings& settings) {
  RETURN_IF_ERROR(CheckFinite(shear, "shear"));
  switch (shear.size()) {
    case 0:
      return absl::OkStatus();
    case 1: {
      ASSIGN_OR_RETURN(settings.shear_x, SymmetricRange(shear[0], "shear"));
      return absl::OkStatus();
    }
    case 4:
      RETURN_IF_ERROR(CheckOrdered(shear[2], shear[3], "shear y"));
      settings.shear_y = Range{shear[2], shear[3]};
      [[fallthrough]];
    case 2:
      RETURN_IF_ERROR(CheckOrdered(shear[0], shear[1], "shear x"));
      settings.shear_x = Range{shear[0], shear[1]};
      return absl::OkStatus();
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "random_affine: shear takes 1 value s (x in [-s, s]), 2 (x in [min, max]) or 4 (x "
          "and y ranges), or none for no shear, got ",
          shear.size()));
  }
}

absl::Status SetWarp(const RandomAffineOptions& options, random_affine::Settings& settings) {
  RETURN_IF_ERROR(CheckFinite(options.center(), "center"));
  if (options.center_size() == 2) {
    settings.center = std::array<double, 2>{options.center(0), options.center(1)};
  } else if (options.center_size() != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "random_affine: center takes 2 values (x, y), or none for the image center, got ",
        options.center_size()));
  }
  if (options.interpolation() == RandomAffineOptions::BILINEAR) {
    settings.warp.interpolation = augment_ops::Interpolation::kBilinear;
  }
  RETURN_IF_ERROR(CheckFinite(options.fill(), "fill"));
  if (!options.fill().empty()) {
    settings.warp.fill.assign(options.fill().begin(), options.fill().end());
  }
  return absl::OkStatus();
}

absl::StatusOr<random_affine::Settings> SettingsOf(const RandomAffineOptions& options) {
  random_affine::Settings settings;
  ASSIGN_OR_RETURN(settings.degrees, DegreesOf(options.degrees()));
  RETURN_IF_ERROR(SetTranslate(options.translate(), settings));
  RETURN_IF_ERROR(SetScale(options.scale(), settings));
  RETURN_IF_ERROR(SetShear(options.shear(), settings));
  RETURN_IF_ERROR(SetWarp(options, settings));
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
