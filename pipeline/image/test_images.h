#ifndef PIPELINE_IMAGE_TEST_IMAGES_H_
#define PIPELINE_IMAGE_TEST_IMAGES_H_

// Small hand-made images for the transform tests.

#include <cstdint>
#include <utility>
#include <vector>

#include "pipeline/interfaces/image.h"

namespace pipeline {
namespace testing {

// A height x width x channels u8 image holding `pixels` (HWC order).
inline Image U8Image(int height, int width, int channels, std::vector<uint8_t> pixels) {
  Image image;
  image.height = height;
  image.width = width;
  image.channels = channels;
  image.u8 = std::move(pixels);
  return image;
}

// The same for f32.
inline Image F32Image(int height, int width, int channels, std::vector<float> pixels) {
  Image image;
  image.height = height;
  image.width = width;
  image.channels = channels;
  image.f32 = std::move(pixels);
  return image;
}

// A u8 image whose values count up 0, 1, 2, ... in HWC order (wrapping at 256),
// so every pixel of a small image is distinct.
inline Image CountingU8Image(int height, int width, int channels) {
  std::vector<uint8_t> pixels(static_cast<size_t>(height) * width * channels);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i);
  return U8Image(height, width, channels, std::move(pixels));
}

}  // namespace testing
}  // namespace pipeline

#endif  // PIPELINE_IMAGE_TEST_IMAGES_H_
