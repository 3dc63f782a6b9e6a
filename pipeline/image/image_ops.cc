#include "pipeline/image/image_ops.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "pipeline/util/simd.h"

namespace pipeline {
namespace image_ops {
namespace {

template <typename T>
const std::vector<T>& ConstPixels(const Image& image) {
  return Pixels<T>(const_cast<Image&>(image));
}

// A height x width x channels image of element type T, all zero.
template <typename T>
Image Blank(int height, int width, int channels) {
  Image out;
  out.height = height;
  out.width = width;
  out.channels = channels;
  Pixels<T>(out).assign(static_cast<size_t>(height) * width * channels, T(0));
  return out;
}

// Interpolated values are computed in float; Store turns them into T.
template <typename T>
T Store(float value);

template <>
PIPELINE_SIMD_INLINE float Store<float>(float value) {
  return value;
}

template <>
PIPELINE_SIMD_INLINE uint8_t Store<uint8_t>(float value) {
  value = std::min(std::max(value, 0.0f), 255.0f);
  return static_cast<uint8_t>(static_cast<int>(RoundHalfEvenSmall(value)));
}

// ATen's compute_source_index_and_lambda (UpSample.h), in float as ATen does
// for float tensors, so results match interpolate() to float rounding.
void LinearSource(int in_size, int out_size, int dst, int* i0, int* i1, float* w0, float* w1) {
  if (in_size == out_size) {
    *i0 = *i1 = dst;
    *w0 = 1.0f;
    *w1 = 0.0f;
    return;
  }
  const float scale = static_cast<float>(in_size) / static_cast<float>(out_size);
  float real = scale * (static_cast<float>(dst) + 0.5f) - 0.5f;
  if (real < 0.0f) real = 0.0f;
  const int index = static_cast<int>(real);
  *i0 = index;
  *i1 = index + (index < in_size - 1 ? 1 : 0);
  *w1 = std::min(std::max(real - static_cast<float>(index), 0.0f), 1.0f);
  *w0 = 1.0f - *w1;
}

// ATen's nearest_idx (UpSample.h).
int NearestSource(int in_size, int out_size, int dst) {
  if (out_size == in_size) return dst;
  if (out_size == 2 * in_size) return dst >> 1;
  const float scale = static_cast<float>(in_size) / static_cast<float>(out_size);
  return std::min(static_cast<int>(std::floor(static_cast<float>(dst) * scale)), in_size - 1);
}

// Bilinear in two passes per output row. First the two source rows it needs
// are blended over the region's columns; then that row is interpolated along
// x: each output value's two neighbours are gathered into two contiguous rows
// (plain loads and stores, per pixel, unrolled over channels) and blended in
// one loop that vectorizes, rounding and clamping included. Blending rows
// first does one pass over region_width values per output row where x-first
// would do two x-interpolations of out_width values; exact arithmetic is the
// same either way, and float rounding differs by an ulp. kChannels is the
// channel count when it is known at compile time (1 or 3, nearly every
// image); 0 reads it at run time.
template <int kChannels, typename T>
PIPELINE_SIMD_INLINE void ResizeBilinearT(const Image& image, const Region& region, Image& out) {
  const int channels = kChannels > 0 ? kChannels : image.channels;
  const size_t src_stride = static_cast<size_t>(image.width) * channels;
  const int row_len = out.width * channels;
  const int region_len = region.width * channels;
  // Offsets (in values) of each output pixel's two source pixels, and the
  // weights of each output value.
  std::vector<int> x0(out.width), x1(out.width);
  std::vector<float> wx0(row_len), wx1(row_len);
  for (int ox = 0; ox < out.width; ++ox) {
    int i0, i1;
    float w0, w1;
    LinearSource(region.width, out.width, ox, &i0, &i1, &w0, &w1);
    x0[ox] = i0 * channels;
    x1[ox] = i1 * channels;
    for (int c = 0; c < channels; ++c) {
      wx0[ox * channels + c] = w0;
      wx1[ox * channels + c] = w1;
    }
  }

  const T* src = ConstPixels<T>(image).data() + static_cast<size_t>(region.left) * channels;
  std::vector<float> blended(region_len), left(row_len), right(row_len);
  T* dst = Pixels<T>(out).data();
  for (int oy = 0; oy < out.height; ++oy) {
    int y0, y1;
    float wy0, wy1;
    LinearSource(region.height, out.height, oy, &y0, &y1, &wy0, &wy1);
    const T* top = src + static_cast<size_t>(region.top + y0) * src_stride;
    const T* bottom = src + static_cast<size_t>(region.top + y1) * src_stride;
    float* mid = blended.data();
    for (int j = 0; j < region_len; ++j) {
      mid[j] = wy0 * static_cast<float>(top[j]) + wy1 * static_cast<float>(bottom[j]);
    }
    float* l = left.data();
    float* r = right.data();
    for (int ox = 0; ox < out.width; ++ox) {
      const float* a = mid + x0[ox];
      const float* b = mid + x1[ox];
      for (int c = 0; c < channels; ++c) {
        l[ox * channels + c] = a[c];
        r[ox * channels + c] = b[c];
      }
    }
    T* out_row = dst + static_cast<size_t>(oy) * row_len;
    const float* w0 = wx0.data();
    const float* w1 = wx1.data();
    for (int k = 0; k < row_len; ++k) out_row[k] = Store<T>(w0[k] * l[k] + w1[k] * r[k]);
  }
}

template <typename T>
PIPELINE_SIMD_INLINE void ResizeBilinearAnyChannels(const Image& image, const Region& region,
                                                    Image& out) {
  switch (image.channels) {
    case 1:
      return ResizeBilinearT<1, T>(image, region, out);
    case 3:
      return ResizeBilinearT<3, T>(image, region, out);
    default:
      return ResizeBilinearT<0, T>(image, region, out);
  }
}

// The same loops compiled twice (pipeline/util/simd.h).
template <typename T>
void ResizeBilinearBaseline(const Image& image, const Region& region, Image& out) {
  ResizeBilinearAnyChannels<T>(image, region, out);
}
template <typename T>
PIPELINE_TARGET_AVX2 void ResizeBilinearAvx2(const Image& image, const Region& region,
                                             Image& out) {
  ResizeBilinearAnyChannels<T>(image, region, out);
}

template <typename T>
void ResizeBilinear(const Image& image, const Region& region, Image& out) {
  if (UseAvx2()) {
    ResizeBilinearAvx2<T>(image, region, out);
  } else {
    ResizeBilinearBaseline<T>(image, region, out);
  }
}

template <typename T>
void ResizeNearest(const Image& image, const Region& region, Image& out) {
  const int channels = image.channels;
  const size_t src_stride = static_cast<size_t>(image.width) * channels;
  const int row_len = out.width * channels;
  std::vector<int> xs(row_len);
  for (int ox = 0; ox < out.width; ++ox) {
    const int sx = region.left + NearestSource(region.width, out.width, ox);
    for (int c = 0; c < channels; ++c) xs[ox * channels + c] = sx * channels + c;
  }
  const T* src = ConstPixels<T>(image).data();
  T* dst = Pixels<T>(out).data();
  for (int oy = 0; oy < out.height; ++oy) {
    const int sy = region.top + NearestSource(region.height, out.height, oy);
    const T* in = src + static_cast<size_t>(sy) * src_stride;
    T* out_row = dst + static_cast<size_t>(oy) * row_len;
    for (int k = 0; k < row_len; ++k) out_row[k] = in[xs[k]];
  }
}

template <typename T>
Image ResizeRegionT(const Image& image, const Region& region, int out_height, int out_width,
                    Interpolation interpolation) {
  Image out = Blank<T>(out_height, out_width, image.channels);
  if (interpolation == Interpolation::kNearest) {
    ResizeNearest<T>(image, region, out);
  } else {
    ResizeBilinear<T>(image, region, out);
  }
  return out;
}

template <typename T>
Image CropT(const Image& image, const Region& region) {
  Image out = Blank<T>(region.height, region.width, image.channels);
  const int channels = image.channels;
  // The part of the region inside the image, in region coordinates.
  const int y_begin = std::max(0, -region.top);
  const int y_end = std::min(region.height, image.height - region.top);
  const int x_begin = std::max(0, -region.left);
  const int x_end = std::min(region.width, image.width - region.left);
  if (y_begin >= y_end || x_begin >= x_end) return out;
  const T* src = ConstPixels<T>(image).data();
  T* dst = Pixels<T>(out).data();
  const size_t count = static_cast<size_t>(x_end - x_begin) * channels;
  for (int y = y_begin; y < y_end; ++y) {
    const T* in = src + (static_cast<size_t>(region.top + y) * image.width + region.left + x_begin) *
                            channels;
    std::copy(in, in + count,
              dst + (static_cast<size_t>(y) * region.width + x_begin) * channels);
  }
  return out;
}

template <typename T>
void FlipHorizontalT(Image& image) {
  const int channels = image.channels;
  const size_t stride = static_cast<size_t>(image.width) * channels;
  T* data = Pixels<T>(image).data();
  for (int y = 0; y < image.height; ++y) {
    T* row = data + y * stride;
    for (int left = 0, right = image.width - 1; left < right; ++left, --right) {
      std::swap_ranges(row + left * channels, row + (left + 1) * channels, row + right * channels);
    }
  }
}

template <typename T>
void FlipVerticalT(Image& image) {
  const size_t stride = static_cast<size_t>(image.width) * image.channels;
  T* data = Pixels<T>(image).data();
  for (int top = 0, bottom = image.height - 1; top < bottom; ++top, --bottom) {
    std::swap_ranges(data + top * stride, data + (top + 1) * stride, data + bottom * stride);
  }
}

std::string RegionString(const Region& region) {
  return absl::StrCat(region.height, "x", region.width, " at (top ", region.top, ", left ",
                      region.left, ")");
}

}  // namespace

absl::Status CheckImage(const Image& image, absl::string_view transform) {
  if (image.height <= 0 || image.width <= 0 || image.channels <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(transform, ": the image is empty (", image.ShapeString(), ")"));
  }
  if (!image.u8.empty() && !image.f32.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        transform, ": the image holds both u8 and f32 pixels (", image.ShapeString(), ")"));
  }
  const size_t expected = image.pixel_count() * image.channels;
  const size_t held = image.is_float() ? image.f32.size() : image.u8.size();
  if (held != expected) {
    return absl::InvalidArgumentError(absl::StrCat(transform, ": a ", image.ShapeString(),
                                                   " image needs ", expected,
                                                   " values but holds ", held));
  }
  return absl::OkStatus();
}

