#include "plugins/transforms/augment_ops/color_ops.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

namespace pipeline {
namespace augment_ops {
namespace {

// Tensor.to(torch.uint8) of a float32 value clamped to [0, 255]: truncation.
uint8_t Truncate(float v) { return static_cast<uint8_t>(std::min(std::max(v, 0.0f), 255.0f)); }

// _blurred_degenerate_image: the 3x3 kernel (float32 1/13 and 5/13) over the
// inner pixels, rounded half to even; the border keeps its values. With n =
// the 8 neighbours + 5 * the center, torch's float sum is n / 13 within
// 1e-3, and n / 13 lies at least 1/26 from a .5, so it rounds to what n / 13
// rounds to: (2n + 13) / 26 in integers (loops that vectorize).
std::vector<uint8_t> Smoothed(const Image& image) {
  const int h = image.height, c = image.channels;
  const size_t stride = static_cast<size_t>(image.width) * c;
  std::vector<uint8_t> out = image.u8;
  for (int y = 1; y + 1 < h; ++y) {
    const uint8_t* up = image.u8.data() + (y - 1) * stride;
    const uint8_t* mid = up + stride;
    const uint8_t* down = mid + stride;
    uint8_t* dst = out.data() + y * stride;
    for (size_t i = c; i + c < stride; ++i) {
      const int neighbours = up[i - c] + up[i] + up[i + c] + mid[i - c] + mid[i + c] +
                             down[i - c] + down[i] + down[i + c];
      dst[i] = static_cast<uint8_t>((2 * (neighbours + 5 * mid[i]) + 13) / 26);
    }
  }
  return out;
}

// One 256-entry table per channel, a u8 -> u8 map.
using ChannelTables = std::vector<std::array<uint8_t, 256>>;

// Maps every value through its channel's table, in one pass.
void ApplyTables(Image& image, const ChannelTables& tables) {
  const int c = image.channels;
  uint8_t* v = image.u8.data();
  const size_t n = image.u8.size();
  if (c == 1) {
    for (size_t i = 0; i < n; ++i) v[i] = tables[0][v[i]];
    return;
  }
  for (size_t i = 0; i < n; i += c) {
    for (int ch = 0; ch < c; ++ch) v[i + ch] = tables[ch][v[i + ch]];
  }
}

// Each channel's histogram, in one pass.
std::vector<std::array<int64_t, 256>> Histograms(const Image& image) {
  const int c = image.channels;
  std::vector<std::array<int64_t, 256>> hist(c, std::array<int64_t, 256>{});
  for (size_t i = 0; i < image.u8.size(); i += c) {
    for (int ch = 0; ch < c; ++ch) ++hist[ch][image.u8[i + ch]];
  }
  return hist;
}

// _scale_channel's lookup table; the identity when its step is 0 (the
// channel is left as it is).
std::array<uint8_t, 256> EqualizeTable(const std::array<int64_t, 256>& hist) {
  std::array<uint8_t, 256> table;
  int64_t total = 0, last = 0;
  for (int64_t count : hist) {
    if (count == 0) continue;
    total += count;
    last = count;
  }
  const int64_t step = (total - last) / 255;
  if (step == 0) {
    for (int v = 0; v < 256; ++v) table[v] = static_cast<uint8_t>(v);
    return table;
  }
  // lut[v] = (cumsum[v - 1] + step // 2) // step, lut[0] = 0, clamped.
  table[0] = 0;
  int64_t cumsum = 0;
  for (int v = 1; v < 256; ++v) {
    cumsum += hist[v - 1];
    table[v] = static_cast<uint8_t>(std::min<int64_t>((cumsum + step / 2) / step, 255));
  }
  return table;
}

}  // namespace

void AdjustSharpness(Image& image, double factor) {
  if (image.height <= 2 || image.width <= 2) return;
  const std::vector<uint8_t> smoothed = Smoothed(image);
  // _blend: ratio * img + (1 - ratio) * smoothed, float32, truncated.
  const float ratio = static_cast<float>(factor);
  const float rest = static_cast<float>(1.0 - factor);
  // Pointers and count as locals: a u8 store may alias the vector's own
  // fields, which would keep the loop from vectorizing.
  uint8_t* values = image.u8.data();
  const uint8_t* smooth = smoothed.data();
  const size_t n = image.u8.size();
  for (size_t i = 0; i < n; ++i) {
    values[i] =
        Truncate(ratio * static_cast<float>(values[i]) + rest * static_cast<float>(smooth[i]));
  }
}

void Posterize(Image& image, int bits) {
  // -2^(8 - bits) as a uint8 mask: the low 8 - bits bits cleared.
  const uint8_t mask = static_cast<uint8_t>(-(1 << (8 - bits)));
  for (uint8_t& v : image.u8) v &= mask;
}

void Solarize(Image& image, double threshold) {
  // float(v) >= t for a u8 v is v >= ceil(t): an integer compare, branch
  // free, that vectorizes.
  const float t = static_cast<float>(threshold);
  if (t > 255.0f) return;
  const uint8_t first = t <= 0.0f ? 0 : static_cast<uint8_t>(std::ceil(t));
  for (uint8_t& v : image.u8) v = v >= first ? static_cast<uint8_t>(255 - v) : v;
}

void AutoContrast(Image& image) {
  // A histogram gives each channel's min and max; the map per value
  // becomes a table.
  const std::vector<std::array<int64_t, 256>> hist = Histograms(image);
  ChannelTables tables(image.channels);
  for (int ch = 0; ch < image.channels; ++ch) {
    int lo = 0, hi = 255;
    while (lo < 255 && hist[ch][lo] == 0) ++lo;
    while (hi > 0 && hist[ch][hi] == 0) --hi;
    float minimum = static_cast<float>(lo);
    // bound / tensor is Tensor.__rtruediv__: reciprocal() * bound.
    float scale = (1.0f / (static_cast<float>(hi) - minimum)) * 255.0f;
    // A constant channel: torchvision replaces the infinite scale.
    if (!std::isfinite(scale)) {
      minimum = 0;
      scale = 1;
    }
    for (int v = 0; v < 256; ++v) {
      tables[ch][v] = Truncate((static_cast<float>(v) - minimum) * scale);
    }
  }
  ApplyTables(image, tables);
}

void Equalize(Image& image) {
  const std::vector<std::array<int64_t, 256>> hist = Histograms(image);
  ChannelTables tables(image.channels);
  for (int ch = 0; ch < image.channels; ++ch) tables[ch] = EqualizeTable(hist[ch]);
  ApplyTables(image, tables);
}

}  // namespace augment_ops
}  // namespace pipeline
