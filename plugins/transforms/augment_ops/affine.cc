#include "plugins/transforms/augment_ops/affine.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pipeline/image/image_ops.h"
#include "pipeline/util/simd.h"
#include "pipeline/util/status_macros.h"

namespace pipeline {
namespace augment_ops {
namespace {

// CPython's math.radians multiplies by pi / 180, computed once.
constexpr double kPi = 3.141592653589793;
double Radians(double degrees) { return degrees * (kPi / 180.0); }

// grid_sample's unnormalization, (g + 1) * size / 2 - 0.5, as one fused
// multiply-add (LibTorch's AVX2 kernel), computed in double: g + 1 is a
// float32 multiple of 2^-24 and size / 2 a multiple of 1/2 below 2^24, so
// the product and the difference are exact in double wherever the result
// is below 2^27, and the one rounding to float is the fused one. (Further
// out the pixel lies outside any image either way.) Unlike std::fma, which
// is a library call on baseline x86-64, this vectorizes.
PIPELINE_SIMD_INLINE float Unnormalize(float g, float half_size) {
  return static_cast<float>(static_cast<double>(g + 1.0f) * static_cast<double>(half_size) - 0.5);
}

// Where output pixel (x, y) samples the input, in input pixel coordinates:
// _gen_affine_grid's base grid times theta^T / [w/2, h/2] (unfused, as
// torch's own bmm loop; its BLAS product for larger grids gave the same
// results in the fixtures), then grid_sample's unnormalization. All
// float32.
class SourceGrid {
 public:
  SourceGrid(const AffineMatrix& m, int in_height, int in_width, int out_height,
             int out_width) {
    const float half_w = static_cast<float>(0.5 * in_width);
    const float half_h = static_cast<float>(0.5 * in_height);
    for (int k = 0; k < 3; ++k) {
      x_theta_[k] = static_cast<float>(m[k]) / half_w;
      y_theta_[k] = static_cast<float>(m[3 + k]) / half_h;
    }
    // torch.linspace(-ow * 0.5 + 0.5, ow * 0.5 - 0.5, ow): half-integers,
    // exact in float32.
    x_start_ = static_cast<float>(-out_width * 0.5 + 0.5);
    y_start_ = static_cast<float>(-out_height * 0.5 + 0.5);
    x_scale_ = static_cast<float>(in_width) / 2;
    y_scale_ = static_cast<float>(in_height) / 2;
  }

  std::pair<float, float> At(int x, int y) const {
    const float base_x = x_start_ + static_cast<float>(x);
    const float base_y = y_start_ + static_cast<float>(y);
    return {Source(base_x, base_y * x_theta_[1], x_theta_, x_scale_),
            Source(base_x, base_y * y_theta_[1], y_theta_, y_scale_)};
  }

  // Output row y's source positions, width of them: At(0..width-1, y).
  PIPELINE_SIMD_INLINE void Row(int y, int width, float* xs, float* ys) const {
    // Locals, not members, in the loop: stores to xs and ys could alias
    // the members and would keep it from vectorizing.
    const float x_start = x_start_, x_scale = x_scale_, y_scale = y_scale_;
    const float x_theta[3] = {x_theta_[0], x_theta_[1], x_theta_[2]};
    const float y_theta[3] = {y_theta_[0], y_theta_[1], y_theta_[2]};
    const float base_y = y_start_ + static_cast<float>(y);
    const float x_from_y = base_y * x_theta[1], y_from_y = base_y * y_theta[1];
    for (int x = 0; x < width; ++x) {
      const float base_x = x_start + static_cast<float>(x);
      xs[x] = Source(base_x, x_from_y, x_theta, x_scale);
      ys[x] = Source(base_x, y_from_y, y_theta, y_scale);
    }
  }