absl::StatusOr<Image> ResizeRegion(const Image& image, const Region& region, int out_height,
                                   int out_width, Interpolation interpolation) {
  if (auto status = CheckImage(image, "resize"); !status.ok()) return status;
  if (region.height <= 0 || region.width <= 0 || region.top < 0 || region.left < 0 ||
      region.top + region.height > image.height || region.left + region.width > image.width) {
    return absl::InvalidArgumentError(absl::StrCat("resize: the region ", RegionString(region),
                                                   " is not inside the ", image.ShapeString(),
                                                   " image"));
  }
  if (out_height <= 0 || out_width <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("resize: the output size ", out_height, "x", out_width, " is empty"));
  }
  return image.is_float()
             ? ResizeRegionT<float>(image, region, out_height, out_width, interpolation)
             : ResizeRegionT<uint8_t>(image, region, out_height, out_width, interpolation);
}

absl::StatusOr<Image> Resize(const Image& image, int out_height, int out_width,
                             Interpolation interpolation) {
  return ResizeRegion(image, Region{0, 0, image.height, image.width}, out_height, out_width,
                      interpolation);
}

absl::StatusOr<Image> Crop(const Image& image, const Region& region) {
  if (auto status = CheckImage(image, "crop"); !status.ok()) return status;
  if (region.height <= 0 || region.width <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("crop: the region ", RegionString(region), " is empty"));
  }
  return image.is_float() ? CropT<float>(image, region) : CropT<uint8_t>(image, region);
}

void FlipHorizontal(Image& image) {
  if (image.is_float()) {
    FlipHorizontalT<float>(image);
  } else {
    FlipHorizontalT<uint8_t>(image);
  }
}

void FlipVertical(Image& image) {
  if (image.is_float()) {
    FlipVerticalT<float>(image);
  } else {
    FlipVerticalT<uint8_t>(image);
  }
}

int RoundHalfEven(double value) { return static_cast<int>(std::nearbyint(value)); }

}  // namespace image_ops
}  // namespace pipeline
