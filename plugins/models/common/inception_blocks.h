#ifndef PLUGINS_MODELS_COMMON_INCEPTION_BLOCKS_H_
#define PLUGINS_MODELS_COMMON_INCEPTION_BLOCKS_H_

// What torchvision's GoogLeNet and Inception v3 share: their conv block,
// their transform_input, and the checks of the options both have.

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "pipeline/layers/batch_norm.h"
#include "torch/nn/modules/conv.h"
#include "torch/nn/pimpl.h"
#include "torch/types.h"

namespace pipeline {

// torchvision's BasicConv2d: `conv` (`options` made bias-free, since a
// BatchNorm follows), `bn` (BatchNorm with eps 0.001, the TensorFlow
// originals' value) and a ReLU.
class BasicConv2dImpl : public torch::nn::Module {
 public:
  explicit BasicConv2dImpl(torch::nn::Conv2dOptions options);
  torch::Tensor forward(const torch::Tensor& x);

  torch::nn::Conv2d conv{nullptr};
  BatchNorm2d bn{nullptr};
};
TORCH_MODULE(BasicConv2d);

// torchvision's _transform_input, for transform_input: images normalised
// with ImageNet's mean and std (torchvision's usual preprocessing) rescaled
// to what the ported TensorFlow weights expect, each channel normalised
// with mean 0.5 and std 0.5 instead. `images` has 3 channels.
torch::Tensor TransformInputLikeTorchvision(const torch::Tensor& images);

// Rejects an aux_loss_weight that is negative or not finite; `usual` names
// the customary value in the message ("0.3 is the GoogLeNet paper's").
absl::Status ValidateAuxLossWeight(double weight, absl::string_view usual);

// Rejects transform_input for images without exactly 3 channels (it
// rescales RGB channels), saying to turn it off.
absl::Status CheckTransformInputChannels(bool transform_input, int64_t input_channels);

}  // namespace pipeline

#endif  // PLUGINS_MODELS_COMMON_INCEPTION_BLOCKS_H_
