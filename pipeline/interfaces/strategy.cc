#include "pipeline/interfaces/strategy.h"

#include "pipeline/util/autocast_compat.h"
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

void Backward(const torch::Tensor& loss) {
  // Restores the caller's settings however backward ends.
  class AutocastOff {
   public:
    AutocastOff() {
      for (at::DeviceType device : {at::kCPU, at::kCUDA}) SetAutocastEnabled(device, false);
    }
    ~AutocastOff() {
      SetAutocastEnabled(at::kCPU, cpu_);
      SetAutocastEnabled(at::kCUDA, cuda_);
    }

   private:
    const bool cpu_ = AutocastEnabled(at::kCPU);
    const bool cuda_ = AutocastEnabled(at::kCUDA);
  };
  AutocastOff off;
  loss.backward();
}

absl::Status Strategy::Step(Optimizer& optimizer) {
  return CallTorch("optimizer step", [&] { optimizer.step(); });
}

}  // namespace pipeline
