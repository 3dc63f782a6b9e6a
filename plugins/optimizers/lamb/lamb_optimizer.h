#ifndef PLUGINS_OPTIMIZERS_LAMB_LAMB_OPTIMIZER_H_
#define PLUGINS_OPTIMIZERS_LAMB_LAMB_OPTIMIZER_H_

// LAMB (You et al., "Large Batch Optimization for Deep Learning"), as timm's
// timm/optim/lamb.py computes it: Adam's moments with bias correction, the
// weight decay added to the update, and the update scaled by the layer's
// trust ratio ||w|| / ||update|| (1 where either norm is 0), after every
// gradient is divided by max(global gradient norm / max_grad_norm, 1).

#include <vector>

#include "torch/arg.h"
#include "torch/optim/optimizer.h"
#include "torch/optim/serialize.h"
#include "torch/serialize/archive.h"

namespace pipeline {

struct LambParamGroupOptions
    : public torch::optim::OptimizerCloneableOptions<LambParamGroupOptions> {
  explicit LambParamGroupOptions(double lr = 1e-3) : lr_(lr) {}
  TORCH_ARG(double, lr) = 1e-3;
  TORCH_ARG(double, beta1) = 0.9;
  TORCH_ARG(double, beta2) = 0.999;
  TORCH_ARG(double, eps) = 1e-6;
  TORCH_ARG(double, weight_decay) = 0.01;
  TORCH_ARG(bool, bias_correction) = true;
  // m = beta1 * m + (1 - beta1) * g; false: m = beta1 * m + g.
  TORCH_ARG(bool, grad_averaging) = true;
  // Caps the trust ratio at 1 (LAMBC).
  TORCH_ARG(bool, trust_clip) = false;
  // Adapts by the trust ratio even where the weight decay is 0.
  TORCH_ARG(bool, always_adapt) = false;
  // Parameters of one dimension or none get weight decay 0 (so no trust
  // ratio either unless always_adapt), as timm's param group for them.
  TORCH_ARG(bool, exclude_1d) = true;

 public:
  void serialize(torch::serialize::InputArchive& archive) override;
  void serialize(torch::serialize::OutputArchive& archive) const override;
  double get_lr() const override { return lr(); }
  void set_lr(const double lr) override { this->lr(lr); }
};

struct LambParamState : public torch::optim::OptimizerCloneableParamState<LambParamState> {
  TORCH_ARG(int64_t, step) = 0;
  TORCH_ARG(torch::Tensor, exp_avg);
  TORCH_ARG(torch::Tensor, exp_avg_sq);

 public:
  void serialize(torch::serialize::InputArchive& archive) override;
  void serialize(torch::serialize::OutputArchive& archive) const override;
};

class Lamb : public torch::optim::Optimizer {
 public:
  // `max_grad_norm`: the global gradient norm above which every gradient
  // is scaled down to it; 0 = none (timm's None).
  Lamb(std::vector<torch::optim::OptimizerParamGroup> param_groups,
       const LambParamGroupOptions& defaults, double max_grad_norm)
      : Optimizer(std::move(param_groups), std::make_unique<LambParamGroupOptions>(defaults)),
        max_grad_norm_(max_grad_norm) {}

  torch::Tensor step(LossClosure closure = nullptr) override;
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;

 private:
  // What every gradient is divided by this step (a 0-d tensor), or
  // undefined for nothing.
  torch::Tensor GradientDivisor() const;

  double max_grad_norm_;
};

}  // namespace pipeline

#endif  // PLUGINS_OPTIMIZERS_LAMB_LAMB_OPTIMIZER_H_