 private:
  // base_x * theta[0] + base_y * theta[1] + theta[2], left to right, with
  // from_y = base_y * theta[1] (the same for a whole row); unnormalized.
  PIPELINE_SIMD_INLINE static float Source(float base_x, float from_y, const float* theta,
                                            float half_size) {
    return Unnormalize(base_x * theta[0] + from_y + theta[2], half_size);
  }

  float x_theta_[3];
  float y_theta_[3];
  float x_start_, y_start_, x_scale_, y_scale_;
};

// One output pixel's source: up to 4 taps (index into the input's pixels,
// or -1 outside it) and their weights, and the sampled coverage (the mask
// channel torchvision appends when a fill is given).
struct Taps {
  int64_t index[4] = {-1, -1, -1, -1};
  float weight[4] = {0, 0, 0, 0};
  int count = 0;
  float coverage = 0;
};

int64_t IndexOrOutside(float x, float y, int height, int width) {
  if (!(x > -1.0f && x < static_cast<float>(width) && y > -1.0f &&
        y < static_cast<float>(height))) {
    return -1;
  }
  return static_cast<int64_t>(y) * width + static_cast<int64_t>(x);
}

// grid_sample's nearest: std::nearbyint rounds half to even, as the
// vectorized kernel's round() does.
Taps NearestTaps(float x, float y, int height, int width) {
  Taps taps;
  taps.count = 1;
  taps.index[0] = IndexOrOutside(std::nearbyint(x), std::nearbyint(y), height, width);
  taps.weight[0] = 1.0f;
  taps.coverage = taps.index[0] >= 0 ? 1.0f : 0.0f;
  return taps;
}

// grid_sample's bilinear: the nw, ne, sw, se weights as its kernel forms
// them; taps outside the input read 0.
Taps BilinearTaps(float x, float y, int height, int width) {
  const float x_w = std::floor(x), y_n = std::floor(y);
  const float w = x - x_w, e = 1.0f - w, n = y - y_n, s = 1.0f - n;
  Taps taps;
  taps.count = 4;
  const float xs[4] = {x_w, x_w + 1.0f, x_w, x_w + 1.0f};
  const float ys[4] = {y_n, y_n, y_n + 1.0f, y_n + 1.0f};
  const float weights[4] = {s * e, s * w, n * e, n * w};
  for (int t = 0; t < 4; ++t) {
    taps.index[t] = IndexOrOutside(xs[t], ys[t], height, width);
    taps.weight[t] = weights[t];
  }
  // The mask channel of ones, interpolated like the others.
  float coverage = 0;
  for (int t = 0; t < 4; ++t) coverage = coverage + (taps.index[t] >= 0 ? weights[t] : 0.0f);
  taps.coverage = coverage;
  return taps;
}

// torch.round then .to(uint8) for u8 images; floats stay as they are.
template <typename T>
T FromFloat(float v) {
  if constexpr (std::is_same_v<T, uint8_t>) {
    const float rounded = std::nearbyint(v);
    return static_cast<uint8_t>(std::min(std::max(rounded, 0.0f), 255.0f));
  } else {
    return v;
  }
}

template <typename T>
const std::vector<T>& ConstPixels(const Image& image) {
  if constexpr (std::is_same_v<T, uint8_t>) {
    return image.u8;
  } else {
    return image.f32;
  }
}

// Channel `ch` of the taps: nw * v_nw + ne * v_ne + sw * v_sw + se * v_se,
// left to right, the later terms fused (the AVX2 kernel again).
template <typename T>
float Interpolate(const std::vector<T>& src, const Taps& taps, int channels, int ch) {
  float v = 0;
  for (int t = 0; t < taps.count; ++t) {
    const float tap =
        taps.index[t] < 0 ? 0.0f : static_cast<float>(src[taps.index[t] * channels + ch]);
    v = t == 0 ? tap * taps.weight[t] : std::fma(tap, taps.weight[t], v);
  }
  return v;
}

// _apply_grid_transform's fill: where the mask is < 0.5 (nearest), or
// blended by the mask's coverage (bilinear), unfused (separate tensor ops).
float Filled(float v, const Taps& taps, float fill, Interpolation interpolation) {
  if (interpolation == Interpolation::kNearest) return taps.coverage < 0.5f ? fill : v;
  return v * taps.coverage + (1.0f - taps.coverage) * fill;
}

template <typename T>
void WarpT(const Image& in, Image& out, const SourceGrid& grid, const Warp& warp) {
  const std::vector<T>& src = ConstPixels<T>(in);
  std::vector<T>& dst = image_ops::Pixels<T>(out);
  const int c = in.channels;
  for (int y = 0; y < out.height; ++y) {
    for (int x = 0; x < out.width; ++x) {
      const auto [sx, sy] = grid.At(x, y);
      const Taps taps = warp.interpolation == Interpolation::kNearest
                            ? NearestTaps(sx, sy, in.height, in.width)
                            : BilinearTaps(sx, sy, in.height, in.width);
      T* pixel = &dst[(static_cast<size_t>(y) * out.width + x) * c];
      for (int ch = 0; ch < c; ++ch) {
        float v = Interpolate(src, taps, c, ch);
        if (!warp.fill.empty()) {
          v = Filled(v, taps, warp.fill[warp.fill.size() == 1 ? 0 : ch], warp.interpolation);
        }
        pixel[ch] = FromFloat<T>(v);
      }
    }
  }
}

// The nearest tap's whole pixel, half to even as std::nearbyint: v is
// clamped into RoundHalfEvenSmall's range first (WarpAffine sends images
// that large to WarpT, so a clamped v lies outside the source).
constexpr float kMaxRoundable = 4194304.0f;  // 2^22
PIPELINE_SIMD_INLINE int RoundToInt(float v) {
  return static_cast<int>(
      image_ops::RoundHalfEvenSmall(std::min(std::max(v, -kMaxRoundable), kMaxRoundable)));
}

// Output row y's nearest source pixels (x, y), rounded; the baseline and
// AVX2 builds of the loops (pipeline/util/simd.h) give the same values.
struct NearestRow {
  explicit NearestRow(int width) : x_source(width), y_source(width), xs(width), ys(width) {}
  std::vector<float> x_source, y_source;
  std::vector<int> xs, ys;
};

PIPELINE_SIMD_INLINE void FindNearestT(const SourceGrid& grid, int y, NearestRow& row) {
  const int width = static_cast<int>(row.xs.size());
  grid.Row(y, width, row.x_source.data(), row.y_source.data());
  const float* x_source = row.x_source.data();
  const float* y_source = row.y_source.data();
  int* xs = row.xs.data();
  int* ys = row.ys.data();
  for (int x = 0; x < width; ++x) {
    xs[x] = RoundToInt(x_source[x]);
    ys[x] = RoundToInt(y_source[x]);
  }
}

void FindNearestBaseline(const SourceGrid& grid, int y, NearestRow& row) {
  FindNearestT(grid, y, row);
}

PIPELINE_TARGET_AVX2 void FindNearestAvx2(const SourceGrid& grid, int y, NearestRow& row) {
  FindNearestT(grid, y, row);
}

// Copies one output row of nearest taps: runs of pixels that read
// consecutive pixels of one source row are one memcpy (whole rows for
// shifts, several pixels at a time for small rotations), runs outside the
// source get `outside` (one pixel's bytes, repeated). Returns the end of
// the row in `dst`.
uint8_t* CopyNearestRow(const Image& in, const NearestRow& row,
                        const std::vector<uint8_t>& outside, uint8_t* dst) {
  const std::vector<int>& xs = row.xs;
  const std::vector<int>& ys = row.ys;
  const int c = in.channels, n = static_cast<int>(xs.size());
  auto inside = [&](int x) {
    return xs[x] >= 0 && xs[x] < in.width && ys[x] >= 0 && ys[x] < in.height;
  };
  for (int x = 0; x < n;) {
    int end = x + 1;
    if (inside(x)) {
      while (end < n && inside(end) && ys[end] == ys[x] && xs[end] == xs[end - 1] + 1) ++end;
      const size_t from = (static_cast<size_t>(ys[x]) * in.width + xs[x]) * c;
      std::memcpy(dst, in.u8.data() + from, static_cast<size_t>(end - x) * c);
      dst += static_cast<size_t>(end - x) * c;
    } else {
      while (end < n && !inside(end)) ++end;
      for (int i = x; i < end; ++i) {
        for (int ch = 0; ch < c; ++ch) *dst++ = outside[ch];
      }
    }
    x = end;
  }
  return dst;
}

// Nearest on u8, the common case (rotate, affine, TrivialAugment,
// RandAugment): a pixel's one tap has weight 1 and coverage 1, so it is the
// source pixel's bytes, or the fill (0 without one) outside the source,
// exactly what WarpT computes, without its float round trip per channel.
void WarpNearestU8(const Image& in, Image& out, const SourceGrid& grid, const Warp& warp) {
  const int c = in.channels;
  std::vector<uint8_t> outside(c, 0);
  for (int ch = 0; ch < c && !warp.fill.empty(); ++ch) {
    outside[ch] = FromFloat<uint8_t>(warp.fill[warp.fill.size() == 1 ? 0 : ch]);
  }
  NearestRow row(out.width);
  const bool avx2 = UseAvx2();
  uint8_t* dst = out.u8.data();
  for (int y = 0; y < out.height; ++y) {
    if (avx2) {
      FindNearestAvx2(grid, y, row);
    } else {
      FindNearestBaseline(grid, y, row);
    }
    dst = CopyNearestRow(in, row, outside, dst);
  }
}

// The center relative to the image center, as F.affine and F.rotate turn
// it into center_f.
std::array<double, 2> CenterF(const Image& image, std::optional<std::array<double, 2>> center) {
  if (!center) return {0.0, 0.0};
  return {(*center)[0] - image.width * 0.5, (*center)[1] - image.height * 0.5};
}

}  // namespace

absl::Status CheckFill(const Image& image, const Warp& warp, absl::string_view transform) {
  const size_t n = warp.fill.size();
  if (n > 1 && n != static_cast<size_t>(image.channels)) {
    return absl::InvalidArgumentError(
        absl::StrCat(transform, ": fill has ", n, " values but the image has ", image.channels,
                     " channels (", image.ShapeString(), "); give 1 value or ", image.channels));
  }
  for (float v : warp.fill) {
    if (!std::isfinite(v)) {
      return absl::InvalidArgumentError(absl::StrCat(transform, ": fill must be finite, got ", v));
    }
    if (!image.is_float() && (v < 0 || v > 255)) {
      return absl::InvalidArgumentError(absl::StrCat(
          transform, ": fill ", v, " is outside [0, 255] and the ", image.ShapeString(),
          " image is u8"));
    }
  }
  return absl::OkStatus();
}

AffineMatrix InverseAffineMatrix(std::array<double, 2> center, double angle,
                                 std::array<double, 2> translate, double scale,
                                 std::array<double, 2> shear) {
  // Python's arithmetic, in its order, unfused (-ffp-contract=off).
  const double rot = Radians(angle);
  const double sx = Radians(shear[0]);
  const double sy = Radians(shear[1]);
  const double cx = center[0], cy = center[1];
  const double tx = translate[0], ty = translate[1];
  const double a = std::cos(rot - sy) / std::cos(sy);
  const double b = -std::cos(rot - sy) * std::tan(sx) / std::cos(sy) - std::sin(rot);
  const double c = std::sin(rot - sy) / std::cos(sy);
  const double d = -std::sin(rot - sy) * std::tan(sx) / std::cos(sy) + std::cos(rot);
  AffineMatrix m = {d, -b, 0.0, -c, a, 0.0};
  for (double& v : m) v = v / scale;
  m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty);
  m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty);
  m[2] += cx;
  m[5] += cy;
  return m;
}

