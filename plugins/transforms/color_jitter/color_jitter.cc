// transform `color_jitter`: torchvision's ColorJitter — brightness,
// contrast, saturation and hue factors drawn uniformly from their ranges and
// applied in a random order, all drawn from the sample's SampleRandom. Works
// on u8 and f32 images of 1 or 3 channels; on 1 channel saturation and hue
// change nothing (torchvision's tensor ops do the same, following PIL).
//
//   transforms {
//     name: "color_jitter"
//     options {
//       [type.googleapis.com/pipeline.ColorJitterOptions] {
//         brightness: 0.4 contrast: 0.4 saturation: 0.4 hue: 0.1
//       }
//     }
//   }

#include "plugins/transforms/color_jitter/color_jitter.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pipeline/image/image_ops.h"
#include "pipeline/interfaces/transform.h"
#include "pipeline/util/status_macros.h"
#include "plugins/transforms/augment_ops/color_adjust.h"
#include "plugins/transforms/color_jitter/color_jitter.pb.h"

namespace pipeline {
namespace color_jitter {
namespace {
double DrawFactor(const std::optional<Range>& range, SampleRandom& random) {
  const double u = random.Uniform();
  if (!range) return 0;
  return static_cast<float>(range->min + (range->max - range->min) * u);
}

}  // namespace

Params DrawParams(const Ranges& ranges, SampleRandom& random) {
  Params params;
  // torch.randperm(4): every order equally likely.
  for (int i = 3; i > 0; --i) {
    std::swap(params.order[i], params.order[random.Below(i + 1)]);
  }
  const double brightness = DrawFactor(ranges.brightness, random);
  const double contrast = DrawFactor(ranges.contrast, random);
  const double saturation = DrawFactor(ranges.saturation, random);
  const double hue = DrawFactor(ranges.hue, random);
  if (ranges.brightness) params.brightness = brightness;
  if (ranges.contrast) params.contrast = contrast;
  if (ranges.saturation) params.saturation = saturation;
  if (ranges.hue) params.hue = hue;
  return params;
}

absl::Status ApplyParams(Image& image, const Params& params) {
  if (image.channels != 1 && image.channels != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("color_jitter needs an image of 1 or 3 channels, got ", image.ShapeString()));
  }
  for (int op : params.order) {
    if (op == kBrightness && params.brightness) color_adjust::AdjustBrightness(image, *params.brightness);
    if (op == kContrast && params.contrast) color_adjust::AdjustContrast(image, *params.contrast);
    if (op == kSaturation && params.saturation) color_adjust::AdjustSaturation(image, *params.saturation);
    if (op == kHue && params.hue) color_adjust::AdjustHue(image, *params.hue);
  }
  return absl::OkStatus();
}

}  // namespace color_jitter

namespace {

// torchvision's ColorJitter._check_input: one value v is [center - v,
// center + v] (clipped at 0 for the factors), two are [min, max]; a range of
// just the center is no change.
absl::StatusOr<std::optional<color_jitter::Range>> RangeOf(
    const google::protobuf::RepeatedField<float>& values, const char* field, bool is_hue) {
  const double center = is_hue ? 0.0 : 1.0;
  const double low = is_hue ? -0.5 : 0.0;
  const double high = is_hue ? 0.5 : INFINITY;
  for (float v : values) {
    if (!std::isfinite(v)) {
      return absl::InvalidArgumentError(
          absl::StrCat("color_jitter: ", field, " must be finite, got ", v));
    }
  }
  color_jitter::Range range;
  if (values.empty()) {
    return std::nullopt;
  } else if (values.size() == 1) {
    const double v = values[0];
    if (v < 0 || (is_hue && v > 0.5)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "color_jitter: ", field, " must be ", is_hue ? "in [0, 0.5]" : ">= 0", " (the range [",
          is_hue ? "-" : "1 - ", "v, ", is_hue ? "" : "1 + ", "v]), got ", v));
    }
    range = {is_hue ? -v : std::max(center - v, 0.0), center + v};
  } else if (values.size() == 2) {
    range = {values[0], values[1]};
    if (!(low <= range.min && range.min <= range.max && range.max <= high)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "color_jitter: ", field, " [min, max] must have ",
          is_hue ? "-0.5 <= min <= max <= 0.5" : "0 <= min <= max", ", got [", values[0], ", ",
          values[1], "]"));
    }
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("color_jitter: ", field, " takes 1 value or 2 ([min, max]), got ",
                     values.size()));
  }
  if (range.min == center && range.max == center) return std::nullopt;
  return range;
}

absl::StatusOr<color_jitter::Ranges> RangesOf(const ColorJitterOptions& options) {
  color_jitter::Ranges ranges;
  ASSIGN_OR_RETURN(ranges.brightness, RangeOf(options.brightness(), "brightness", false));
  ASSIGN_OR_RETURN(ranges.contrast, RangeOf(options.contrast(), "contrast", false));
  ASSIGN_OR_RETURN(ranges.saturation, RangeOf(options.saturation(), "saturation", false));
  ASSIGN_OR_RETURN(ranges.hue, RangeOf(options.hue(), "hue", true));
  return ranges;
}

class ColorJitterTransform : public Transform {
 public:
  explicit ColorJitterTransform(const color_jitter::Ranges& ranges) : ranges_(ranges) {}

  absl::Status Apply(Image& image, SampleRandom& random) const override {
    RETURN_IF_ERROR(image_ops::CheckImage(image, "color_jitter"));
    return color_jitter::ApplyParams(image, color_jitter::DrawParams(ranges_, random));
  }

 private:
  const color_jitter::Ranges ranges_;
};

absl::Status ValidateColorJitterOptions(const ColorJitterOptions& options) {
  return RangesOf(options).status();
}

PIPELINE_REGISTER_PLUGIN(Transform, "color_jitter", ColorJitterOptions,
                         "Random brightness, contrast, saturation and hue, in a random order",
                         [](const ColorJitterOptions& options, const TransformContext&)
                             -> absl::StatusOr<std::unique_ptr<Transform>> {
                           ASSIGN_OR_RETURN(const color_jitter::Ranges ranges,
                                            RangesOf(options));
                           return std::make_unique<ColorJitterTransform>(ranges);
                         },
                         ValidateColorJitterOptions);
// Augmentation: inference (predict) runs the training transforms without it.
PIPELINE_PLUGIN_TRAITS(Transform, "color_jitter", TransformTraits{.training_only = true});

}  // namespace
}  // namespace pipeline
