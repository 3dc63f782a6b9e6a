// transform `random_erasing`: torchvision's RandomErasing — with chance p,
// a rectangle of random area and aspect ratio is overwritten with `value`
// (or normal noise), all drawn from the sample's SampleRandom. Works on u8
// and f32 images and keeps the type; see the options for where it belongs
// in the transform list.
//
//   transforms {
//     name: "random_erasing"
//     options { [type.googleapis.com/pipeline.RandomErasingOptions] { p: 0.25 } }
//   }

#include "plugins/transforms/random_erasing/random_erasing.h"

#include <cmath>
#include <cstdint>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "pipeline/image/image_ops.h"
#include "pipeline/interfaces/transform.h"
#include "pipeline/util/status_macros.h"
#include "plugins/transforms/random_erasing/random_erasing.pb.h"

namespace pipeline {
namespace random_erasing {
namespace {

constexpr int kAttempts = 10;
constexpr double kPi = 3.14159265358979323846;

// Box-Muller: one standard normal value from two uniform draws.
float Normal(SampleRandom& random) {
  const double u1 = random.Uniform();
  const double u2 = random.Uniform();
  return static_cast<float>(std::sqrt(-2.0 * std::log1p(-u1)) * std::cos(2.0 * kPi * u2));
}

template <typename T>
void EraseT(Image& image, const Erasure& erasure) {
  std::vector<T>& pixels = image_ops::Pixels<T>(image);
  const ImageRegion& r = erasure.region;
  const int c = image.channels;
  const size_t per_pixel = erasure.values.size() == 1 ? 0 : 1;
  const bool per_value = erasure.values.size() > static_cast<size_t>(c);
  size_t k = 0;
  for (int y = r.top; y < r.top + r.height; ++y) {
    for (int x = r.left; x < r.left + r.width; ++x) {
      T* pixel = &pixels[(static_cast<size_t>(y) * image.width + x) * c];
      for (int ch = 0; ch < c; ++ch) {
        const float v = per_value ? erasure.values[k++] : erasure.values[per_pixel * ch];
        pixel[ch] = static_cast<T>(v);
      }
    }
  }
}

bool IsU8Value(float v) { return v >= 0 && v <= 255 && std::floor(v) == v; }

}  // namespace

std::optional<Erasure> Draw(int height, int width, int channels, const Settings& settings,
                            SampleRandom& random) {
  if (!random.Bernoulli(settings.p)) return std::nullopt;
  const double area = static_cast<double>(height) * width;
  // torchvision draws in float32 (torch.empty(1).uniform_, a float32 log).
  const float log_ratio_min = std::log(static_cast<float>(settings.ratio_min));
  const float log_ratio_max = std::log(static_cast<float>(settings.ratio_max));
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    const double erase_area =
        area * static_cast<float>(random.Uniform(settings.scale_min, settings.scale_max));
    const double aspect_ratio =
        std::exp(static_cast<float>(random.Uniform(log_ratio_min, log_ratio_max)));
    const double h = std::nearbyint(std::sqrt(erase_area * aspect_ratio));
    const double w = std::nearbyint(std::sqrt(erase_area / aspect_ratio));
    if (!(h < height && w < width)) continue;
    Erasure erasure;
    erasure.region.height = static_cast<int>(h);
    erasure.region.width = static_cast<int>(w);
    if (settings.random_value) {
      erasure.values.resize(static_cast<size_t>(erasure.region.height) * erasure.region.width *
                            channels);
      for (float& v : erasure.values) v = Normal(random);
    } else {
      erasure.values = settings.value;
    }
    erasure.region.top =
        static_cast<int>(random.Below(static_cast<uint64_t>(height - erasure.region.height) + 1));
    erasure.region.left =
        static_cast<int>(random.Below(static_cast<uint64_t>(width - erasure.region.width) + 1));
    return erasure;
  }
  return std::nullopt;
}

absl::Status Erase(Image& image, const Erasure& erasure) {
  RETURN_IF_ERROR(image_ops::CheckImage(image, "random_erasing"));
  const ImageRegion& r = erasure.region;
  if (r.top < 0 || r.left < 0 || r.height < 0 || r.width < 0 || r.top + r.height > image.height ||
      r.left + r.width > image.width) {
    return absl::InvalidArgumentError(
        absl::StrCat("random_erasing: the region {top ", r.top, ", left ", r.left, ", ", r.height,
                     "x", r.width, "} is not inside the ", image.ShapeString(), " image"));
  }
  const size_t count = erasure.values.size();
  const size_t c = image.channels;
  if (count != 1 && count != c && count != static_cast<size_t>(r.height) * r.width * c) {
    return absl::InvalidArgumentError(absl::StrCat(
        "random_erasing: ", count, " values do not fit a ", image.ShapeString(), " image"));
  }
  if (!image.is_float()) {
    for (float v : erasure.values) {
      if (!IsU8Value(v)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "random_erasing: value ", v, " is not a uint8 value (an integer in [0, 255]) and the ",
            image.ShapeString(), " image is u8"));
      }
    }
    EraseT<uint8_t>(image, erasure);
  } else {
    EraseT<float>(image, erasure);
  }
  return absl::OkStatus();
}

