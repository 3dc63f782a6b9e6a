#include "plugins/transforms/augment_ops/augment_ops.h"

#include <array>
#include <cmath>
#include <optional>

#include "absl/strings/str_cat.h"
#include "pipeline/image/image_ops.h"
#include "pipeline/util/status_macros.h"
#include "plugins/transforms/augment_ops/color_adjust.h"
#include "plugins/transforms/augment_ops/color_ops.h"

namespace pipeline {
namespace augment_ops {
namespace {

// CPython's math.degrees multiplies by 180 / pi, computed once.
constexpr double kPi = 3.141592653589793;
double Degrees(double radians) { return radians * (180.0 / kPi); }

// The float32 vector width of LibTorch's AVX2 kernels.
constexpr int kLanes = 8;

absl::Status Shear(Image& image, double slope, bool along_y, const Warp& warp) {
  const double degrees = Degrees(std::atan(slope));
  const std::array<double, 2> shear =
      along_y ? std::array<double, 2>{0.0, degrees} : std::array<double, 2>{degrees, 0.0};
  // About the top-left corner (center=[0, 0]), as torchvision's _apply_op
  // (after the official AutoAugment code).
  return Affine(image, 0.0, {0.0, 0.0}, 1.0, shear, std::array<double, 2>{0.0, 0.0}, warp);
}

absl::Status Translate(Image& image, double magnitude, bool along_y, const Warp& warp) {
  // int(magnitude): whole pixels, truncated toward zero.
  const double pixels = std::trunc(magnitude);
  const std::array<double, 2> by =
      along_y ? std::array<double, 2>{0.0, pixels} : std::array<double, 2>{pixels, 0.0};
  return Affine(image, 0.0, by, 1.0, {0.0, 0.0}, std::nullopt, warp);
}

// The factor 1 + magnitude of the blend ops, which torchvision refuses
// below 0.
absl::StatusOr<double> Factor(const OpCall& call) {
  const double factor = 1.0 + call.magnitude;
  if (!(factor >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("augment_ops: ", OpName(call.op), " magnitude must be >= -1 (factor 1 + ",
                     "magnitude >= 0), got ", call.magnitude));
  }
  return factor;
}

absl::StatusOr<int> PosterizeBits(double magnitude) {
  const double bits = std::trunc(magnitude);
  if (!(bits >= 0 && bits <= 8)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "augment_ops: Posterize keeps int(magnitude) bits, in [0, 8], got ", magnitude));
  }
  return static_cast<int>(bits);
}

absl::Status ApplyColorOp(Image& image, const OpCall& call) {
  switch (call.op) {
    case Op::kBrightness: {
      ASSIGN_OR_RETURN(const double factor, Factor(call));
      color_adjust::AdjustBrightness(image, factor);
      return absl::OkStatus();
    }
    case Op::kColor: {
      ASSIGN_OR_RETURN(const double factor, Factor(call));
      color_adjust::AdjustSaturation(image, factor);
      return absl::OkStatus();
    }
    case Op::kContrast: {
      ASSIGN_OR_RETURN(const double factor, Factor(call));
      color_adjust::AdjustContrast(image, factor);
      return absl::OkStatus();
    }
    case Op::kSharpness: {
      ASSIGN_OR_RETURN(const double factor, Factor(call));
      AdjustSharpness(image, factor);
      return absl::OkStatus();
    }
    default:
      return absl::InternalError(absl::StrCat("augment_ops: ", OpName(call.op),
                                              " is not a color op"));
  }
}

absl::Status ApplyValueOp(Image& image, const OpCall& call) {
  switch (call.op) {
    case Op::kPosterize: {
      ASSIGN_OR_RETURN(const int bits, PosterizeBits(call.magnitude));
      Posterize(image, bits);
      return absl::OkStatus();
    }
    case Op::kSolarize:
      if (!(call.magnitude <= 255)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "augment_ops: Solarize threshold must be <= 255, got ", call.magnitude));
      }
      Solarize(image, call.magnitude);
      return absl::OkStatus();
    case Op::kAutoContrast:
      AutoContrast(image);
      return absl::OkStatus();
    case Op::kEqualize:
      Equalize(image);
      return absl::OkStatus();
    default:
      return ApplyColorOp(image, call);
  }
}

OpRange Range(Op op, bool is_signed, int num_bins, double start, double end) {
  OpRange range;
  range.op = op;
  range.is_signed = is_signed;
  range.num_bins = num_bins;
  range.start = start;
  range.end = end;
  return range;
}

OpRange Unsigned(Op op) { return Range(op, false, 0, 0, 0); }

OpRange PosterizeRange(int num_bins, int levels) {
  OpRange range = Range(Op::kPosterize, false, num_bins, 0, 0);
  range.posterize_levels = levels;
  return range;
}

// Both spaces have the same ops; they differ in the ends of the ranges.
struct SpaceEnds {
  double shear, translate_x, translate_y, rotate, enhance;
  int posterize_levels;
};