std::array<int, 2> ExpandedSize(const AffineMatrix& matrix, int height, int width) {
  // The four corners through the matrix, in float32; min and max shifted
  // to [0, w] x [0, h], cut to 1e-4 (so 1e-15 does not round up a pixel).
  const float hw = static_cast<float>(0.5 * width), hh = static_cast<float>(0.5 * height);
  const float corners[4][2] = {{-hw, -hh}, {-hw, hh}, {hw, hh}, {hw, -hh}};
  float lo[2] = {INFINITY, INFINITY}, hi[2] = {-INFINITY, -INFINITY};
  for (const auto& p : corners) {
    for (int j = 0; j < 2; ++j) {
      float v = p[0] * static_cast<float>(matrix[3 * j]);
      v = v + p[1] * static_cast<float>(matrix[3 * j + 1]);
      v = v + static_cast<float>(matrix[3 * j + 2]);
      lo[j] = std::min(lo[j], v);
      hi[j] = std::max(hi[j], v);
    }
  }
  const float tol = static_cast<float>(1e-4);
  const float shift[2] = {hw, hh};
  int size[2];
  for (int j = 0; j < 2; ++j) {
    const float cmax = std::ceil(std::trunc((hi[j] + shift[j]) / tol) * tol);
    const float cmin = std::floor(std::trunc((lo[j] + shift[j]) / tol) * tol);
    size[j] = static_cast<int>(cmax - cmin);
  }
  return {size[1], size[0]};
}