absl::Status CheckTakes(const Image& image, const Settings& settings) {
  if (!settings.random_value && settings.value.size() != 1 &&
      static_cast<int>(settings.value.size()) != image.channels) {
    return absl::InvalidArgumentError(
        absl::StrCat("random_erasing: value has ", settings.value.size(),
                     " values but the image has ", image.channels, " channels (",
                     image.ShapeString(), "); give 1 value (for every channel) or ",
                     image.channels));
  }
  if (image.is_float()) return absl::OkStatus();
  if (settings.random_value) {
    return absl::InvalidArgumentError(absl::StrCat(
        "random_erasing: random_value (standard normal noise) needs a float image, normalized "
        "as torchvision's RandomErasing expects; the ", image.ShapeString(),
        " image is u8: put random_erasing after to_float and normalize"));
  }
  for (float v : settings.value) {
    if (!IsU8Value(v)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "random_erasing: value ", v, " is not a uint8 value (an integer in [0, 255]) and the ",
          image.ShapeString(), " image is u8; put random_erasing after to_float for fractions"));
    }
  }
  return absl::OkStatus();
}

}  // namespace random_erasing

namespace {

random_erasing::Settings SettingsOf(const RandomErasingOptions& options) {
  random_erasing::Settings settings;
  settings.p = options.p();
  settings.scale_min = options.scale_min();
  settings.scale_max = options.scale_max();
  settings.ratio_min = options.ratio_min();
  settings.ratio_max = options.ratio_max();
  if (!options.value().empty()) {
    settings.value.assign(options.value().begin(), options.value().end());
  }
  settings.random_value = options.random_value();
  return settings;
}

class RandomErasingTransform : public Transform {
 public:
  explicit RandomErasingTransform(const random_erasing::Settings& settings)
      : settings_(settings) {}

  absl::Status Apply(Image& image, SampleRandom& random) const override {
    RETURN_IF_ERROR(image_ops::CheckImage(image, "random_erasing"));
    RETURN_IF_ERROR(random_erasing::CheckTakes(image, settings_));
    const std::optional<random_erasing::Erasure> erasure =
        random_erasing::Draw(image.height, image.width, image.channels, settings_, random);
    if (!erasure) return absl::OkStatus();
    return random_erasing::Erase(image, *erasure);
  }

 private:
  const random_erasing::Settings settings_;
};

absl::Status ValidateRandomErasingOptions(const RandomErasingOptions& options) {
  if (!(options.p() >= 0 && options.p() <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("random_erasing: p must be in [0, 1], got ", options.p()));
  }
  for (auto [field, value] : {std::pair{"scale_min", options.scale_min()},
                              std::pair{"scale_max", options.scale_max()}}) {
    if (!(value > 0 && value <= 1)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "random_erasing: ", field, " must be in (0, 1] (a fraction of the image's area), got ",
          value));
    }
  }
  if (options.scale_min() > options.scale_max()) {
    return absl::InvalidArgumentError(
        absl::StrCat("random_erasing: scale_min (", options.scale_min(),
                     ") must be <= scale_max (", options.scale_max(), ")"));
  }
  for (auto [field, value] : {std::pair{"ratio_min", options.ratio_min()},
                              std::pair{"ratio_max", options.ratio_max()}}) {
    if (!(value > 0 && std::isfinite(value))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "random_erasing: ", field, " must be > 0 (height / width), got ", value));
    }
  }
  if (options.ratio_min() > options.ratio_max()) {
    return absl::InvalidArgumentError(
        absl::StrCat("random_erasing: ratio_min (", options.ratio_min(),
                     ") must be <= ratio_max (", options.ratio_max(), ")"));
  }
  if (options.random_value() && !options.value().empty()) {
    return absl::InvalidArgumentError(
        "random_erasing: set value or random_value, not both");
  }
  for (float v : options.value()) {
    if (!std::isfinite(v)) {
      return absl::InvalidArgumentError(
          absl::StrCat("random_erasing: value must be finite, got ", v));
    }
  }
  return absl::OkStatus();
}

PIPELINE_REGISTER_PLUGIN(Transform, "random_erasing", RandomErasingOptions,
                         "Overwrites a random rectangle with a value or noise, with chance p",
                         [](const RandomErasingOptions& options, const TransformContext&)
                             -> absl::StatusOr<std::unique_ptr<Transform>> {
                           return std::make_unique<RandomErasingTransform>(SettingsOf(options));
                         },
                         ValidateRandomErasingOptions);
// Augmentation: inference (predict) runs the training transforms without it.
PIPELINE_PLUGIN_TRAITS(Transform, "random_erasing", TransformTraits{.training_only = true});

}  // namespace
}  // namespace pipeline