std::vector<OpRange> Space(int n, const SpaceEnds& ends) {
  return {
      Unsigned(Op::kIdentity),
      Range(Op::kShearX, true, n, 0.0, ends.shear),
      Range(Op::kShearY, true, n, 0.0, ends.shear),
      Range(Op::kTranslateX, true, n, 0.0, ends.translate_x),
      Range(Op::kTranslateY, true, n, 0.0, ends.translate_y),
      Range(Op::kRotate, true, n, 0.0, ends.rotate),
      Range(Op::kBrightness, true, n, 0.0, ends.enhance),
      Range(Op::kColor, true, n, 0.0, ends.enhance),
      Range(Op::kContrast, true, n, 0.0, ends.enhance),
      Range(Op::kSharpness, true, n, 0.0, ends.enhance),
      PosterizeRange(n, ends.posterize_levels),
      Range(Op::kSolarize, false, n, 255.0, 0.0),
      Unsigned(Op::kAutoContrast),
      Unsigned(Op::kEqualize),
  };
}

}  // namespace

absl::string_view OpName(Op op) {
  static constexpr const char* kNames[] = {
      "Identity",  "ShearX",     "ShearY",   "TranslateX",   "TranslateY",
      "Rotate",    "Brightness", "Color",    "Contrast",     "Sharpness",
      "Posterize", "Solarize",   "AutoContrast", "Equalize",
  };
  return kNames[static_cast<int>(op)];
}

absl::Status CheckTakes(const Image& image, absl::string_view transform) {
  RETURN_IF_ERROR(image_ops::CheckImage(image, transform));
  if (image.is_float()) {
    return absl::InvalidArgumentError(absl::StrCat(
        transform, " needs a u8 image, as torchvision's uint8 tensors (put it before to_float), "
        "got an f32 ", image.ShapeString(), " image"));
  }
  if (image.channels != 1 && image.channels != 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        transform, " needs an image of 1 or 3 channels, got ", image.ShapeString()));
  }
  return absl::OkStatus();
}

absl::Status ValidateU8Fill(const std::vector<float>& fill, absl::string_view transform) {
  if (fill.size() != 0 && fill.size() != 1 && fill.size() != 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        transform, ": fill takes 1 value or one per channel (1 or 3), got ", fill.size()));
  }
  for (float v : fill) {
    if (!(v >= 0 && v <= 255)) {
      return absl::InvalidArgumentError(
          absl::StrCat(transform, ": fill must be in [0, 255] (u8 values), got ", v));
    }
  }
  return absl::OkStatus();
}

absl::Status ApplyOp(Image& image, const OpCall& call, const Warp& warp) {
  RETURN_IF_ERROR(CheckTakes(image, "augment_ops"));
  if (!std::isfinite(call.magnitude)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "augment_ops: ", OpName(call.op), " magnitude must be finite, got ", call.magnitude));
  }
  switch (call.op) {
    case Op::kIdentity:
      return absl::OkStatus();
    case Op::kShearX:
    case Op::kShearY:
      return Shear(image, call.magnitude, call.op == Op::kShearY, warp);
    case Op::kTranslateX:
    case Op::kTranslateY:
      return Translate(image, call.magnitude, call.op == Op::kTranslateY, warp);
    case Op::kRotate:
      return Rotate(image, call.magnitude, /*expand=*/false, std::nullopt, warp);
    default:
      return ApplyValueOp(image, call);
  }
}

std::vector<OpRange> TrivialAugmentWideSpace(int num_bins) {
  // The "wide" ranges: translation in absolute pixels, not image fractions.
  return Space(num_bins, {0.99, 32.0, 32.0, 135.0, 0.99, 6});
}

std::vector<OpRange> RandAugmentSpace(int num_bins, int height, int width) {
  return Space(num_bins,
               {0.3, 150.0 / 331.0 * width, 150.0 / 331.0 * height, 30.0, 0.9, 4});
}

double MagnitudeAt(const OpRange& range, int bin) {
  if (range.num_bins == 0) return 0.0;
  if (range.op == Op::kPosterize) {
    // torch.arange(n) / ((n - 1) / levels): int64 over a Python float, in
    // float32; .round() is half to even.
    const float divisor = static_cast<float>((range.num_bins - 1) / static_cast<double>(
                                                                       range.posterize_levels));
    return 8 - static_cast<int>(std::nearbyint(static_cast<float>(bin) / divisor));
  }
  return LinspaceAt(range.start, range.end, range.num_bins, bin);
}

OpCall ChooseOp(const OpRange& range, int bin, bool negate) {
  OpCall call{range.op, MagnitudeAt(range, bin)};
  if (range.is_signed && negate) call.magnitude *= -1.0;
  return call;
}

float LinspaceAt(double start_value, double end_value, int steps, int index) {
  const float start = static_cast<float>(start_value);
  const float end = static_cast<float>(end_value);
  const float step = (end - start) / static_cast<float>(steps - 1);
  const int halfway = steps / 2;
  // The kernel's scalar lambda, `start + step * idx` or
  // `end - step * (steps - idx - 1)`, which the compiler fused.
  auto scalar = [&](int idx) {
    return idx < halfway ? std::fma(step, static_cast<float>(idx), start)
                         : std::fma(-step, static_cast<float>(steps - idx - 1), end);
  };
  const int vectorized = steps / (2 * kLanes) * (2 * kLanes);
  if (index >= vectorized) return scalar(index);
  // Vectorized::arange(base, step): base + k * step, not fused.
  const int lane = index % kLanes;
  const float base = scalar(index - lane);
  return lane == 0 ? base : base + static_cast<float>(lane) * step;
}

}  // namespace augment_ops
}  // namespace pipeline
