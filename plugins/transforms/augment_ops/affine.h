#ifndef PLUGINS_TRANSFORMS_AUGMENT_OPS_AFFINE_H_
#define PLUGINS_TRANSFORMS_AUGMENT_OPS_AFFINE_H_

// torchvision's affine warps on tensors (F.affine, F.rotate), shared by
// random_rotation, random_affine, trivial_augment_wide and rand_augment: the
// inverse affine matrix (_get_inverse_affine_matrix, in double as Python
// computes it), then torch's sampling grid and grid_sample
// (align_corners=False, zero padding) in float32, op for op (with the fused
// multiply-adds of LibTorch 1.13's AVX2 kernel, which x86-64 machines run), and
// the `fill` blend of _apply_grid_transform. u8 images are sampled as float32
// and rounded half to even, as torchvision does. Results match torchvision's
// bit for bit, u8 and f32 (augment_ops_test, random_rotation_test,
// random_affine_test).

#include <array>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "pipeline/interfaces/image.h"

namespace pipeline {
namespace augment_ops {

// torchvision's InterpolationMode values that its tensor warps take.
enum class Interpolation { kNearest, kBilinear };

// How a warp samples, and what lies outside the source image.
struct Warp {
  Interpolation interpolation = Interpolation::kNearest;
  // torchvision's `fill`: empty is fill=None (grid_sample's zeros, and no
  // mask); otherwise 1 value for every channel or one per channel, in the
  // image's units. Not the same as fill=[0] for BILINEAR: torchvision then
  // blends edge pixels with the fill by the sampled coverage, as here.
  std::vector<float> fill;
};

// The 6 coefficients of an inverse affine map, output -> input pixel, in
// torchvision's centered coordinates.
using AffineMatrix = std::array<double, 6>;

// _get_inverse_affine_matrix(center, angle, translate, scale, shear):
// angles in degrees; center and translate in pixels, center relative to
// the image center.
AffineMatrix InverseAffineMatrix(std::array<double, 2> center, double angle,
                                 std::array<double, 2> translate, double scale,
                                 std::array<double, 2> shear);

// _compute_affine_output_size: {height, width} of the image `matrix` maps a
// height x width image onto, whole (F.rotate's expand=True).
std::array<int, 2> ExpandedSize(const AffineMatrix& matrix, int height, int width);

// OK when `warp.fill` fits `image`: 1 value or one per channel, finite, and
// on a u8 image in [0, 255] (torchvision would wrap others around when
// casting back to uint8). The error starts with `transform`.
absl::Status CheckFill(const Image& image, const Warp& warp, absl::string_view transform);

// F_t.affine / F_t.rotate: the out_height x out_width image whose pixels
// are `image` sampled where `matrix` maps them. u8 or f32, any number of
// channels; `warp.fill` must pass CheckFill. Errors start with
// "augment_ops".
absl::StatusOr<Image> WarpAffine(const Image& image, const AffineMatrix& matrix, int out_height,
                                 int out_width, const Warp& warp);

// F.affine(img, angle, translate, scale, shear, interpolation, fill, center)
// in place: `center` in pixels from the top-left corner, none = the image
// center.
absl::Status Affine(Image& image, double angle, std::array<double, 2> translate, double scale,
                    std::array<double, 2> shear, std::optional<std::array<double, 2>> center,
                    const Warp& warp);

// F.rotate(img, angle, interpolation, expand, center, fill) in place: angle
// in degrees, counter-clockwise.
absl::Status Rotate(Image& image, double angle, bool expand,
                    std::optional<std::array<double, 2>> center, const Warp& warp);

}  // namespace augment_ops
}  // namespace pipeline

#endif  // PLUGINS_TRANSFORMS_AUGMENT_OPS_AFFINE_H_
