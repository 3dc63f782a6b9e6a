#ifndef PLUGINS_OPTIMIZERS_LARS_LARS_OPTIMIZER_H_
#define PLUGINS_OPTIMIZERS_LARS_LARS_OPTIMIZER_H_

// LARS (You et al., "Large Batch Training of Convolutional Networks"), as
// timm's timm/optim/lars.py computes it: each parameter tensor's gradient
// plus weight decay is scaled by the trust ratio
//   trust_coeff * ||w|| / (||g|| + weight_decay * ||w|| + eps)
// (1 where either norm is 0; LARC's clipping with trust_clip), then SGD
// with momentum (torch.optim.SGD's) steps with it.

#include <vector>

#include "torch/arg.h"
#include "torch/optim/optimizer.h"
#include "torch/optim/serialize.h"
#include "torch/serialize/archive.h"

namespace pipeline {

struct LarsParamGroupOptions
    : public torch::optim::OptimizerCloneableOptions<LarsParamGroupOptions> {
  explicit LarsParamGroupOptions(double lr = 1.0) : lr_(lr) {}
  TORCH_ARG(double, lr) = 1.0;
  TORCH_ARG(double, momentum) = 0;
  TORCH_ARG(double, dampening) = 0;
  TORCH_ARG(double, weight_decay) = 0;
  TORCH_ARG(bool, nesterov) = false;
  TORCH_ARG(double, trust_coeff) = 0.001;
  TORCH_ARG(double, eps) = 1e-8;
  // LARC: the trust ratio divided by lr, capped at 1.
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

struct LarsParamState : public torch::optim::OptimizerCloneableParamState<LarsParamState> {
  TORCH_ARG(torch::Tensor, momentum_buffer);

 public:
  void serialize(torch::serialize::InputArchive& archive) override;
  void serialize(torch::serialize::OutputArchive& archive) const override;
};

class Lars : public torch::optim::Optimizer {
 public:
  Lars(std::vector<torch::optim::OptimizerParamGroup> param_groups,
       const LarsParamGroupOptions& defaults)
      : Optimizer(std::move(param_groups), std::make_unique<LarsParamGroupOptions>(defaults)) {}

  torch::Tensor step(LossClosure closure = nullptr) override;
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;
};

}  // namespace pipeline

#endif  // PLUGINS_OPTIMIZERS_LARS_LARS_OPTIMIZER_H_
