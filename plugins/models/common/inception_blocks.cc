#include "plugins/models/common/inception_blocks.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"

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

absl::Status ValidateAuxLossWeight(double weight, absl::string_view usual) {
  // Written to also reject NaN.
  if (!(weight >= 0 && std::isfinite(weight))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "aux_loss_weight: ", weight, " is not a loss weight; choose 0 or more (", usual, ")"));
  }
  return absl::OkStatus();
}

absl::Status CheckTransformInputChannels(bool transform_input, int64_t input_channels) {
  if (transform_input && input_channels != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("transform_input: true rescales the 3 channels of RGB images, but the "
                     "images have ",
                     input_channels, "; set transform_input: false"));
  }
  return absl::OkStatus();
}

}  // namespace pipeline
