// model `mobilenet_v2`: torchvision's MobileNetV2 (inverted residual blocks
// with linear bottlenecks, ReLU6). Submodules carry torchvision's attribute
// names and registration order, and the parameter-free layers torchvision
// keeps in its Sequentials (ReLU6, Dropout) hold their index here too, so
// named_parameters() and named_buffers() give exactly the keys and shapes of
// torchvision's state_dict() and checkpoints can be exchanged with
// torchvision.models.mobilenet_v2; the test checks this against fixtures
// written by tools/fixtures/torchvision_state_dict_keys.py, and checks the
// logits against torchvision's for the same weights. Initialisation is
// torchvision's too.
//
//   model {
//     name: "mobilenet_v2"
//     options {
//       [type.googleapis.com/pipeline.MobileNetV2Options] { width_multiplier: 0.5 }
//     }
//   }

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/layers/batch_norm.h"
#include "pipeline/util/status_macros.h"
#include "plugins/models/common/dropout.h"
#include "plugins/models/common/mobile_blocks.h"
#include "plugins/models/mobilenet_v2/mobilenet_v2.pb.h"
#include "torch/nn/init.h"
#include "torch/nn/modules/batchnorm.h"
#include "torch/nn/modules/container/sequential.h"
#include "torch/nn/modules/conv.h"
#include "torch/nn/modules/dropout.h"
#include "torch/nn/modules/linear.h"

namespace pipeline {
namespace {

// torchvision's Conv2dNormActivation with ReLU6: children "0" (conv) and "1"
// (BatchNorm); its ReLU6 ("2") has no state, so it is applied in forward().
class ConvBnReLU6Impl : public torch::nn::Module {
 public:
  ConvBnReLU6Impl(int64_t in_channels, int64_t out_channels, int64_t kernel_size,
                  int64_t stride = 1, int64_t groups = 1) {
    conv_ =
        register_module("0", NormedConv(in_channels, out_channels, kernel_size, stride, groups));
    norm_ = register_module("1", BatchNorm2d(out_channels));
  }

  // hardtanh_ as nn.ReLU6(inplace=True): its backward is one kernel on the
  // result, where clamp_'s keeps a copy of the input and takes three. Under
  // bf16 autocast the activations are bfloat16, for which LibTorch 1.13's
  // CPU hardtanh backward has no kernel ("hardshrink_backward_cpu" not
  // implemented for 'BFloat16'): clamp_ there, the same values.
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = norm_(conv_(x));
    if (y.is_cpu() && y.scalar_type() == torch::kBFloat16) return y.clamp_(0, 6);
    return torch::hardtanh_(y, 0, 6);
  }

 private:
  torch::nn::Conv2d conv_{nullptr};
  BatchNorm2d norm_{nullptr};
};
TORCH_MODULE(ConvBnReLU6);

// torchvision's InvertedResidual: an optional 1x1 expansion, a 3x3 depthwise
// conv and a linear 1x1 projection, all in `conv`; the input is added back
// where the shape allows.
class InvertedResidualImpl : public torch::nn::Module {
 public:
  InvertedResidualImpl(int64_t in_channels, int64_t out_channels, int64_t stride,
                       int64_t expand_ratio)
      : use_residual_(stride == 1 && in_channels == out_channels) {
    const int64_t hidden = in_channels * expand_ratio;
    torch::nn::Sequential conv;
    if (expand_ratio != 1) conv->push_back(ConvBnReLU6(in_channels, hidden, 1));
    conv->push_back(ConvBnReLU6(hidden, hidden, 3, stride, /*groups=*/hidden));
    conv->push_back(NormedConv(hidden, out_channels, 1));
    conv->push_back(BatchNorm2d(out_channels));
    conv_ = register_module("conv", conv);
  }

  torch::Tensor forward(const torch::Tensor& x) {
    return use_residual_ ? x + conv_->forward(x) : conv_->forward(x);
  }

 private:
  bool use_residual_;
  torch::nn::Sequential conv_{nullptr};
};
TORCH_MODULE(InvertedResidual);

struct Stage {
  int64_t expand_ratio;  // t
  int64_t channels;      // c
  int64_t blocks;        // n
  int64_t stride;        // s, of the stage's first block
};

constexpr Stage kStages[] = {
    {1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2},  {6, 64, 4, 2},
    {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1},
};

class MobileNetV2 : public Model {
 public:
  std::vector<std::string> head_prefixes() const override { return {"classifier.1."}; }

  MobileNetV2(int64_t num_classes, int64_t in_channels, double width_multiplier, double dropout) {
    int64_t channels = MakeDivisible(32 * width_multiplier);
    const int64_t last_channels = MakeDivisible(1280 * std::max(1.0, width_multiplier));
    torch::nn::Sequential features;
    features->push_back(ConvBnReLU6(in_channels, channels, 3, /*stride=*/2));
    for (const Stage& stage : kStages) {
      const int64_t out_channels = MakeDivisible(stage.channels * width_multiplier);
      for (int64_t block = 0; block < stage.blocks; ++block) {
        features->push_back(InvertedResidual(channels, out_channels, block == 0 ? stage.stride : 1,
                                             stage.expand_ratio));
        channels = out_channels;
      }
    }
    features->push_back(ConvBnReLU6(channels, last_channels, 1));
    features_ = register_module("features", features);
    classifier_ = register_module(
        "classifier", torch::nn::Sequential(torch::nn::Dropout(torch::nn::DropoutOptions(dropout)),
                                            torch::nn::Linear(last_channels, num_classes)));
    InitialiseMobileNetWeights(*this);
  }

  torch::Tensor forward(const torch::Tensor& images) override {
    torch::Tensor x = features_->forward(images);
    x = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
    return classifier_->forward(x);
  }

 private:
  torch::nn::Sequential features_{nullptr};
  torch::nn::Sequential classifier_{nullptr};
};

absl::Status ValidateMobileNetV2Options(const MobileNetV2Options& options) {
  if (!(options.width_multiplier() > 0) || !std::isfinite(options.width_multiplier())) {
    return absl::InvalidArgumentError(
        absl::StrCat("width_multiplier: ", options.width_multiplier(),
                     " is not a positive factor; set one such as 0.5, 1.0 or 1.4"));
  }
  RETURN_IF_ERROR(ValidateDropout(options.dropout()));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Model>> CreateMobileNetV2(const MobileNetV2Options& options,
                                                         const ModelContext& context) {
  return std::make_unique<MobileNetV2>(context.num_classes, context.input_channels,
                                       options.width_multiplier(), options.dropout());
}

PIPELINE_REGISTER_PLUGIN(Model, "mobilenet_v2", MobileNetV2Options,
                         "MobileNetV2 with torchvision's state_dict keys and init",
                         CreateMobileNetV2, ValidateMobileNetV2Options);

}  // namespace
}  // namespace pipeline
