// transform `trivial_augment_wide`: torchvision's TrivialAugmentWide — per
// sample one op of 14, a magnitude bin and a sign, all drawn from the
// sample's SampleRandom, applied as torchvision's _apply_op (augment_ops).
// u8 images of 1 or 3 channels.
//
//   transforms {
//     name: "trivial_augment_wide"
//     options {
//       [type.googleapis.com/pipeline.TrivialAugmentWideOptions] {
//         interpolation: BILINEAR
//       }
//     }
//   }

#include "plugins/transforms/trivial_augment_wide/trivial_augment_wide.h"

#include <cmath>
#include <memory>

#include "absl/strings/str_cat.h"
#include "pipeline/interfaces/transform.h"
#include "pipeline/util/status_macros.h"
#include "plugins/transforms/trivial_augment_wide/trivial_augment_wide.pb.h"

namespace pipeline {
namespace trivial_augment_wide {

Draws Draw(const std::vector<augment_ops::OpRange>& space, SampleRandom& random) {
  Draws draws;
  draws.op_index = static_cast<int>(random.Below(space.size()));
  const augment_ops::OpRange& range = space[draws.op_index];
  if (range.num_bins > 0) draws.bin = static_cast<int>(random.Below(range.num_bins));
  if (range.is_signed) draws.negate = random.Below(2) == 1;
  return draws;
}

augment_ops::OpCall CallFor(const std::vector<augment_ops::OpRange>& space, const Draws& draws) {
  return augment_ops::ChooseOp(space[draws.op_index], draws.bin, draws.negate);
}

}  // namespace trivial_augment_wide

namespace {

constexpr char kName[] = "trivial_augment_wide";

absl::Status ValidateTrivialAugmentWideOptions(const TrivialAugmentWideOptions& options) {
  if (options.num_magnitude_bins() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(kName, ": num_magnitude_bins must be >= 2 (each range's ends), got ",
                     options.num_magnitude_bins()));
  }
  return augment_ops::ValidateU8Fill({options.fill().begin(), options.fill().end()}, kName);
}

class TrivialAugmentWideTransform : public Transform {
 public:
  explicit TrivialAugmentWideTransform(const TrivialAugmentWideOptions& options)
      : space_(augment_ops::TrivialAugmentWideSpace(options.num_magnitude_bins())),
        warp_(augment_ops::WarpOf(options)) {}

  absl::Status Apply(Image& image, SampleRandom& random) const override {
    RETURN_IF_ERROR(augment_ops::CheckTakes(image, kName));
    RETURN_IF_ERROR(augment_ops::CheckFill(image, warp_, kName));
    const trivial_augment_wide::Draws draws = trivial_augment_wide::Draw(space_, random);
    return augment_ops::ApplyOp(image, trivial_augment_wide::CallFor(space_, draws), warp_);
  }

 private:
  const std::vector<augment_ops::OpRange> space_;
  const augment_ops::Warp warp_;
};

// The registry runs the validator before the factory.
PIPELINE_REGISTER_PLUGIN(Transform, "trivial_augment_wide", TrivialAugmentWideOptions,
                         "One random op (of 14) at a random magnitude (TrivialAugmentWide)",
                         [](const TrivialAugmentWideOptions& options, const TransformContext&)
                             -> absl::StatusOr<std::unique_ptr<Transform>> {
                           return std::make_unique<TrivialAugmentWideTransform>(options);
                         },
                         ValidateTrivialAugmentWideOptions);
// Augmentation: inference (predict) runs the training transforms without it.
PIPELINE_PLUGIN_TRAITS(Transform, "trivial_augment_wide",
                       TransformTraits{.training_only = true});

}  // namespace
}  // namespace pipeline
