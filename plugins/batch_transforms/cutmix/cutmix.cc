// batch_transform `cutmix`: timm's Mixup with cutmix only.
//
//   train_data {
//     batch_transforms {
//       name: "cutmix"
//       options { [type.googleapis.com/pipeline.CutmixOptions] { alpha: 1.0 } }
//     }
//   }

#include <memory>

#include "absl/strings/str_cat.h"

#include "pipeline/interfaces/batch_transform.h"
#include "plugins/batch_transforms/cutmix/cutmix.pb.h"
#include "plugins/batch_transforms/mixup/mix.h"

namespace pipeline {
namespace {

MixSettings SettingsOf(const CutmixOptions& options) {
  MixSettings settings;
  settings.cutmix_alpha = options.alpha();
  settings.prob = options.prob();
  settings.label_smoothing = options.label_smoothing();
  settings.correct_lam = options.correct_lam();
  return settings;
}

absl::Status Validate(const CutmixOptions& options, int64_t classes) {
  if (options.alpha() <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "alpha: ", options.alpha(), "; must be > 0 (timm's cutmix default is 1.0)"));
  }
  return ValidateMixSettings(SettingsOf(options), classes, "alpha");
}

PIPELINE_REGISTER_PLUGIN(
    BatchTransform, "cutmix", CutmixOptions,
    "timm's CutMix: a box of the batch's mirror pasted into each image, soft targets",
    [](const CutmixOptions& options, const BatchTransformContext& context)
        -> absl::StatusOr<std::unique_ptr<BatchTransform>> {
      if (absl::Status valid = Validate(options, context.num_classes); !valid.ok()) return valid;
      return std::make_unique<MixBatchTransform>(SettingsOf(options), context.num_classes);
    },
    [](const CutmixOptions& options) { return Validate(options, /*classes=*/2); });

}  // namespace
}  // namespace pipeline
