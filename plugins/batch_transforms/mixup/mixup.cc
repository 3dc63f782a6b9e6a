// batch_transform `mixup`: timm's Mixup on whole training batches.
//
//   train_data {
//     batch_transforms {
//       name: "mixup"
//       options { [type.googleapis.com/pipeline.MixupOptions] { alpha: 0.8 cutmix_alpha: 1.0 } }
//     }
//   }

#include <memory>

#include "pipeline/interfaces/batch_transform.h"
#include "plugins/batch_transforms/mixup/mix.h"
#include "plugins/batch_transforms/mixup/mixup.pb.h"

namespace pipeline {
namespace {

MixSettings SettingsOf(const MixupOptions& options) {
  MixSettings settings;
  settings.mixup_alpha = options.alpha();
  settings.cutmix_alpha = options.cutmix_alpha();
  settings.prob = options.prob();
  settings.switch_prob = options.switch_prob();
  settings.label_smoothing = options.label_smoothing();
  settings.correct_lam = options.correct_lam();
  return settings;
}

PIPELINE_REGISTER_PLUGIN(
    BatchTransform, "mixup", MixupOptions,
    "timm's Mixup: batches mixed with their mirror, soft targets (optionally cutmix too)",
    [](const MixupOptions& options, const BatchTransformContext& context)
        -> absl::StatusOr<std::unique_ptr<BatchTransform>> {
      const MixSettings settings = SettingsOf(options);
      if (absl::Status valid = ValidateMixSettings(settings, context.num_classes, "alpha");
          !valid.ok()) {
        return valid;
      }
      return std::make_unique<MixBatchTransform>(settings, context.num_classes);
    },
    [](const MixupOptions& options) {
      return ValidateMixSettings(SettingsOf(options), /*classes=*/2, "alpha");
    });

}  // namespace
}  // namespace pipeline
