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
#include "plugins/transforms/color_jitter/color_jitter.pb.h"

namespace pipeline {
namespace color_jitter {
namespace {

// The arithmetic below is torch's float32 arithmetic, op for op: a Python
// float multiplying a tensor is rounded to float32 first, and float32 values
// become uint8 by truncation (Tensor.to(torch.uint8)).

float Clamp(float v, float bound) { return std::min(std::max(v, 0.0f), bound); }

// _blend(img1, img2, ratio) for one value.
template <typename T>
T Blend(T a, float b, float ratio, float one_minus_ratio) {
  const float v = ratio * static_cast<float>(a) + one_minus_ratio * b;
  if constexpr (std::is_same_v<T, uint8_t>) {
    return static_cast<uint8_t>(Clamp(v, 255.0f));
  } else {
    return Clamp(v, 1.0f);
  }
}

// rgb_to_grayscale: 0.2989 r + 0.587 g + 0.114 b, as the image's type.
template <typename T>
T Gray(T r, T g, T b) {
  const float l = 0.2989f * static_cast<float>(r) + 0.587f * static_cast<float>(g) +
                  0.114f * static_cast<float>(b);
  return static_cast<T>(l);
}

// Blend(v, b, ...) for every value; u8 values through a table of the 256
// results (the same arithmetic, once per possible value: a lookup is
// cheaper than the float round trip).
template <typename T>
void BlendAll(std::vector<T>& pixels, float b, float ratio, float one_minus_ratio) {
  if constexpr (std::is_same_v<T, uint8_t>) {
    std::array<uint8_t, 256> table;
    for (int v = 0; v < 256; ++v) {
      table[v] = Blend<uint8_t>(static_cast<uint8_t>(v), b, ratio, one_minus_ratio);
    }
    for (uint8_t& v : pixels) v = table[v];
  } else {
    for (T& v : pixels) v = Blend<T>(v, b, ratio, one_minus_ratio);
  }
}

template <typename T>
void BrightnessT(std::vector<T>& pixels, double factor) {
  const float ratio = static_cast<float>(factor);
  const float rest = static_cast<float>(1.0 - factor);
  BlendAll(pixels, 0.0f, ratio, rest);
}

template <typename T>
void ContrastT(Image& image, std::vector<T>& pixels, double factor) {
  // The mean of the gray image (the image itself for 1 channel), as float32.
  // u8 grays are integers, summed exactly (in integers, which vectorize).
  using Sum = std::conditional_t<std::is_same_v<T, uint8_t>, int64_t, double>;
  const size_t n = image.pixel_count();
  const T* values = pixels.data();
  Sum sum = 0;
  if (image.channels == 3) {
    for (size_t p = 0; p < n; ++p) {
      sum += static_cast<Sum>(Gray<T>(values[3 * p], values[3 * p + 1], values[3 * p + 2]));
    }
  } else {
    for (size_t p = 0; p < n; ++p) sum += static_cast<Sum>(values[p]);
  }
  const float mean = static_cast<float>(sum) / static_cast<float>(n);
  const float ratio = static_cast<float>(factor);
  const float rest = static_cast<float>(1.0 - factor);
  BlendAll(pixels, mean, ratio, rest);
}

template <typename T>
void SaturationT(Image& image, std::vector<T>& pixels, double factor) {
  const float ratio = static_cast<float>(factor);
  const float rest = static_cast<float>(1.0 - factor);
  for (size_t p = 0; p < image.pixel_count(); ++p) {
    T* rgb = &pixels[3 * p];
    const float gray = static_cast<float>(Gray<T>(rgb[0], rgb[1], rgb[2]));
    for (int c = 0; c < 3; ++c) rgb[c] = Blend<T>(rgb[c], gray, ratio, rest);
  }
}

// adjust_hue: _rgb2hsv, h = (h + factor) % 1, _hsv2rgb, for one pixel of
// values in [0, 1].
void ShiftHue(float& r, float& g, float& b, float shift) {
  const float maxc = std::max(std::max(r, g), b);
  const float minc = std::min(std::min(r, g), b);
  const bool eqc = maxc == minc;
  const float cr = maxc - minc;
  const float s = cr / (eqc ? 1.0f : maxc);
  const float cr_divisor = eqc ? 1.0f : cr;
  const float rc = (maxc - r) / cr_divisor;
  const float gc = (maxc - g) / cr_divisor;
  const float bc = (maxc - b) / cr_divisor;
  // torch sums three masked terms; two are (signed) zeros.
  float h;
  if (maxc == r) {
    h = bc - gc;
  } else if (maxc == g) {
    h = (2.0f + rc) - bc;
  } else {
    h = (4.0f + gc) - rc;
  }
  h = std::fmod(h / 6.0f + 1.0f, 1.0f);
  // Python's %, torch.remainder: the sign of the divisor.
  h = std::fmod(h + shift, 1.0f);
  if (h != 0 && h < 0) h += 1.0f;
  const float v = maxc;
  const float i_float = std::floor(h * 6.0f);
  const float f = (h * 6.0f) - i_float;
  const int i = ((static_cast<int>(i_float) % 6) + 6) % 6;
  const float p = std::clamp(v * (1.0f - s), 0.0f, 1.0f);
  const float q = std::clamp(v * (1.0f - s * f), 0.0f, 1.0f);
  const float t = std::clamp(v * (1.0f - s * (1.0f - f)), 0.0f, 1.0f);
  switch (i) {
    case 0: r = v; g = t; b = p; break;
    case 1: r = q; g = v; b = p; break;
    case 2: r = p; g = v; b = t; break;
    case 3: r = p; g = q; b = v; break;
    case 4: r = t; g = p; b = v; break;
    default: r = v; g = p; b = q; break;
  }
}

template <typename T>
void HueT(Image& image, std::vector<T>& pixels, double factor) {
  const float shift = static_cast<float>(factor);
  for (size_t p = 0; p < image.pixel_count(); ++p) {
    T* rgb = &pixels[3 * p];
    if constexpr (std::is_same_v<T, uint8_t>) {
      float r = static_cast<float>(rgb[0]) / 255.0f;
      float g = static_cast<float>(rgb[1]) / 255.0f;
      float b = static_cast<float>(rgb[2]) / 255.0f;
      ShiftHue(r, g, b, shift);
      rgb[0] = static_cast<uint8_t>(r * 255.0f);
      rgb[1] = static_cast<uint8_t>(g * 255.0f);
      rgb[2] = static_cast<uint8_t>(b * 255.0f);
    } else {
      ShiftHue(rgb[0], rgb[1], rgb[2], shift);
    }
  }
}

double DrawFactor(const std::optional<Range>& range, SampleRandom& random) {
  const double u = random.Uniform();
  if (!range) return 0;
  return static_cast<float>(range->min + (range->max - range->min) * u);
}

}  // namespace

void AdjustBrightness(Image& image, double factor) {
  image_ops::VisitPixels(image, [&](auto& pixels) { BrightnessT(pixels, factor); });
}

void AdjustContrast(Image& image, double factor) {
  image_ops::VisitPixels(image, [&](auto& pixels) { ContrastT(image, pixels, factor); });
}

void AdjustSaturation(Image& image, double factor) {
  if (image.channels != 3) return;
  image_ops::VisitPixels(image, [&](auto& pixels) { SaturationT(image, pixels, factor); });
}

void AdjustHue(Image& image, double factor) {
  if (image.channels != 3) return;
  image_ops::VisitPixels(image, [&](auto& pixels) { HueT(image, pixels, factor); });
}

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
    if (op == kBrightness && params.brightness) AdjustBrightness(image, *params.brightness);
    if (op == kContrast && params.contrast) AdjustContrast(image, *params.contrast);
    if (op == kSaturation && params.saturation) AdjustSaturation(image, *params.saturation);
    if (op == kHue && params.hue) AdjustHue(image, *params.hue);
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
