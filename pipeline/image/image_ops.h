#ifndef PIPELINE_IMAGE_IMAGE_OPS_H_
#define PIPELINE_IMAGE_IMAGE_OPS_H_

// Pixel operations shared by the transform plugins. Each op is written once,
// as a template over the element type (in image_ops.cc), and works on u8 and
// f32 images alike, keeping the type. They follow torchvision's tensor
// functions (resize without antialias, crop, hflip), so augmentation ported
// from Python configs behaves the same.

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "pipeline/interfaces/image.h"
#include "pipeline/util/simd.h"

namespace pipeline {
namespace image_ops {

enum class Interpolation {
  // torch.nn.functional.interpolate(mode="bilinear", align_corners=False,
  // antialias=False): half-pixel centers, edges clamped. u8 results are
  // rounded half to even, as torchvision rounds uint8 tensors.
  kBilinear,
  // interpolate(mode="nearest"): source index floor(dst * in / out), which is
  // torchvision's NEAREST for tensors.
  kNearest,
};

using Region = ImageRegion;

// OK when `image` has positive height, width and channels and exactly one of
// its buffers holds height * width * channels values. The error starts with
// `transform`, the caller's name.
absl::Status CheckImage(const Image& image, absl::string_view transform);

// Resizes `region` of `image` to out_height x out_width exactly as if the
// region were cropped out first and only the crop resized (torchvision's
// resized_crop): interpolation clamps at the region's edges and never reads
// outside it. The region must lie inside the image.
absl::StatusOr<Image> ResizeRegion(const Image& image, const Region& region, int out_height,
                                   int out_width, Interpolation interpolation);

// ResizeRegion over the whole image.
absl::StatusOr<Image> Resize(const Image& image, int out_height, int out_width,
                             Interpolation interpolation);

// A copy of `region`; where it reaches past the image, the pixels are zero
// (torchvision's crop pads the same way).
absl::StatusOr<Image> Crop(const Image& image, const Region& region);

// Mirrors left and right, in place. `image` must pass CheckImage.
void FlipHorizontal(Image& image);

// Mirrors top and bottom, in place: whole rows swap. `image` must pass
// CheckImage.
void FlipVertical(Image& image);

// Python 3's round(): halves go to the even neighbour. torchvision rounds crop
// offsets and sizes with it, so 1.5 -> 2 but 2.5 -> 2.
int RoundHalfEven(double value);

// The same rounding for a float of magnitude at most 2^22, as a float:
// adding and subtracting 1.5 * 2^23 rounds to an integer half to even (the
// FPU's default mode), like torch.round, in two adds that vectorize, where
// std::nearbyint is a library call.
PIPELINE_SIMD_INLINE float RoundHalfEvenSmall(float value) {
  constexpr float kRound = 12582912.0f;
  return (value + kRound) - kRound;
}

// The pixel buffer of element type T: Pixels<uint8_t>(image) is image.u8,
// Pixels<float>(image) is image.f32.
template <typename T>
std::vector<T>& Pixels(Image& image);
template <>
inline std::vector<uint8_t>& Pixels<uint8_t>(Image& image) {
  return image.u8;
}
template <>
inline std::vector<float>& Pixels<float>(Image& image) {
  return image.f32;
}

// Calls fn(pixels) with the buffer the image uses, std::vector<uint8_t>& or
// std::vector<float>&; `fn` is a generic lambda, so an op is written once.
template <typename Fn>
decltype(auto) VisitPixels(Image& image, Fn&& fn) {
  if (image.is_float()) return std::forward<Fn>(fn)(image.f32);
  return std::forward<Fn>(fn)(image.u8);
}

}  // namespace image_ops
}  // namespace pipeline

#endif  // PIPELINE_IMAGE_IMAGE_OPS_H_
