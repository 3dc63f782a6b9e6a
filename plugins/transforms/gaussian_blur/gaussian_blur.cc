// transform `gaussian_blur`: torchvision's GaussianBlur — a sigma drawn
// uniformly from [min, max] from the sample's SampleRandom, then the image
// convolved with that Gaussian (reflect-padded, so the size is kept). Works
// on u8 and f32 images and keeps the type.
//
//   transforms {
//     name: "gaussian_blur"
//     options {
//       [type.googleapis.com/pipeline.GaussianBlurOptions] { kernel_size: 5 sigma: [0.1, 2] }
//     }
//   }

#include "plugins/transforms/gaussian_blur/gaussian_blur.h"

#include <cmath>
#include <cstdint>
#include <memory>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "pipeline/image/image_ops.h"
#include "pipeline/interfaces/transform.h"
#include "pipeline/util/status_macros.h"
#include "plugins/transforms/gaussian_blur/gaussian_blur.pb.h"

namespace pipeline {
namespace gaussian_blur {
namespace {

// torch's reflect padding: -1 -> 1, size -> size - 2.
int Reflect(int i, int size) {
  if (i < 0) return -i;
  if (i >= size) return 2 * (size - 1) - i;
  return i;
}

template <typename T>
void BlurT(Image& image, const std::vector<float>& kx, const std::vector<float>& ky) {
  std::vector<T>& pixels = image_ops::Pixels<T>(image);
  const int h = image.height, w = image.width, c = image.channels;
  const int hx = static_cast<int>(kx.size()) / 2, hy = static_cast<int>(ky.size()) / 2;
  // Rows first, into doubles; then columns.
  std::vector<double> rows(pixels.size());
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      for (int ch = 0; ch < c; ++ch) {
        double sum = 0;
        for (int d = -hx; d <= hx; ++d) {
          const size_t at = (static_cast<size_t>(y) * w + Reflect(x + d, w)) * c + ch;
          sum += static_cast<double>(kx[d + hx]) * static_cast<double>(pixels[at]);
        }
        rows[(static_cast<size_t>(y) * w + x) * c + ch] = sum;
      }
    }
  }
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      for (int ch = 0; ch < c; ++ch) {
        double sum = 0;
        for (int d = -hy; d <= hy; ++d) {
          sum += static_cast<double>(ky[d + hy]) *
                 rows[(static_cast<size_t>(Reflect(y + d, h)) * w + x) * c + ch];
        }
        const size_t at = (static_cast<size_t>(y) * w + x) * c + ch;
        if constexpr (std::is_same_v<T, uint8_t>) {
          // torch.round (halves to even), then the cast; the blur of values
          // in [0, 255] stays in range but for rounding.
          const double rounded = std::nearbyint(sum);
          pixels[at] = static_cast<uint8_t>(rounded < 0 ? 0 : rounded > 255 ? 255 : rounded);
        } else {
          pixels[at] = static_cast<float>(sum);
        }
      }
    }
  }
}

}  // namespace

std::vector<float> Kernel1d(int size, double sigma) {
  const float half = static_cast<float>((size - 1) * 0.5);
  const float s = static_cast<float>(sigma);
  std::vector<float> pdf(size);
  float sum = 0;
  for (int i = 0; i < size; ++i) {
    // torch.linspace(-half, half, size) is exact for these (half-)integers.
    const float x = -half + static_cast<float>(i);
    const float t = x / s;
    pdf[i] = std::exp(-0.5f * (t * t));
    sum += pdf[i];
  }
  for (float& v : pdf) v /= sum;
  return pdf;
}

