#include "plugins/models/common/mobile_blocks.h"

#include <algorithm>

#include "torch/nn/init.h"
#include "torch/nn/modules/linear.h"

namespace pipeline {

int64_t MakeDivisible(double value, int64_t divisor) {
  int64_t rounded =
      std::max(divisor, static_cast<int64_t>(value + divisor / 2.0) / divisor * divisor);
  if (rounded < 0.9 * value) rounded += divisor;
  return rounded;
}

torch::nn::Conv2d NormedConv(int64_t in_channels, int64_t out_channels, int64_t kernel_size,
                             int64_t stride, int64_t groups) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in_channels, out_channels, kernel_size)
                               .stride(stride)
                               .padding((kernel_size - 1) / 2)
                               .groups(groups)
                               .bias(false));
}

void InitialiseMobileNetWeights(torch::nn::Module& model) {
  for (const auto& module : model.modules(/*include_self=*/false)) {
    if (auto* conv = module->as<torch::nn::Conv2d>()) {
      torch::nn::init::kaiming_normal_(conv->weight, /*a=*/0, torch::kFanOut);
      if (conv->bias.defined()) torch::nn::init::zeros_(conv->bias);
    } else if (auto* linear = module->as<torch::nn::Linear>()) {
      torch::nn::init::normal_(linear->weight, 0, 0.01);
      torch::nn::init::zeros_(linear->bias);
    }
  }
}

SqueezeExcitationImpl::SqueezeExcitationImpl(int64_t channels, int64_t squeeze_channels,
                                             SqueezeActivation activation,
                                             ScaleActivation scale_activation)
    : activation_(activation), scale_activation_(scale_activation) {
  fc1_ = register_module("fc1", torch::nn::Conv2d(channels, squeeze_channels, 1));
  fc2_ = register_module("fc2", torch::nn::Conv2d(squeeze_channels, channels, 1));
}

torch::Tensor SqueezeExcitationImpl::forward(const torch::Tensor& x) {
  torch::Tensor scale = fc1_(torch::adaptive_avg_pool2d(x, {1, 1}));
  scale = fc2_(activation_ == SqueezeActivation::kReLU ? scale.relu_() : torch::silu_(scale));
  scale = scale_activation_ == ScaleActivation::kSigmoid ? scale.sigmoid()
                                                          : torch::hardsigmoid(scale);
  return scale * x;
}

}  // namespace pipeline
