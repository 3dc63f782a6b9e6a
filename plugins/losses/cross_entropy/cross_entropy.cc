// loss `cross_entropy`: at::cross_entropy_loss, with optional label
// smoothing, against class indices or (mixup, cutmix) class probabilities.
// The default loss.
//
//   loss {
//     name: "cross_entropy"
//     options { [type.googleapis.com/pipeline.CrossEntropyOptions] { label_smoothing: 0.1 } }
//   }

#include <cstdint>
#include <memory>

#include "ATen/ops/cross_entropy_loss.h"
#include "absl/strings/str_cat.h"
#include "pipeline/interfaces/loss.h"
#include "plugins/losses/cross_entropy/cross_entropy.pb.h"

namespace pipeline {
namespace {

// PyTorch's default: targets with this class index add nothing.
constexpr int64_t kIgnoreIndex = -100;

class CrossEntropyLoss : public Loss {
 public:
  explicit CrossEntropyLoss(float label_smoothing) : label_smoothing_(label_smoothing) {}

  // One call for both kinds of target: at::cross_entropy_loss takes float
  // targets as probabilities. For class indices it is bitwise the call the
  // trainer made before this plugin existed, so resumed runs match.
  torch::Tensor Compute(const torch::Tensor& logits, const torch::Tensor& targets,
                        at::Reduction::Reduction reduction) const override {
    return at::cross_entropy_loss(logits, targets, {}, reduction, kIgnoreIndex, label_smoothing_);
  }

 private:
  float label_smoothing_;
};

absl::Status ValidateCrossEntropy(const CrossEntropyOptions& options) {
  // Written so that NaN fails too.
  if (!(options.label_smoothing() >= 0 && options.label_smoothing() < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("label_smoothing: ", options.label_smoothing(), "; must be in [0, 1)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Loss>> CreateCrossEntropy(const CrossEntropyOptions& options,
                                                         const LossContext&) {
  return std::make_unique<CrossEntropyLoss>(options.label_smoothing());
}

PIPELINE_REGISTER_PLUGIN(Loss, "cross_entropy", CrossEntropyOptions,
                         "Softmax cross-entropy with optional label smoothing", CreateCrossEntropy,
                         ValidateCrossEntropy);
PIPELINE_DEFAULT_PLUGIN(Loss, "loss", "cross_entropy");

}  // namespace
}  // namespace pipeline
