// model `mobilenet_v3`: torchvision's MobileNetV3-Large and -Small
// (inverted residual blocks with squeeze-and-excitation, hardswish). Submodules
// carry torchvision's attribute names and registration order, and the
// parameter-free layers torchvision keeps in its Sequentials (activations,
// Dropout) hold their index here too, so named_parameters() and
// named_buffers() give exactly the keys and shapes of torchvision's
// state_dict() and checkpoints can be exchanged with
// torchvision.models.mobilenet_v3_large / _small; the test checks this against
// fixtures written by tools/fixtures/torchvision_state_dict_keys.py, and
// checks the logits against torchvision's for the same weights.
// Initialisation, and BatchNorm's eps 0.001 and momentum 0.01, are
// torchvision's too.
//
//   model {
//     name: "mobilenet_v3"
//     options { [type.googleapis.com/pipeline.MobileNetV3Options] { variant: SMALL } }
//   }

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/layers/batch_norm.h"
#include "pipeline/util/status_macros.h"
#include "plugins/models/common/dropout.h"
#include "plugins/models/common/mobile_blocks.h"
#include "plugins/models/mobilenet_v3/mobilenet_v3.pb.h"
#include "torch/nn/init.h"
#include "torch/nn/modules/batchnorm.h"
#include "torch/nn/modules/container/functional.h"
#include "torch/nn/modules/container/sequential.h"
#include "torch/nn/modules/conv.h"
#include "torch/nn/modules/dropout.h"
#include "torch/nn/modules/linear.h"

namespace pipeline {
namespace {

// One row of tables 1 and 2 of the MobileNetV3 paper, as torchvision's
// InvertedResidualConfig holds it (channels before the width multiplier).
struct BlockConfig {
  int64_t input_channels;
  int64_t kernel_size;
  int64_t expanded_channels;
  int64_t out_channels;
  bool squeeze_excitation;
  bool hardswish;  // else ReLU
  int64_t stride;
};

constexpr BlockConfig kLargeBlocks[] = {
    {16, 3, 16, 16, false, false, 1},  {16, 3, 64, 24, false, false, 2},
    {24, 3, 72, 24, false, false, 1},  {24, 5, 72, 40, true, false, 2},
    {40, 5, 120, 40, true, false, 1},  {40, 5, 120, 40, true, false, 1},
    {40, 3, 240, 80, false, true, 2},  {80, 3, 200, 80, false, true, 1},
    {80, 3, 184, 80, false, true, 1},  {80, 3, 184, 80, false, true, 1},
    {80, 3, 480, 112, true, true, 1},  {112, 3, 672, 112, true, true, 1},
    {112, 5, 672, 160, true, true, 2}, {160, 5, 960, 160, true, true, 1},
    {160, 5, 960, 160, true, true, 1},
};

constexpr BlockConfig kSmallBlocks[] = {
    {16, 3, 16, 16, true, false, 2},  {16, 3, 72, 24, false, false, 2},
    {24, 3, 88, 24, false, false, 1}, {24, 5, 96, 40, true, true, 2},
    {40, 5, 240, 40, true, true, 1},  {40, 5, 240, 40, true, true, 1},
    {40, 5, 120, 48, true, true, 1},  {48, 5, 144, 48, true, true, 1},
    {48, 5, 288, 96, true, true, 2},  {96, 5, 576, 96, true, true, 1},
    {96, 5, 576, 96, true, true, 1},
};

struct Architecture {
  absl::Span<const BlockConfig> blocks;
  int64_t classifier_channels;  // torchvision's last_channel
};

Architecture ArchitectureOf(MobileNetV3Options::Variant variant) {
  if (variant == MobileNetV3Options::SMALL) return {kSmallBlocks, 1024};
  return {kLargeBlocks, 1280};
}

torch::Tensor HardswishInPlace(torch::Tensor x) { return torch::hardswish_(x); }

enum class Activation { kNone, kReLU, kHardswish };

torch::Tensor Activate(torch::Tensor x, Activation activation) {
  switch (activation) {
    case Activation::kReLU:
      return x.relu_();
    case Activation::kHardswish:
      return HardswishInPlace(x);
    case Activation::kNone:
      break;
  }
  return x;
}

// torchvision's Conv2dNormActivation: children "0" (a bias-free conv, padded
// to keep the size at stride 1) and "1" (BatchNorm with MobileNetV3's eps and
// momentum); its activation ("2") has no state, so it is applied in forward().
class ConvNormActivationImpl : public torch::nn::Module {
 public:
  ConvNormActivationImpl(int64_t in_channels, int64_t out_channels, int64_t kernel_size,
                         int64_t stride, int64_t groups, Activation activation)
      : activation_(activation) {
    conv_ =
        register_module("0", NormedConv(in_channels, out_channels, kernel_size, stride, groups));
    norm_ = register_module(
        "1", BatchNorm2d(
                 torch::nn::BatchNorm2dOptions(out_channels).eps(0.001).momentum(0.01)));
  }

