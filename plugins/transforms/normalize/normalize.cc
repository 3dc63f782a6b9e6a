// transform `normalize`: (value - mean[c]) / std[c] for each channel c, as
// torchvision's Normalize, on a float image (put a to_float before it). A
// single mean or std value applies to every channel. There is no default:
// the right values depend on the dataset and the model's pretraining.
//
//   transforms {
//     name: "normalize"
//     options {
//       [type.googleapis.com/pipeline.NormalizeOptions] {
//         mean: [0.485, 0.456, 0.406]
//         std: [0.229, 0.224, 0.225]
//       }
//     }
//   }

#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pipeline/image/image_ops.h"
#include "pipeline/interfaces/transform.h"
#include "pipeline/util/status_macros.h"
#include "plugins/transforms/normalize/normalize.pb.h"

namespace pipeline {
namespace {

class NormalizeTransform : public Transform {
 public:
  explicit NormalizeTransform(const NormalizeOptions& options)
      : mean_(options.mean().begin(), options.mean().end()),
        std_(options.std().begin(), options.std().end()) {}

  absl::Status Apply(Image& image, SampleRandom& random) const override {
    RETURN_IF_ERROR(image_ops::CheckImage(image, "normalize"));
    if (!image.is_float()) {
      return absl::InvalidArgumentError(
          "normalize needs a float image: put a to_float transform before it");
    }
    const int channels = image.channels;
    for (auto [field, values] : {std::pair{"mean", &mean_}, std::pair{"std", &std_}}) {
      if (values->size() != 1 && static_cast<int>(values->size()) != channels) {
        return absl::InvalidArgumentError(absl::StrCat(
            "normalize: ", field, " has ", values->size(), " values but the image has ", channels,
            channels == 1 ? " channel (" : " channels (", image.ShapeString(),
            "); give 1 value (for every channel) or ", channels));
      }
    }
    // mean and std laid out along one row (width x channels), so the loop
    // runs over contiguous values with no per-channel branching.
    const size_t row_len = static_cast<size_t>(image.width) * channels;
    std::vector<float> row_mean(row_len), row_std(row_len);
    for (size_t k = 0; k < row_len; ++k) {
      row_mean[k] = mean_.size() == 1 ? mean_[0] : mean_[k % channels];
      row_std[k] = std_.size() == 1 ? std_[0] : std_[k % channels];
    }
    float* data = image.f32.data();
    for (int y = 0; y < image.height; ++y) {
      float* row = data + y * row_len;
      // Division, not multiplication by 1/std, to match torchvision's div_.
      for (size_t k = 0; k < row_len; ++k) row[k] = (row[k] - row_mean[k]) / row_std[k];
    }
    return absl::OkStatus();
  }

  std::optional<ChannelMap> AsChannelMap() const override {
    ChannelMap map;
    map.subtract = mean_;
    map.divide = std_;
    return map;
  }

 private:
  const std::vector<float> mean_;
  const std::vector<float> std_;
};

absl::Status ValidateNormalizeOptions(const NormalizeOptions& options) {
  if (options.mean().empty() && options.std().empty()) {
    return absl::InvalidArgumentError(
        "normalize: set mean and std, e.g. mean: [0.485, 0.456, 0.406] std: [0.229, 0.224, "
        "0.225]");
  }
  if (options.mean().empty() || options.std().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "normalize: set both mean and std (mean has ", options.mean_size(), " values, std ",
        options.std_size(), ")"));
  }
  if (options.mean_size() != 1 && options.std_size() != 1 &&
      options.mean_size() != options.std_size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "normalize: mean has ", options.mean_size(), " values and std ", options.std_size(),
        "; give each 1 value (for every channel) or one per channel"));
  }
  for (int i = 0; i < options.std_size(); ++i) {
    if (!(options.std(i) > 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("normalize: std[", i, "] must be > 0, got ", options.std(i)));
    }
  }
  return absl::OkStatus();
}

PIPELINE_REGISTER_PLUGIN(Transform, "normalize", NormalizeOptions,
                         "(value - mean) / std per channel, on float images",
                         [](const NormalizeOptions& options, const TransformContext&)
                             -> absl::StatusOr<std::unique_ptr<Transform>> {
                           return std::make_unique<NormalizeTransform>(options);
                         },
                         ValidateNormalizeOptions);

}  // namespace
}  // namespace pipeline