absl::Status Blur(Image& image, int kernel_x, int kernel_y, double sigma) {
  RETURN_IF_ERROR(image_ops::CheckImage(image, "gaussian_blur"));
  if (kernel_x <= 0 || kernel_y <= 0 || kernel_x % 2 == 0 || kernel_y % 2 == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gaussian_blur: kernel sizes must be odd and > 0, got ", kernel_x, "x", kernel_y));
  }
  if (kernel_x / 2 >= image.width || kernel_y / 2 >= image.height) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gaussian_blur: the ", kernel_x, " (x) by ", kernel_y,
        " (y) kernel needs an image more than half a kernel wide and high (reflect padding), "
        "got ", image.ShapeString()));
  }
  if (!(sigma > 0)) {
    return absl::InvalidArgumentError(absl::StrCat("gaussian_blur: sigma must be > 0, got ",
                                                   sigma));
  }
  const std::vector<float> kx = Kernel1d(kernel_x, sigma);
  const std::vector<float> ky = Kernel1d(kernel_y, sigma);
  if (image.is_float()) {
    BlurT<float>(image, kx, ky);
  } else {
    BlurT<uint8_t>(image, kx, ky);
  }
  return absl::OkStatus();
}

double DrawSigma(double sigma_min, double sigma_max, SampleRandom& random) {
  return static_cast<float>(random.Uniform(sigma_min, sigma_max));
}

}  // namespace gaussian_blur

namespace {

struct BlurSettings {
  int kernel_x = 0;
  int kernel_y = 0;
  double sigma_min = 0.1;
  double sigma_max = 2.0;
};

absl::StatusOr<BlurSettings> SettingsOf(const GaussianBlurOptions& options) {
  BlurSettings settings;
  const auto& ks = options.kernel_size();
  if (ks.size() != 1 && ks.size() != 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gaussian_blur: kernel_size takes 1 value or 2 (x, y), got ", ks.size()));
  }
  for (int k : ks) {
    if (k <= 0 || k % 2 == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("gaussian_blur: kernel_size must be odd and > 0, got ", k));
    }
  }
  settings.kernel_x = ks[0];
  settings.kernel_y = ks.size() == 2 ? ks[1] : ks[0];
  const auto& sigma = options.sigma();
  if (sigma.size() == 1) {
    if (!(sigma[0] > 0 && std::isfinite(sigma[0]))) {
      return absl::InvalidArgumentError(
          absl::StrCat("gaussian_blur: a single sigma must be > 0, got ", sigma[0]));
    }
    settings.sigma_min = settings.sigma_max = sigma[0];
  } else if (sigma.size() == 2) {
    if (!(0 < sigma[0] && sigma[0] <= sigma[1] && std::isfinite(sigma[1]))) {
      return absl::InvalidArgumentError(
          absl::StrCat("gaussian_blur: sigma [min, max] must have 0 < min <= max, got [",
                       sigma[0], ", ", sigma[1], "]"));
    }
    settings.sigma_min = sigma[0];
    settings.sigma_max = sigma[1];
  } else if (!sigma.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gaussian_blur: sigma takes 1 value or 2 ([min, max]), got ", sigma.size()));
  }
  return settings;
}

class GaussianBlurTransform : public Transform {
 public:
  explicit GaussianBlurTransform(const BlurSettings& settings) : settings_(settings) {}

  absl::Status Apply(Image& image, SampleRandom& random) const override {
    const double sigma =
        gaussian_blur::DrawSigma(settings_.sigma_min, settings_.sigma_max, random);
    return gaussian_blur::Blur(image, settings_.kernel_x, settings_.kernel_y, sigma);
  }

 private:
  const BlurSettings settings_;
};

absl::Status ValidateGaussianBlurOptions(const GaussianBlurOptions& options) {
  return SettingsOf(options).status();
}

PIPELINE_REGISTER_PLUGIN(Transform, "gaussian_blur", GaussianBlurOptions,
                         "Gaussian blur with a random sigma",
                         [](const GaussianBlurOptions& options, const TransformContext&)
                             -> absl::StatusOr<std::unique_ptr<Transform>> {
                           ASSIGN_OR_RETURN(const BlurSettings settings, SettingsOf(options));
                           return std::make_unique<GaussianBlurTransform>(settings);
                         },
                         ValidateGaussianBlurOptions);
// Augmentation: inference (predict) runs the training transforms without it.
PIPELINE_PLUGIN_TRAITS(Transform, "gaussian_blur", TransformTraits{.training_only = true});

}  // namespace
}  // namespace pipeline
