// transform `rand_augment`: torchvision's RandAugment — per sample num_ops
// ops and their signs drawn from the sample's SampleRandom, each at the
// fixed magnitude bin, applied in turn as torchvision's _apply_op
// (augment_ops). u8 images of 1 or 3 channels.
//
//   transforms {
//     name: "rand_augment"
//     options {
//       [type.googleapis.com/pipeline.RandAugmentOptions] { num_ops: 2 magnitude: 9 }
//     }
//   }

#include "plugins/transforms/rand_augment/rand_augment.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "pipeline/interfaces/transform.h"
#include "pipeline/util/status_macros.h"
#include "plugins/transforms/rand_augment/rand_augment.pb.h"

namespace pipeline {
namespace rand_augment {

std::vector<Draws> Draw(const std::vector<augment_ops::OpRange>& space, int num_ops,
                        SampleRandom& random) {
  std::vector<Draws> draws(num_ops);
  for (Draws& d : draws) {
    d.op_index = static_cast<int>(random.Below(space.size()));
    if (space[d.op_index].is_signed) d.negate = random.Below(2) == 1;
  }
  return draws;
}

std::vector<augment_ops::OpCall> CallsFor(const std::vector<augment_ops::OpRange>& space,
                                          int magnitude, const std::vector<Draws>& draws) {
  std::vector<augment_ops::OpCall> calls;
  for (const Draws& d : draws) {
    calls.push_back(augment_ops::ChooseOp(space[d.op_index], magnitude, d.negate));
  }
  return calls;
}

}  // namespace rand_augment

namespace {

constexpr char kName[] = "rand_augment";

absl::Status ValidateRandAugmentOptions(const RandAugmentOptions& options) {
  if (options.num_ops() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(kName, ": num_ops must be >= 0, got ", options.num_ops()));
  }
  const int bins = options.num_magnitude_bins();
  if (bins < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        kName, ": num_magnitude_bins must be >= 2 (each range's ends), got ", bins));
  }
  if (options.magnitude() < 0 || options.magnitude() >= bins) {
    return absl::InvalidArgumentError(
        absl::StrCat(kName, ": magnitude must be in [0, num_magnitude_bins - 1] = [0, ",
                     bins - 1, "], got ", options.magnitude()));
  }
  return augment_ops::ValidateU8Fill({options.fill().begin(), options.fill().end()}, kName);
}

class RandAugmentTransform : public Transform {
 public:
  explicit RandAugmentTransform(const RandAugmentOptions& options)
      : num_ops_(options.num_ops()),
        magnitude_(options.magnitude()),
        num_bins_(options.num_magnitude_bins()),
        warp_(augment_ops::WarpOf(options)) {}

  absl::Status Apply(Image& image, SampleRandom& random) const override {
    RETURN_IF_ERROR(augment_ops::CheckTakes(image, kName));
    RETURN_IF_ERROR(augment_ops::CheckFill(image, warp_, kName));
    // The translation ranges are fractions of the image's own size.
    const std::vector<augment_ops::OpRange> space =
        augment_ops::RandAugmentSpace(num_bins_, image.height, image.width);
    const std::vector<rand_augment::Draws> draws = rand_augment::Draw(space, num_ops_, random);
    for (const augment_ops::OpCall& call : rand_augment::CallsFor(space, magnitude_, draws)) {
      RETURN_IF_ERROR(augment_ops::ApplyOp(image, call, warp_));
    }
    return absl::OkStatus();
  }

 private:
  const int num_ops_;
  const int magnitude_;
  const int num_bins_;
  const augment_ops::Warp warp_;
};

// The registry runs the validator before the factory.
PIPELINE_REGISTER_PLUGIN(Transform, "rand_augment", RandAugmentOptions,
                         "num_ops random ops at a fixed magnitude (RandAugment)",
                         [](const RandAugmentOptions& options, const TransformContext&)
                             -> absl::StatusOr<std::unique_ptr<Transform>> {
                           return std::make_unique<RandAugmentTransform>(options);
                         },
                         ValidateRandAugmentOptions);
// Augmentation: inference (predict) runs the training transforms without it.
PIPELINE_PLUGIN_TRAITS(Transform, "rand_augment", TransformTraits{.training_only = true});

}  // namespace
}  // namespace pipeline
