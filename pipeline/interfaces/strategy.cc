#include "pipeline/interfaces/strategy.h"

#include "pipeline/util/torch_status.h"

namespace pipeline {

torch::Tensor TrainingLoss(const Model& model, const torch::Tensor& logits,
                           const torch::Tensor& labels, const LossFunction& loss) {
  torch::Tensor total = loss(logits, labels);
  for (const AuxiliaryLogits& auxiliary : model.auxiliary_logits()) {
    total = total + auxiliary.loss_weight * loss(auxiliary.logits, labels);
  }
  return total;
}

absl::Status Strategy::Step(Optimizer& optimizer) {
  return CallTorch("optimizer step", [&] { optimizer.step(); });
}

}  // namespace pipeline
