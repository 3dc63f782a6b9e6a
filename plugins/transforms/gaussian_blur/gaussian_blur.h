#ifndef PLUGINS_TRANSFORMS_GAUSSIAN_BLUR_GAUSSIAN_BLUR_H_
#define PLUGINS_TRANSFORMS_GAUSSIAN_BLUR_GAUSSIAN_BLUR_H_

// torchvision's GaussianBlur split for the transform and its tests: the blur
// for a given sigma (F.gaussian_blur) and the drawing of sigma.

#include <vector>

#include "absl/status/status.h"
#include "pipeline/interfaces/image.h"
#include "pipeline/interfaces/random.h"

namespace pipeline {
namespace gaussian_blur {

// _get_gaussian_kernel1d: `size` float32 weights exp(-x^2 / (2 sigma^2)) at
// x = -(size-1)/2 ... (size-1)/2, divided by their sum.
std::vector<float> Kernel1d(int size, double sigma);

// F.gaussian_blur(img, [kernel_x, kernel_y], [sigma, sigma]) in place:
// reflect padding by half the kernel, then the kernel (applied separably, in
// double; torchvision convolves with the float32 outer product, so f32
// results agree to float rounding and u8 ones, rounded half to even as
// torchvision does, within 1). The kernel sizes must be odd, and each half
// smaller than the image side it runs along. Errors start with
// "gaussian_blur".
absl::Status Blur(Image& image, int kernel_x, int kernel_y, double sigma);

// GaussianBlur.get_params: sigma uniform in [min, max], as float32.
double DrawSigma(double sigma_min, double sigma_max, SampleRandom& random);

}  // namespace gaussian_blur
}  // namespace pipeline

#endif  // PLUGINS_TRANSFORMS_GAUSSIAN_BLUR_GAUSSIAN_BLUR_H_
