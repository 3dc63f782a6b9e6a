#ifndef PLUGINS_TRANSFORMS_AUGMENT_OPS_AUGMENT_OPS_H_
#define PLUGINS_TRANSFORMS_AUGMENT_OPS_AUGMENT_OPS_H_

// The ops TrivialAugmentWide and RandAugment choose from, as torchvision
// 0.14's autoaugment._apply_op applies them, and their augmentation spaces
// (_augmentation_space: each op's magnitude table and whether its sign is
// drawn). The plugins trivial_augment_wide and rand_augment draw an op and
// a magnitude from SampleRandom and call ApplyOp; tests call ApplyOp with
// fixed ones.

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "pipeline/interfaces/image.h"
#include "plugins/transforms/augment_ops/affine.h"

namespace pipeline {
namespace augment_ops {

// In torchvision's order of both spaces (the index a draw picks).
enum class Op {
  kIdentity,
  kShearX,
  kShearY,
  kTranslateX,
  kTranslateY,
  kRotate,
  kBrightness,
  kColor,
  kContrast,
  kSharpness,
  kPosterize,
  kSolarize,
  kAutoContrast,
  kEqualize,
};

// torchvision's name: "ShearX", "AutoContrast", ...
absl::string_view OpName(Op op);

// One op with its magnitude, signed as drawn.
struct OpCall {
  Op op = Op::kIdentity;
  double magnitude = 0;
};

// _apply_op(img, op, magnitude, interpolation, fill) in place, on a u8
// image of 1 or 3 channels:
//   ShearX/Y     F.affine shear of atan(magnitude) (a slope), about the
//                top-left corner
//   TranslateX/Y F.affine by int(magnitude) pixels
//   Rotate       F.rotate by magnitude degrees
//   Brightness, Color (saturation), Contrast, Sharpness: factor
//                1 + magnitude (color_jitter's adjustments for the first 3)
//   Posterize    int(magnitude) bits kept, in [0, 8]
//   Solarize     threshold magnitude, <= 255
//   AutoContrast, Equalize, Identity: magnitude unused
// `warp` is the interpolation and fill of the geometric ops. Errors start
// with "augment_ops".
absl::Status ApplyOp(Image& image, const OpCall& call, const Warp& warp);

// OK for a u8 image of 1 or 3 channels (what torchvision's TrivialAugmentWide
// and RandAugment take); otherwise an error starting with `transform`.
absl::Status CheckTakes(const Image& image, absl::string_view transform);

// The `fill` option of a transform on u8 images: none, 1 value or one per
// channel (1 or 3), each in [0, 255]; whether the count fits an image is
// checked when it comes (CheckFill). Errors start with `transform`.
absl::Status ValidateU8Fill(const std::vector<float>& fill, absl::string_view transform);

// The Warp of an options message with torchvision's `interpolation`
// (NEAREST or BILINEAR, its own enum) and `fill`.
template <typename Options>
Warp WarpOf(const Options& options) {
  Warp warp;
  if (options.interpolation() == Options::BILINEAR) warp.interpolation = Interpolation::kBilinear;
  warp.fill.assign(options.fill().begin(), options.fill().end());
  return warp;
}

// One entry of an augmentation space. Its magnitude table has num_bins
// values (0: torchvision's 0-d tensor(0.0), which draws no bin and means
// magnitude 0): torch.linspace(start, end, num_bins) in float32, or for
// Posterize 8 - round(i / ((num_bins - 1) / posterize_levels)).
struct OpRange {
  Op op = Op::kIdentity;
  bool is_signed = false;
  int num_bins = 0;
  double start = 0;
  double end = 0;
  int posterize_levels = 0;
};

// TrivialAugmentWide._augmentation_space(num_bins); num_bins >= 2.
std::vector<OpRange> TrivialAugmentWideSpace(int num_bins);

// RandAugment._augmentation_space(num_bins, (height, width)); num_bins >= 2.
std::vector<OpRange> RandAugmentSpace(int num_bins, int height, int width);

// magnitudes[bin] of the range's table, as torch computes it (0 for a
// range without bins). bin in [0, num_bins).
double MagnitudeAt(const OpRange& range, int bin);

// What torchvision applies for the draws (bin, negate): magnitudes[bin],
// negated when the range is signed and `negate` (the draw randint(2) == 1).
OpCall ChooseOp(const OpRange& range, int bin, bool negate);

// torch.linspace(start, end, steps)[index] in float32 (steps >= 2), as
// LibTorch 1.13's CPU kernel computes it with its AVX2 code: the first
// steps / 16 * 16 values in vectors of 8 (a fused multiply-add base plus
// k * step), the rest one by one with fused multiply-adds, from the start
// below steps / 2 and from the end above. Bit for bit what Debian's
// torchvision gives (augment_ops_test checks the tables).
float LinspaceAt(double start, double end, int steps, int index);

}  // namespace augment_ops
}  // namespace pipeline

#endif  // PLUGINS_TRANSFORMS_AUGMENT_OPS_AUGMENT_OPS_H_
