// Losses that each break one rule of the loss conformance suite,
// instantiated with it; conformance_self_test checks that exactly the broken
// rules' tests fail. Each is softmax cross-entropy with one thing done wrong.

#include <memory>

#include "ATen/ops/cross_entropy_loss.h"
#include "google/protobuf/empty.pb.h"
#include "pipeline/interfaces/loss.h"
#include "pipeline/testing/loss_conformance.h"
#include "torch/types.h"

namespace pipeline {
namespace testing {
namespace {

using google::protobuf::Empty;
using Reduction = at::Reduction::Reduction;

torch::Tensor CrossEntropy(const torch::Tensor& logits, const torch::Tensor& targets,
                           Reduction reduction, double label_smoothing = 0) {
  return at::cross_entropy_loss(logits, targets, {}, reduction, -100, label_smoothing);
}

// Takes the softmax as exp(x) / sum(exp(x)), without subtracting the row's
// maximum first: large logits overflow.
class NaiveSoftmax : public Loss {
 public:
  torch::Tensor Compute(const torch::Tensor& logits, const torch::Tensor& targets,
                        Reduction reduction) const override {
    const torch::Tensor exp = logits.exp();
    return CrossEntropy((exp / exp.sum(1, true)).log(), targets, reduction);
  }
};

// Mean is the batch's sum.
class SumsForMean : public Loss {
 public:
  torch::Tensor Compute(const torch::Tensor& logits, const torch::Tensor& targets,
                        Reduction reduction) const override {
    return CrossEntropy(logits, targets,
                        reduction == at::Reduction::Mean ? at::Reduction::Sum : reduction);
  }
};

// Smooths class indices but not class probabilities.
class SmoothsIndicesOnly : public Loss {
 public:
  torch::Tensor Compute(const torch::Tensor& logits, const torch::Tensor& targets,
                        Reduction reduction) const override {
    return CrossEntropy(logits, targets, reduction, targets.is_floating_point() ? 0.0 : 0.1);
  }
};

// Computed on detached logits: no gradient reaches the model.
class Detached : public Loss {
 public:
  torch::Tensor Compute(const torch::Tensor& logits, const torch::Tensor& targets,
                        Reduction reduction) const override {
    return CrossEntropy(logits.detach(), targets, reduction);
  }
};

// The right value with half the gradient.
class HalfGradient : public Loss {
 public:
  torch::Tensor Compute(const torch::Tensor& logits, const torch::Tensor& targets,
                        Reduction reduction) const override {
    const torch::Tensor loss = CrossEntropy(logits, targets, reduction);
    return loss.detach() + 0.5 * (loss - loss.detach());
  }
};

// Adds a penalty on the logits' size but leaves shift_invariant declared.
class LogitPenalty : public Loss {
 public:
  torch::Tensor Compute(const torch::Tensor& logits, const torch::Tensor& targets,
                        Reduction reduction) const override {
    const torch::Tensor per_sample =
        CrossEntropy(logits, targets, at::Reduction::None) + 0.01 * logits.pow(2).mean(1);
    return reduction == at::Reduction::Mean ? per_sample.mean() : per_sample.sum();
  }
};

// sum(-targets * log_softmax(logits)) with nothing checked: wrong shapes
// broadcast into some loss.
class BroadcastsTargets : public Loss {
 public:
  torch::Tensor Compute(const torch::Tensor& logits, const torch::Tensor& targets,
                        Reduction reduction) const override {
    const torch::Tensor log_probabilities = logits.log_softmax(-1);
    const torch::Tensor probabilities =
        targets.is_floating_point()
            ? targets
            : torch::one_hot(targets, logits.size(-1)).to(logits.scalar_type());
    const torch::Tensor per_sample = (-probabilities * log_probabilities).sum(-1);
    return reduction == at::Reduction::Mean ? per_sample.mean() : per_sample.sum();
  }
};

template <typename T>
void RegisterLoss(const char* name) {
  static const PluginRegistration<Loss, Empty> registration(
      name, "broken on purpose",
      [](const Empty&, const LossContext&) -> absl::StatusOr<std::unique_ptr<Loss>> {
        return std::make_unique<T>();
      });
}

const bool kRegistered = [] {
  RegisterLoss<NaiveSoftmax>("broken_loss_naive_softmax");
  RegisterLoss<SumsForMean>("broken_loss_sums_for_mean");
  RegisterLoss<SmoothsIndicesOnly>("broken_loss_smooths_indices_only");
  RegisterLoss<Detached>("broken_loss_detached");
  RegisterLoss<HalfGradient>("broken_loss_half_gradient");
  RegisterLoss<LogitPenalty>("broken_loss_logit_penalty");
  RegisterLoss<BroadcastsTargets>("broken_loss_broadcasts_targets");
  return true;
}();

#define BROKEN_LOSS(name)                                                       \
  INSTANTIATE_TEST_SUITE_P(name, LossConformanceTest,                           \
                           ::testing::Values(LossConformanceParams{#name, ""}), \
                           LossConformanceTestName)

BROKEN_LOSS(broken_loss_naive_softmax);
BROKEN_LOSS(broken_loss_sums_for_mean);
BROKEN_LOSS(broken_loss_smooths_indices_only);
BROKEN_LOSS(broken_loss_detached);
BROKEN_LOSS(broken_loss_half_gradient);
BROKEN_LOSS(broken_loss_logit_penalty);
BROKEN_LOSS(broken_loss_broadcasts_targets);

}  // namespace
}  // namespace testing
}  // namespace pipeline
