#include "plugins/optimizers/common/multi_tensor_adam.h"

#include <cmath>
#include <memory>
#include <type_traits>
#include <utility>

#include "ATen/ops/_foreach_add.h"
#include "ATen/ops/_foreach_addcdiv.h"
#include "ATen/ops/_foreach_addcmul.h"
#include "ATen/ops/_foreach_div.h"
#include "ATen/ops/_foreach_mul.h"
#include "ATen/ops/_foreach_sqrt.h"
#include "pipeline/util/torch_version.h"
#include "plugins/optimizers/common/multi_tensor_step.h"
#if PIPELINE_TORCH_AT_LEAST(2, 4)
#include "ATen/ops/_fused_adam.h"
#include "ATen/ops/_fused_adamw.h"
#endif

namespace pipeline {

bool HasFusedAdam() { return PIPELINE_TORCH_AT_LEAST(2, 4); }

namespace {

// AdamW decays the weights themselves (decoupled); Adam adds the decay to
// the gradient (L2).
template <typename Base>
constexpr bool kDecoupledDecay = std::is_same_v<Base, torch::optim::AdamW>;

}  // namespace

template <typename Base, typename Options, typename ParamState>
torch::Tensor MultiTensorAdamFamily<Base, Options, ParamState>::step(
    torch::optim::Optimizer::LossClosure closure) {
  if (RunsForLoop(implementation_, this->param_groups())) return Base::step(closure);
  return StepEachGroup(this->param_groups(), closure, [this](auto& group) {
    if (implementation_ == OptimizerImplementation::FUSED) {
      FusedStep(group);
    } else {
      ForeachStep(group);
    }
  });
}

template <typename Base, typename Options, typename ParamState>
typename MultiTensorAdamFamily<Base, Options, ParamState>::Slots
MultiTensorAdamFamily<Base, Options, ParamState>::Gather(torch::optim::OptimizerParamGroup& group) {
  const auto& options = static_cast<const Options&>(group.options());
  Slots slots;
  for (const auto& p : group.params()) {
    if (!p.grad().defined()) continue;
    auto& slot = this->state()[OptimizerStateKeyOf(p)];
    if (slot == nullptr) {
      auto fresh = std::make_unique<ParamState>();
      fresh->step(0);
      fresh->exp_avg(torch::zeros_like(p, at::MemoryFormat::Preserve));
      fresh->exp_avg_sq(torch::zeros_like(p, at::MemoryFormat::Preserve));
      if (options.amsgrad()) {
        fresh->max_exp_avg_sq(torch::zeros_like(p, at::MemoryFormat::Preserve));
      }
      slot = std::move(fresh);
    }
    auto& state = static_cast<ParamState&>(*slot);
    slots.params.push_back(p);
    slots.grads.push_back(p.grad());
    slots.exp_avgs.push_back(state.exp_avg());
    slots.exp_avg_sqs.push_back(state.exp_avg_sq());
    if (options.amsgrad()) slots.max_exp_avg_sqs.push_back(state.max_exp_avg_sq());
    slots.states.push_back(&state);
  }
  return slots;
}

// LibTorch's Adam(W)::step for one group, each line over the group at once
// (bias corrections per parameter: their step counts may differ).
template <typename Base, typename Options, typename ParamState>
void MultiTensorAdamFamily<Base, Options, ParamState>::ForeachStep(
    torch::optim::OptimizerParamGroup& group) {
  const auto& options = static_cast<const Options&>(group.options());
  const double decay = options.weight_decay();
  if constexpr (kDecoupledDecay<Base>) {
    // AdamW decays before it makes a new parameter's state: the same here.
    std::vector<torch::Tensor> decayed;
    for (const auto& p : group.params()) {
      if (p.grad().defined()) decayed.push_back(p);
    }
    if (decay != 0 && !decayed.empty()) at::_foreach_mul_(decayed, 1 - options.lr() * decay);
  }
  Slots slots = Gather(group);
  if (slots.params.empty()) return;
  const auto [beta1, beta2] = options.betas();
  std::vector<at::Scalar> root_correction2, minus_step_size;
  for (ParamState* state : slots.states) {
    state->step(state->step() + 1);
    const double correction1 = 1 - std::pow(beta1, state->step());
    const double correction2 = 1 - std::pow(beta2, state->step());
    root_correction2.emplace_back(std::sqrt(correction2));
    minus_step_size.emplace_back(-(options.lr() / correction1));
  }
  std::vector<torch::Tensor> grads = slots.grads;
  if (!kDecoupledDecay<Base> && decay != 0) grads = at::_foreach_add(grads, slots.params, decay);
  at::_foreach_mul_(slots.exp_avgs, beta1);
  at::_foreach_add_(slots.exp_avgs, grads, 1 - beta1);
  at::_foreach_mul_(slots.exp_avg_sqs, beta2);
  at::_foreach_addcmul_(slots.exp_avg_sqs, grads, grads, 1 - beta2);
  if (options.amsgrad()) {
    for (size_t i = 0; i < slots.params.size(); ++i) {
      torch::max_out(slots.max_exp_avg_sqs[i], slots.exp_avg_sqs[i], slots.max_exp_avg_sqs[i]);
    }
  }
  std::vector<torch::Tensor> denominators =
      at::_foreach_sqrt(options.amsgrad() ? slots.max_exp_avg_sqs : slots.exp_avg_sqs);
  at::_foreach_div_(denominators, root_correction2);
  at::_foreach_add_(denominators, options.eps());
  at::_foreach_addcdiv_(slots.params, slots.exp_avgs, denominators, minus_step_size);
}

template <typename Base, typename Options, typename ParamState>
void MultiTensorAdamFamily<Base, Options, ParamState>::FusedStep(
    torch::optim::OptimizerParamGroup& group) {
#if PIPELINE_TORCH_AT_LEAST(2, 4)
  const auto& options = static_cast<const Options&>(group.options());
  Slots slots = Gather(group);
  if (slots.params.empty()) return;
  std::vector<torch::Tensor> counts;
  for (size_t i = 0; i < slots.params.size(); ++i) {
    DeviceStep& mirror = device_steps_[OptimizerStateKeyOf(slots.params[i])];
    const int64_t step = slots.states[i]->step();
    if (mirror.mirrors != step || mirror.count.device() != slots.params[i].device()) {
      mirror.count = torch::full({}, static_cast<double>(step),
                                 slots.params[i].options().dtype(torch::kFloat));
    }
    mirror.mirrors = step + 1;
    slots.states[i]->step(step + 1);
    counts.push_back(mirror.count);
  }
  // As torch.optim's fused path: the counts advance, then the kernel reads them.
  at::_foreach_add_(counts, 1);
  const auto [beta1, beta2] = options.betas();
  if constexpr (kDecoupledDecay<Base>) {
    at::_fused_adamw_(slots.params, slots.grads, slots.exp_avgs, slots.exp_avg_sqs,
                      slots.max_exp_avg_sqs, counts, options.lr(), beta1, beta2,
                      options.weight_decay(), options.eps(), options.amsgrad(),
                      /*maximize=*/false);
  } else {
    at::_fused_adam_(slots.params, slots.grads, slots.exp_avgs, slots.exp_avg_sqs,
                     slots.max_exp_avg_sqs, counts, options.lr(), beta1, beta2,
                     options.weight_decay(), options.eps(), options.amsgrad(),
                     /*maximize=*/false);
  }
#else
  // Refused when the config is validated; kept as a safe fallback.
  ForeachStep(group);
#endif
}

template class MultiTensorAdamFamily<torch::optim::Adam, torch::optim::AdamOptions,
                                     torch::optim::AdamParamState>;
template class MultiTensorAdamFamily<torch::optim::AdamW, torch::optim::AdamWOptions,
                                     torch::optim::AdamWParamState>;

}  // namespace pipeline
