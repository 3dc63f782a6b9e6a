// loss `soft_target_cross_entropy`: timm's SoftTargetCrossEntropy, the loss
// timm trains mixup and cutmix with: per sample
// sum(-target * log_softmax(logits)), then the batch's mean or sum. Class
// indices count as one-hot targets, so batches without mixup work too.
// Targets of another shape are refused, as torch.nn.functional.cross_entropy
// refuses them, where timm's would broadcast them into some other loss.
//
//   loss { name: "soft_target_cross_entropy" }

#include <memory>

#include "pipeline/interfaces/loss.h"
#include "plugins/losses/soft_target_cross_entropy/soft_target_cross_entropy.pb.h"
#include "torch/types.h"

namespace pipeline {
namespace {

class SoftTargetCrossEntropyLoss : public Loss {
 public:
  torch::Tensor Compute(const torch::Tensor& logits, const torch::Tensor& targets,
                        at::Reduction::Reduction reduction) const override {
    TORCH_CHECK(targets.is_floating_point()
                    ? targets.sizes() == logits.sizes()
                    : targets.dim() == 1 && logits.dim() >= 1 && targets.size(0) == logits.size(0),
                "soft_target_cross_entropy: targets of shape ", targets.sizes(),
                " for logits of shape ", logits.sizes(),
                "; class probabilities have the logits' shape, class indices one per row");
    const torch::Tensor log_probabilities = at::log_softmax(logits, -1);
    const torch::Tensor probabilities =
        targets.is_floating_point()
            ? targets
            : at::one_hot(targets, logits.size(-1)).to(log_probabilities.scalar_type());
    const torch::Tensor per_sample = (-probabilities * log_probabilities).sum(-1);
    if (reduction == at::Reduction::Mean) return per_sample.mean();
    if (reduction == at::Reduction::Sum) return per_sample.sum();
    return per_sample;
  }
};

absl::StatusOr<std::unique_ptr<Loss>> CreateSoftTargetCrossEntropy(
    const SoftTargetCrossEntropyOptions&, const LossContext&) {
  return std::make_unique<SoftTargetCrossEntropyLoss>();
}

PIPELINE_REGISTER_PLUGIN(Loss, "soft_target_cross_entropy", SoftTargetCrossEntropyOptions,
                         "Cross-entropy against class probabilities, as timm's",
                         CreateSoftTargetCrossEntropy);

}  // namespace
}  // namespace pipeline
