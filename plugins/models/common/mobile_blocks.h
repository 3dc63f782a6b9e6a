#ifndef PLUGINS_MODELS_COMMON_MOBILE_BLOCKS_H_
#define PLUGINS_MODELS_COMMON_MOBILE_BLOCKS_H_

#include <cstdint>

#include "torch/nn/module.h"
#include "torch/nn/modules/conv.h"
#include "torch/nn/pimpl.h"
#include "torch/types.h"

namespace pipeline {

// torchvision's _make_divisible (from the TensorFlow original): `value`
// rounded to the nearest multiple of `divisor`, at least `divisor`, and never
// more than 10% below `value`.
int64_t MakeDivisible(double value, int64_t divisor = 8);

// The conv of torchvision's Conv2dNormActivation: bias-free (a BatchNorm
// follows) and padded by (kernel_size - 1) / 2 to keep the size at stride 1.
// Its weights keep LibTorch's default init; the models initialise them once
// the whole model is built, as torchvision does.
torch::nn::Conv2d NormedConv(int64_t in_channels, int64_t out_channels, int64_t kernel_size,
                             int64_t stride = 1, int64_t groups = 1);

// torchvision's MobileNet initialisation of a built model: Kaiming-normal
// (fan out) convolutions, zero biases, N(0, 0.01) linear weights; LibTorch's
// BatchNorm2d already starts at weight 1, bias 0.
void InitialiseMobileNetWeights(torch::nn::Module& model);

// The activations torchvision's models pass to SqueezeExcitation.
enum class SqueezeActivation { kReLU, kSiLU };
enum class ScaleActivation { kSigmoid, kHardsigmoid };

// torchvision.ops.SqueezeExcitation: x times a per-channel scale,
// scale_activation(fc2(activation(fc1(average pool of x)))), fc1 and fc2
// 1x1 convolutions (state_dict keys fc1.*, fc2.*). MobileNetV3 uses ReLU and
// hardsigmoid, EfficientNet and MaxViT SiLU and sigmoid, RegNet ReLU and
// sigmoid.
class SqueezeExcitationImpl : public torch::nn::Module {
 public:
  SqueezeExcitationImpl(int64_t channels, int64_t squeeze_channels, SqueezeActivation activation,
                        ScaleActivation scale_activation = ScaleActivation::kSigmoid);
  torch::Tensor forward(const torch::Tensor& x);

 private:
  SqueezeActivation activation_;
  ScaleActivation scale_activation_;
  torch::nn::Conv2d fc1_{nullptr}, fc2_{nullptr};
};
TORCH_MODULE(SqueezeExcitation);

}  // namespace pipeline

#endif  // PLUGINS_MODELS_COMMON_MOBILE_BLOCKS_H_
