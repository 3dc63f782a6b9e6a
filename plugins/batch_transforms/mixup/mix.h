#ifndef PLUGINS_BATCH_TRANSFORMS_MIXUP_MIX_H_
#define PLUGINS_BATCH_TRANSFORMS_MIXUP_MIX_H_

// timm's Mixup in its 'batch' mode (timm/data/mixup.py), shared by the
// `mixup` and `cutmix` batch transforms: one mixing coefficient per batch,
// each image mixed with the batch's mirror image (x.flip(0)), the targets
// mixed the same way with label smoothing folded in.

#include <cstdint>

#include "absl/status/status.h"
#include "pipeline/interfaces/batch_transform.h"
#include "pipeline/interfaces/random.h"
#include "torch/types.h"

namespace pipeline {

struct MixSettings {
  double mixup_alpha = 0;  // > 0: mixup with lam ~ Beta(alpha, alpha)
  double cutmix_alpha = 0;  // > 0: cutmix with lam ~ Beta(alpha, alpha)
  double prob = 1;          // probability that a batch is mixed at all
  double switch_prob = 0.5;  // with both: probability of cutmix
  double label_smoothing = 0.1;
  bool correct_lam = true;  // cutmix: lam from the box's clipped area
};

// A Beta(alpha, alpha) variate (two Gamma variates, Marsaglia and Tsang),
// written out so every standard library gives the same numbers.
double SampleBeta(double alpha, SampleRandom& random);

// timm's mixup_target: one-hot rows of `targets` (or its rows, if already
// probabilities) with smoothing, mixed with the flipped batch's by lam.
torch::Tensor MixTargets(const torch::Tensor& targets, int64_t classes, double lam,
                         double label_smoothing);

// x = lam * x + (1 - lam) * x.flip(0), in place.
void MixupImages(torch::Tensor& images, double lam);

// timm's rand_bbox: a box of sqrt(1 - lam) of each side, centred at a
// uniform pixel, clipped to the image.
struct Box {
  int64_t y0 = 0, y1 = 0, x0 = 0, x1 = 0;
};
Box CutmixBox(int64_t height, int64_t width, double lam, SampleRandom& random);

// Pastes the flipped batch's box into each image, in place.
void CutmixImages(torch::Tensor& images, const Box& box);

// The whole transform: timm's _params_per_batch, _mix_batch and
// mixup_target on one batch.
absl::Status ApplyMix(const MixSettings& settings, int64_t classes, torch::Tensor& images,
                      torch::Tensor& targets, SampleRandom& random);

// The batch transform of `mixup` and `cutmix`: ApplyMix with fixed settings.
class MixBatchTransform : public BatchTransform {
 public:
  MixBatchTransform(const MixSettings& settings, int64_t classes)
      : settings_(settings), classes_(classes) {}
  absl::Status Apply(torch::Tensor& images, torch::Tensor& targets,
                     SampleRandom& random) const override {
    return ApplyMix(settings_, classes_, images, targets, random);
  }

 private:
  const MixSettings settings_;
  const int64_t classes_;
};

// The settings' ranges, as config errors naming the field.
absl::Status ValidateMixSettings(const MixSettings& settings, int64_t classes,
                                 const char* alpha_field);

}  // namespace pipeline

#endif  // PLUGINS_BATCH_TRANSFORMS_MIXUP_MIX_H_
