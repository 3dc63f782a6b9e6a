#ifndef PIPELINE_INTERFACES_LOSS_H_
#define PIPELINE_INTERFACES_LOSS_H_

#include <cstdint>

#include "ATen/core/Reduction.h"
#include "pipeline/registry/registry.h"
#include "torch/types.h"

namespace pipeline {

// The training objective. The trainer calls it inside the strategy's
// forward pass (so on the model's device, under autocast where that is on)
// and again on the CPU for the figures it reports.
class Loss {
 public:
  virtual ~Loss() = default;

  // The loss of a batch. `logits` is N x classes. `targets` is either N
  // class indices (int64) or N x classes class probabilities (float, rows
  // summing to 1: soft targets from mixup or cutmix). `reduction` is
  // at::Reduction::Mean for training and Sum for reported figures.
  virtual torch::Tensor Compute(const torch::Tensor& logits, const torch::Tensor& targets,
                                at::Reduction::Reduction reduction) const = 0;
};

struct LossContext {
  // Classes in the training data (the logits' width).
  int64_t num_classes = 0;
};

template <>
struct PluginKind<Loss> {
  static constexpr const char* kName = "loss";
  using Context = LossContext;
};

}  // namespace pipeline

#endif  // PIPELINE_INTERFACES_LOSS_H_
