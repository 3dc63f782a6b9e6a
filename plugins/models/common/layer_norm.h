#ifndef PLUGINS_MODELS_COMMON_LAYER_NORM_H_
#define PLUGINS_MODELS_COMMON_LAYER_NORM_H_

#include <cstdint>

#include "torch/nn/modules/normalization.h"
#include "torch/nn/pimpl.h"
#include "torch/types.h"

namespace pipeline {

// torch::nn::LayerNorm (same parameters, init and type, so optimizer.
// param_groups.norm_weight_decay finds it) that also trains under autocast
// on the CPU. There LibTorch 1.13 hands a convolution's or linear layer's
// bfloat16 output to layer_norm as it is, and the CPU kernel refuses
// bfloat16 input with float32 weights ("expected scalar type BFloat16 but
// found Float"; PyTorch 1.13's own nn.LayerNorm fails the same way). CUDA's
// autocast runs layer_norm in float32; this does the same on the CPU: an
// input of another dtype than the weights is normalised in theirs.
class AutocastLayerNormImpl : public torch::nn::LayerNormImpl {
 public:
  using torch::nn::LayerNormImpl::LayerNormImpl;
  torch::Tensor forward(const torch::Tensor& input);
};
TORCH_MODULE(AutocastLayerNorm);

// torchvision's LayerNorm2d (a LayerNorm over the channels of an NCHW map),
// with the same dtype rule.
class AutocastLayerNorm2dImpl : public AutocastLayerNormImpl {
 public:
  AutocastLayerNorm2dImpl(int64_t channels, double eps);
  torch::Tensor forward(const torch::Tensor& input);
};
TORCH_MODULE(AutocastLayerNorm2d);

}  // namespace pipeline

#endif  // PLUGINS_MODELS_COMMON_LAYER_NORM_H_
