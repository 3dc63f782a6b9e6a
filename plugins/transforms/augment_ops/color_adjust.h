#ifndef PLUGINS_TRANSFORMS_AUGMENT_OPS_COLOR_ADJUST_H_
#define PLUGINS_TRANSFORMS_AUGMENT_OPS_COLOR_ADJUST_H_

// torchvision.transforms.functional_tensor's adjust_brightness, _contrast,
// _saturation and _hue, with its float32 arithmetic and its truncation to
// uint8, so u8 results match bit for bit: what ColorJitter applies, and
// three of TrivialAugmentWide's and RandAugment's ops.

#include "pipeline/interfaces/image.h"

namespace pipeline {
namespace color_adjust {

// In place, on a u8 or f32 image of 1 or 3 channels (the caller checks).
// Saturation and hue leave 1-channel images unchanged, as torchvision does.
// Factors are doubles, as Python passes them; torchvision rounds them to
// float32 where it multiplies.
void AdjustBrightness(Image& image, double factor);
void AdjustContrast(Image& image, double factor);
void AdjustSaturation(Image& image, double factor);
void AdjustHue(Image& image, double factor);

}  // namespace color_adjust
}  // namespace pipeline

#endif  // PLUGINS_TRANSFORMS_AUGMENT_OPS_COLOR_ADJUST_H_
