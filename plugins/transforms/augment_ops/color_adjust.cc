#include "plugins/transforms/augment_ops/color_adjust.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "pipeline/image/image_ops.h"

namespace pipeline {
namespace color_adjust {
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

}  // namespace color_adjust
}  // namespace pipeline