absl::StatusOr<Image> WarpAffine(const Image& image, const AffineMatrix& matrix, int out_height,
                                 int out_width, const Warp& warp) {
  RETURN_IF_ERROR(image_ops::CheckImage(image, "augment_ops"));
  RETURN_IF_ERROR(CheckFill(image, warp, "augment_ops"));
  if (out_height <= 0 || out_width <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "augment_ops: the warped image would be ", out_height, "x", out_width, " pixels"));
  }
  Image out;
  out.height = out_height;
  out.width = out_width;
  out.channels = image.channels;
  const size_t count = out.pixel_count() * out.channels;
  const SourceGrid grid(matrix, image.height, image.width, out_height, out_width);
  if (image.is_float()) {
    out.f32.resize(count);
    WarpT<float>(image, out, grid, warp);
  } else {
    out.u8.resize(count);
    if (warp.interpolation == Interpolation::kNearest && image.height < kMaxRoundable / 2 &&
        image.width < kMaxRoundable / 2) {
      WarpNearestU8(image, out, grid, warp);
    } else {
      WarpT<uint8_t>(image, out, grid, warp);
    }
  }
  return out;
}

absl::Status Affine(Image& image, double angle, std::array<double, 2> translate, double scale,
                    std::array<double, 2> shear, std::optional<std::array<double, 2>> center,
                    const Warp& warp) {
  const AffineMatrix matrix =
      InverseAffineMatrix(CenterF(image, center), angle, translate, scale, shear);
  ASSIGN_OR_RETURN(image, WarpAffine(image, matrix, image.height, image.width, warp));
  return absl::OkStatus();
}

absl::Status Rotate(Image& image, double angle, bool expand,
                    std::optional<std::array<double, 2>> center, const Warp& warp) {
  // torchvision's rotate turns the other way from affine: it passes -angle.
  const AffineMatrix matrix =
      InverseAffineMatrix(CenterF(image, center), -angle, {0.0, 0.0}, 1.0, {0.0, 0.0});
  const std::array<int, 2> size =
      expand ? ExpandedSize(matrix, image.height, image.width)
             : std::array<int, 2>{image.height, image.width};
  ASSIGN_OR_RETURN(image, WarpAffine(image, matrix, size[0], size[1], warp));
  return absl::OkStatus();
}

}  // namespace augment_ops
}  // namespace pipeline