  torch::Tensor forward(const torch::Tensor& x) { return Activate(norm_(conv_(x)), activation_); }

 private:
  Activation activation_;
  torch::nn::Conv2d conv_{nullptr};
  BatchNorm2d norm_{nullptr};
};
TORCH_MODULE(ConvNormActivation);

// torchvision's InvertedResidual: an optional 1x1 expansion, a depthwise
// conv, an optional squeeze-and-excitation and a linear 1x1 projection, all
// in `block`; the input is added back where the shape allows.
class InvertedResidualImpl : public torch::nn::Module {
 public:
  InvertedResidualImpl(const BlockConfig& config, double width_multiplier) {
    const int64_t in_channels = MakeDivisible(config.input_channels * width_multiplier);
    const int64_t expanded = MakeDivisible(config.expanded_channels * width_multiplier);
    const int64_t out_channels = MakeDivisible(config.out_channels * width_multiplier);
    const Activation activation = config.hardswish ? Activation::kHardswish : Activation::kReLU;
    use_residual_ = config.stride == 1 && in_channels == out_channels;
    torch::nn::Sequential block;
    if (expanded != in_channels) {
      block->push_back(ConvNormActivation(in_channels, expanded, 1, 1, 1, activation));
    }
    block->push_back(ConvNormActivation(expanded, expanded, config.kernel_size, config.stride,
                                        /*groups=*/expanded, activation));
    if (config.squeeze_excitation) {
      block->push_back(SqueezeExcitation(expanded, MakeDivisible(expanded / 4),
                                         SqueezeActivation::kReLU, ScaleActivation::kHardsigmoid));
    }
    block->push_back(ConvNormActivation(expanded, out_channels, 1, 1, 1, Activation::kNone));
    block_ = register_module("block", block);
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor result = block_->forward(x);
    if (use_residual_) result += x;
    return result;
  }

 private:
  bool use_residual_ = false;
  torch::nn::Sequential block_{nullptr};
};
TORCH_MODULE(InvertedResidual);

class MobileNetV3 : public Model {
 public:
  std::vector<std::string> head_prefixes() const override { return {"classifier.3."}; }

  MobileNetV3(const Architecture& architecture, int64_t num_classes, int64_t in_channels,
              double width_multiplier, double dropout) {
    torch::nn::Sequential features;
    features->push_back(ConvNormActivation(
        in_channels, MakeDivisible(architecture.blocks.front().input_channels * width_multiplier),
        3, /*stride=*/2, /*groups=*/1, Activation::kHardswish));
    for (const BlockConfig& block : architecture.blocks) {
      features->push_back(InvertedResidual(block, width_multiplier));
    }
    const int64_t last_conv_in =
        MakeDivisible(architecture.blocks.back().out_channels * width_multiplier);
    const int64_t last_conv_out = 6 * last_conv_in;
    features->push_back(
        ConvNormActivation(last_conv_in, last_conv_out, 1, 1, 1, Activation::kHardswish));
    features_ = register_module("features", features);
    // torchvision's `avgpool` has no state and is applied in forward().
    const int64_t hidden = MakeDivisible(architecture.classifier_channels * width_multiplier);
    classifier_ = register_module(
        "classifier", torch::nn::Sequential(torch::nn::Linear(last_conv_out, hidden),
                                            torch::nn::Functional(HardswishInPlace),
                                            torch::nn::Dropout(torch::nn::DropoutOptions(dropout)),
                                            torch::nn::Linear(hidden, num_classes)));
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

absl::Status ValidateMobileNetV3Options(const MobileNetV3Options& options) {
  if (!(options.width_multiplier() > 0) || !std::isfinite(options.width_multiplier())) {
    return absl::InvalidArgumentError(
        absl::StrCat("width_multiplier: ", options.width_multiplier(),
                     " is not a positive factor; set one such as 0.75, 1.0 or 1.25"));
  }
  RETURN_IF_ERROR(ValidateDropout(options.dropout()));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Model>> CreateMobileNetV3(const MobileNetV3Options& options,
                                                         const ModelContext& context) {
  return std::make_unique<MobileNetV3>(ArchitectureOf(options.variant()), context.num_classes,
                                       context.input_channels, options.width_multiplier(),
                                       options.dropout());
}

PIPELINE_REGISTER_PLUGIN(Model, "mobilenet_v3", MobileNetV3Options,
                         "MobileNetV3-Large/Small with torchvision's state_dict keys and init",
                         CreateMobileNetV3, ValidateMobileNetV3Options);

}  // namespace
}  // namespace pipeline
