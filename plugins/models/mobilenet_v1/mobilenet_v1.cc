// model `mobilenet_v1`: MobileNet v1 (Howard et al. 2017, Table 1) with a
// width multiplier. torchvision has no such model; the state_dict keys are
// listed in mobilenet_v1.proto (features.0.{conv,bn}, then
// features.N.{depthwise,depthwise_bn,pointwise,pointwise_bn} for the 13
// depthwise-separable blocks, then classifier). Initialisation follows
// torchvision's MobileNet v2: convolutions Kaiming-normal (fan_out, ReLU),
// BatchNorm weight 1 and bias 0, the classifier's weights normal(0, 0.01)
// with zero bias.
//
//   model {
//     name: "mobilenet_v1"
//     options { [type.googleapis.com/pipeline.MobileNetV1Options] { width_multiplier: 0.5 } }
//   }

#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/layers/batch_norm.h"
#include "plugins/models/common/dropout.h"
#include "plugins/models/common/mobile_blocks.h"
#include "plugins/models/mobilenet_v1/mobilenet_v1.pb.h"
#include "torch/nn/init.h"
#include "torch/nn/modules/batchnorm.h"
#include "torch/nn/modules/container/sequential.h"
#include "torch/nn/modules/conv.h"
#include "torch/nn/modules/linear.h"

namespace pipeline {
namespace {

constexpr int64_t kStemChannels = 32;

// Table 1 after the stem: each depthwise-separable block's output channels
// (at width 1) and the stride of its depthwise convolution. (The table's
// stride 2 on the last depthwise convolution is a known typo: its input and
// output are both 7x7, so it is stride 1.)
constexpr std::pair<int64_t, int64_t> kBlocks[] = {
    {64, 1},  {128, 2}, {128, 1}, {256, 2}, {256, 1},  {512, 2},  {512, 1},
    {512, 1}, {512, 1}, {512, 1}, {512, 1}, {1024, 2}, {1024, 1},
};

// `channels * width_multiplier`, rounded as torchvision's _make_divisible
// does with divisor 8: to the nearest multiple of 8, at least 8, never more
// than 10% below the exact value.
int64_t ScaledChannels(int64_t channels, double width_multiplier) {
  return MakeDivisible(channels * width_multiplier);
}

torch::nn::Conv2d Conv(int64_t in_channels, int64_t out_channels, int64_t kernel_size,
                       int64_t stride, int64_t groups) {
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(in_channels, out_channels, kernel_size)
                             .stride(stride)
                             .padding(kernel_size / 2)
                             .groups(groups)
                             .bias(false));
  torch::nn::init::kaiming_normal_(conv->weight, /*a=*/0, torch::kFanOut, torch::kReLU);
  return conv;
}

// The full 3x3 convolution that opens the network. LibTorch's BatchNorm2d
// already starts at weight 1, bias 0.
class StemImpl : public torch::nn::Module {
 public:
  StemImpl(int64_t in_channels, int64_t out_channels) {
    conv_ = register_module("conv", Conv(in_channels, out_channels, 3, 2, 1));
    bn_ = register_module("bn", BatchNorm2d(out_channels));
  }

  torch::Tensor forward(const torch::Tensor& x) { return bn_(conv_(x)).relu_(); }

 private:
  torch::nn::Conv2d conv_{nullptr};
  BatchNorm2d bn_{nullptr};
};
TORCH_MODULE(Stem);

// One 3x3 filter per channel, then a 1x1 convolution that mixes channels;
// each followed by BatchNorm and ReLU (Figure 3 of the paper).
class DepthwiseSeparableImpl : public torch::nn::Module {
 public:
  DepthwiseSeparableImpl(int64_t in_channels, int64_t out_channels, int64_t stride) {
    depthwise_ = register_module("depthwise", Conv(in_channels, in_channels, 3, stride,
                                                   /*groups=*/in_channels));
    depthwise_bn_ = register_module("depthwise_bn", BatchNorm2d(in_channels));
    pointwise_ = register_module("pointwise", Conv(in_channels, out_channels, 1, 1, 1));
    pointwise_bn_ = register_module("pointwise_bn", BatchNorm2d(out_channels));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor out = depthwise_bn_(depthwise_(x)).relu_();
    return pointwise_bn_(pointwise_(out)).relu_();
  }

 private:
  torch::nn::Conv2d depthwise_{nullptr}, pointwise_{nullptr};
  BatchNorm2d depthwise_bn_{nullptr}, pointwise_bn_{nullptr};
};
TORCH_MODULE(DepthwiseSeparable);

class MobileNetV1 : public Model {
 public:
  std::vector<std::string> head_prefixes() const override { return {"classifier."}; }

  MobileNetV1(double width_multiplier, int64_t num_classes, int64_t in_channels, double dropout)
      : dropout_(dropout) {
    torch::nn::Sequential features;
    int64_t channels = ScaledChannels(kStemChannels, width_multiplier);
    features->push_back(Stem(in_channels, channels));
    for (const auto& [out_channels, stride] : kBlocks) {
      const int64_t scaled = ScaledChannels(out_channels, width_multiplier);
      features->push_back(DepthwiseSeparable(channels, scaled, stride));
      channels = scaled;
    }
    features_ = register_module("features", features);
    classifier_ = register_module("classifier", torch::nn::Linear(channels, num_classes));
    torch::nn::init::normal_(classifier_->weight, 0, 0.01);
    torch::nn::init::zeros_(classifier_->bias);
  }

  torch::Tensor forward(const torch::Tensor& images) override {
    torch::Tensor x = features_->forward(images);
    x = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
    // Parameter-free, so applied as a function: no state_dict entry.
    if (dropout_ > 0) x = torch::dropout(x, dropout_, is_training());
    return classifier_(x);
  }

 private:
  double dropout_;
  torch::nn::Sequential features_{nullptr};
  torch::nn::Linear classifier_{nullptr};
};

absl::Status ValidateMobileNetV1Options(const MobileNetV1Options& options) {
  // Written to also reject NaN.
  if (!(options.width_multiplier() > 0 && options.width_multiplier() <= 4)) {
    return absl::InvalidArgumentError(
        absl::StrCat("width_multiplier: ", options.width_multiplier(),
                     " is not in (0, 4]; the paper uses 1, 0.75, 0.5 or 0.25"));
  }
  return ValidateDropout(options.dropout());
}

absl::StatusOr<std::unique_ptr<Model>> CreateMobileNetV1(const MobileNetV1Options& options,
                                                         const ModelContext& context) {
  return std::make_unique<MobileNetV1>(options.width_multiplier(), context.num_classes,
                                       context.input_channels, options.dropout());
}

PIPELINE_REGISTER_PLUGIN(Model, "mobilenet_v1", MobileNetV1Options,
                         "MobileNet v1 (Howard et al. 2017) with a width multiplier",
                         CreateMobileNetV1, ValidateMobileNetV1Options);

}  // namespace
}  // namespace pipeline
