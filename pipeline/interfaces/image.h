#ifndef PIPELINE_INTERFACES_IMAGE_H_
#define PIPELINE_INTERFACES_IMAGE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace pipeline {

// One decoded sample image, height x width x channels, interleaved (HWC) —
// the layout decoders produce, so decoding needs no copy. Pixels are uint8
// until a `to_float` transform turns them into floats in [0, 1]; the loader
// converts to the model's NCHW float batch when it assembles a batch.
struct Image {
  int height = 0;
  int width = 0;
  int channels = 0;
  // Exactly one of these holds height * width * channels values.
  std::vector<uint8_t> u8;
  std::vector<float> f32;

  bool is_float() const { return !f32.empty(); }
  size_t pixel_count() const { return static_cast<size_t>(height) * width; }
  std::string ShapeString() const;  // "HxWxC"
};

// A rectangle of an image, in pixels.
struct ImageRegion {
  int top = 0;
  int left = 0;
  int height = 0;
  int width = 0;
};

// Picks the part of an image a caller will use, given the image's full
// height and width, before its pixels are decoded (see Dataset::GetRegion).
using RegionPlan = std::function<ImageRegion(int height, int width)>;

// A sample as datasets hand it out: the image and its class index.
struct Sample {
  Image image;
  int64_t label = 0;
};

}  // namespace pipeline

#endif  // PIPELINE_INTERFACES_IMAGE_H_
