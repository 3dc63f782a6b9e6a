#ifndef PLUGINS_TRANSFORMS_AUGMENT_OPS_COLOR_OPS_H_
#define PLUGINS_TRANSFORMS_AUGMENT_OPS_COLOR_OPS_H_

// The pixel ops of TrivialAugmentWide and RandAugment that neither
// pipeline/image/image_ops nor color_jitter has (brightness, saturation and
// contrast are color_jitter's): torchvision.transforms.functional_tensor's
// adjust_sharpness, posterize, solarize, autocontrast and equalize, on u8
// images (torchvision takes only uint8 tensors for posterize and equalize),
// in place, each channel by itself, so 1 and 3 channels alike. The float32
// arithmetic is torch's, op for op, so results match bit for bit.

#include "pipeline/interfaces/image.h"

namespace pipeline {
namespace augment_ops {

// Blends the image with its 3x3 smoothed version (weights 1, center 5, /13;
// the border pixels kept): factor 0 = smoothed, 1 = unchanged, 2 = sharper.
// Images 2 pixels or less high or wide are left alone. `factor` >= 0.
void AdjustSharpness(Image& image, double factor);

// Keeps the `bits` (in [0, 8]) high bits of every value.
void Posterize(Image& image, int bits);

// Inverts (255 - v) every value v >= threshold, compared as float32.
void Solarize(Image& image, double threshold);

// Stretches each channel linearly so its minimum is 0 and maximum 255;
// a constant channel is left alone.
void AutoContrast(Image& image);

// Equalizes each channel's histogram with torchvision's lookup table: the
// step is the count of all pixels but those of the highest value present,
// over 255; a channel whose step is 0 is left alone.
void Equalize(Image& image);

}  // namespace augment_ops
}  // namespace pipeline

#endif  // PLUGINS_TRANSFORMS_AUGMENT_OPS_COLOR_OPS_H_
