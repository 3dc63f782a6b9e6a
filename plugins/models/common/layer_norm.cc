#include "plugins/models/common/layer_norm.h"

namespace pipeline {

torch::Tensor AutocastLayerNormImpl::forward(const torch::Tensor& input) {
  // On CUDA autocast itself casts layer_norm's input to float32.
  if (weight.defined() && input.is_cpu() && input.scalar_type() != weight.scalar_type()) {
    return torch::nn::LayerNormImpl::forward(input.to(weight.scalar_type()));
  }
  return torch::nn::LayerNormImpl::forward(input);
}

AutocastLayerNorm2dImpl::AutocastLayerNorm2dImpl(int64_t channels, double eps)
    : AutocastLayerNormImpl(torch::nn::LayerNormOptions({channels}).eps(eps)) {}

torch::Tensor AutocastLayerNorm2dImpl::forward(const torch::Tensor& input) {
  return AutocastLayerNormImpl::forward(input.permute({0, 2, 3, 1})).permute({0, 3, 1, 2});
}

}  // namespace pipeline
