#include "pipeline/trainer/model_ema.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "torch/csrc/autograd/grad_mode.h"

namespace pipeline {
namespace {

// The model's parameters then buffers, under their state_dict names, as
// the checkpoint writes them.
NamedTensors ModelTensors(Model& model) {
  NamedTensors tensors;
  for (const auto& parameter : model.named_parameters()) {
    tensors.emplace_back(parameter.key(), parameter.value());
  }
  for (const auto& buffer : model.named_buffers()) {
    tensors.emplace_back(buffer.key(), buffer.value());
  }
  return tensors;
}

std::string Shape(const torch::Tensor& tensor) {
  std::string text;
  for (int64_t size : tensor.sizes()) absl::StrAppend(&text, text.empty() ? "" : "x", size);
  return text.empty() ? "scalar" : text;
}

}  // namespace

ModelEma::ModelEma(const EmaConfig& config, Model& model) : config_(config) {
  torch::NoGradGuard no_grad;
  for (auto& [name, tensor] : ModelTensors(model)) {
    values_.emplace_back(name, tensor.detach().clone());
  }
}

double ModelEma::Decay(const EmaConfig& config, int64_t step) {
  const int64_t k = step - 1;
  if (k <= 0) return 0.0;
  if (!config.warmup()) return config.decay();
  const double warm =
      1.0 - std::pow(1.0 + static_cast<double>(k) / config.warmup_gamma(), -config.warmup_power());
  return std::max(std::min(warm, config.decay()), 0.0);
}

void ModelEma::Update(Model& model, int64_t step) {
  if (step % config_.every_steps() != 0) return;
  const double decay = Decay(config_, step);
  torch::NoGradGuard no_grad;
  const NamedTensors current = ModelTensors(model);
  for (size_t i = 0; i < values_.size(); ++i) {
    torch::Tensor& average = values_[i].second;
    const torch::Tensor& weights = current[i].second;
    if (average.is_floating_point()) {
      // torch.lerp: average + (1 - decay) * (weights - average), as timm's
      // _foreach_lerp_.
      average.lerp_(weights, 1.0 - decay);
    } else {
      average.copy_(weights);
    }
  }
}

absl::Status ModelEma::Restore(const NamedTensors& saved) {
  if (saved.size() != values_.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "its EMA weights hold ", saved.size(), " tensors and the model has ", values_.size()));
  }
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < values_.size(); ++i) {
    const auto& [name, tensor] = saved[i];
    if (name != values_[i].first || !tensor.sizes().equals(values_[i].second.sizes())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "its EMA weight ", name, " (", Shape(tensor), ") does not match the model's ",
          values_[i].first, " (", Shape(values_[i].second), ")"));
    }
    values_[i].second.copy_(tensor);
  }
  return absl::OkStatus();
}

void ModelEma::SwapWith(Model& model) {
  torch::NoGradGuard no_grad;
  const NamedTensors current = ModelTensors(model);
  for (size_t i = 0; i < values_.size(); ++i) {
    torch::Tensor held = current[i].second.clone();
    current[i].second.copy_(values_[i].second);
    values_[i].second.copy_(held);
  }
}

absl::Status EmaHook::OnRunStart(TrainContext& context) {
  if (resumed_ == nullptr || resumed_->empty()) return absl::OkStatus();
  absl::Status restored = ema_.Restore(*resumed_);
  if (!restored.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the checkpoint resumed from: ", restored.message()));
  }
  return absl::OkStatus();
}

absl::Status EmaHook::OnStepEnd(TrainContext& context, const StepReport& step) {
  if (step.applied) ema_.Update(context.model(), context.position.step);
  return absl::OkStatus();
}

}  // namespace pipeline
