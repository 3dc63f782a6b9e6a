// transform `pad`: adds `padding` pixels around the image, filled as
// `padding_mode` says — torchvision's Pad (F.pad on tensors: one fill value
// for every channel). Not random, so it runs at inference too. Works on u8
// and f32 images and keeps the type.
//
//   transforms {
//     name: "pad"
//     options {
//       [type.googleapis.com/pipeline.PadOptions] { padding: [4] padding_mode: REFLECT }
//     }
//   }

#include <cmath>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pipeline/image/image_ops.h"
#include "pipeline/interfaces/transform.h"
#include "pipeline/util/status_macros.h"
#include "plugins/transforms/pad/pad.pb.h"
#include "plugins/transforms/pad/padding.h"

namespace pipeline {
namespace {

padding::PaddingMode ToPaddingMode(PadOptions::PaddingMode mode) {
  switch (mode) {
    case PadOptions::EDGE:
      return padding::PaddingMode::kEdge;
    case PadOptions::REFLECT:
      return padding::PaddingMode::kReflect;
    case PadOptions::SYMMETRIC:
      return padding::PaddingMode::kSymmetric;
    case PadOptions::CONSTANT:
      break;
  }
  return padding::PaddingMode::kConstant;
}

class PadTransform : public Transform {
 public:
  PadTransform(const padding::Padding& sides, const PadOptions& options)
      : padding_(sides), fill_(options.fill()), mode_(ToPaddingMode(options.padding_mode())) {}

  absl::Status Apply(Image& image, SampleRandom& random) const override {
    RETURN_IF_ERROR(image_ops::CheckImage(image, "pad"));
    ASSIGN_OR_RETURN(image, padding::Pad(image, padding_, fill_, mode_, "pad"));
    return absl::OkStatus();
  }

 private:
  const padding::Padding padding_;
  const float fill_;
  const padding::PaddingMode mode_;
};

absl::StatusOr<padding::Padding> PaddingOf(const PadOptions& options) {
  if (options.padding().empty()) {
    return absl::InvalidArgumentError("pad: set padding (pixels: 1, 2 or 4 values)");
  }
  return padding::PaddingFromValues(
      std::vector<int>(options.padding().begin(), options.padding().end()), "pad");
}

absl::Status ValidatePadOptions(const PadOptions& options) {
  RETURN_IF_ERROR(PaddingOf(options).status());
  if (!std::isfinite(options.fill())) {
    return absl::InvalidArgumentError(absl::StrCat("pad: fill must be a finite number, got ",
                                                   options.fill()));
  }
  return absl::OkStatus();
}

PIPELINE_REGISTER_PLUGIN(Transform, "pad", PadOptions,
                         "Adds pixels around the image (constant, edge, reflect or symmetric)",
                         [](const PadOptions& options, const TransformContext&)
                             -> absl::StatusOr<std::unique_ptr<Transform>> {
                           ASSIGN_OR_RETURN(const padding::Padding sides, PaddingOf(options));
                           return std::make_unique<PadTransform>(sides, options);
                         },
                         ValidatePadOptions);
// Not an augmentation: inference pads the same way.
PIPELINE_PLUGIN_TRAITS(Transform, "pad", TransformTraits{.training_only = false});

}  // namespace
}  // namespace pipeline
