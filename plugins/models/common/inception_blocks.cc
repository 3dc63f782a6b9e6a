#include "plugins/models/common/inception_blocks.h"

#include <cstdint>
#include <vector>

namespace pipeline {

BasicConv2dImpl::BasicConv2dImpl(torch::nn::Conv2dOptions options) {
  const int64_t out_channels = options.out_channels();
  conv = register_module("conv", torch::nn::Conv2d(options.bias(false)));
  bn = register_module("bn", BatchNorm2d(torch::nn::BatchNormOptions(out_channels).eps(0.001)));
}

torch::Tensor BasicConv2dImpl::forward(const torch::Tensor& x) {
  return bn->forward(conv->forward(x)).relu_();
}

torch::Tensor TransformInputLikeTorchvision(const torch::Tensor& images) {
  constexpr double kMean[] = {0.485, 0.456, 0.406};
  constexpr double kStd[] = {0.229, 0.224, 0.225};
  std::vector<torch::Tensor> channels;
  for (int64_t c = 0; c < 3; ++c) {
    channels.push_back(images.select(1, c).unsqueeze(1) * (kStd[c] / 0.5) + (kMean[c] - 0.5) / 0.5);
  }
  return torch::cat(channels, 1);
}

}  // namespace pipeline
