// model `efficientnet`: torchvision's EfficientNet B0..B7 (MBConv blocks with
// squeeze-and-excitation, SiLU, stochastic depth in training) and
// EfficientNetV2 S/M/L (FusedMBConv blocks in the early stages). Submodules
// carry torchvision's attribute names and registration order, and the
// parameter-free layers torchvision keeps in its Sequentials (activations,
// Dropout) hold their index here too, so named_parameters() and
// named_buffers() give exactly the keys and shapes of torchvision's
// state_dict() and checkpoints can be exchanged with
// torchvision.models.efficientnet_b<N> and efficientnet_v2_<size>; the test
// checks this against fixtures written by
// tools/fixtures/torchvision_state_dict_keys.py, and checks the logits
// against torchvision's for the same weights. Initialisation is
// torchvision's too.
//
//   model {
//     name: "efficientnet"
//     options {
//       [type.googleapis.com/pipeline.EfficientNetOptions] { variant: B3 dropout: 0.3 }
//     }
//   }

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/layers/batch_norm.h"
#include "pipeline/util/status_macros.h"
#include "plugins/models/common/dropout.h"
#include "plugins/models/common/mobile_blocks.h"
#include "plugins/models/common/stochastic_depth.h"
#include "plugins/models/efficientnet/efficientnet.pb.h"
#include "torch/nn/init.h"
#include "torch/nn/modules/batchnorm.h"
#include "torch/nn/modules/container/sequential.h"
#include "torch/nn/modules/conv.h"
#include "torch/nn/modules/dropout.h"
#include "torch/nn/modules/linear.h"

namespace pipeline {
namespace {

// One stage of blocks as torchvision's _efficientnet_conf lists it, before
// any scaling.
struct StageConfig {
  bool fused;  // FusedMBConv rather than MBConv
  int64_t expand_ratio;
  int64_t kernel_size;
  int64_t stride;  // of the stage's first block
  int64_t input_channels;
  int64_t out_channels;
  int64_t blocks;
};

// Table 1 of the EfficientNet paper: B0's channels and depth, which B1..B7
// scale.
constexpr StageConfig kV1Stages[] = {
    {false, 1, 3, 1, 32, 16, 1},   {false, 6, 3, 2, 16, 24, 2},  {false, 6, 5, 2, 24, 40, 2},
    {false, 6, 3, 2, 40, 80, 3},   {false, 6, 5, 1, 80, 112, 3}, {false, 6, 5, 2, 112, 192, 4},
    {false, 6, 3, 1, 192, 320, 1},
};

// EfficientNetV2's own stages, unscaled.
constexpr StageConfig kV2SStages[] = {
    {true, 1, 3, 1, 24, 24, 2},   {true, 4, 3, 2, 24, 48, 4},    {true, 4, 3, 2, 48, 64, 4},
    {false, 4, 3, 2, 64, 128, 6}, {false, 6, 3, 1, 128, 160, 9}, {false, 6, 3, 2, 160, 256, 15},
};
constexpr StageConfig kV2MStages[] = {
    {true, 1, 3, 1, 24, 24, 3},    {true, 4, 3, 2, 24, 48, 5},     {true, 4, 3, 2, 48, 80, 5},
    {false, 4, 3, 2, 80, 160, 7},  {false, 6, 3, 1, 160, 176, 14}, {false, 6, 3, 2, 176, 304, 18},
    {false, 6, 3, 1, 304, 512, 5},
};
constexpr StageConfig kV2LStages[] = {
    {true, 1, 3, 1, 32, 32, 4},    {true, 4, 3, 2, 32, 64, 7},     {true, 4, 3, 2, 64, 96, 7},
    {false, 4, 3, 2, 96, 192, 10}, {false, 6, 3, 1, 192, 224, 19}, {false, 6, 3, 2, 224, 384, 25},
    {false, 6, 3, 1, 384, 640, 7},
};

// One of torchvision's constructors: its stages, their compound scaling
// (B1..B7 scale B0's) and its settings that differ between variants.
struct Scaling {
  EfficientNetOptions::Variant variant;
  absl::Span<const StageConfig> stages;
  double width_multiplier;  // on every channel count
  double depth_multiplier;  // on every stage's block count
  int64_t last_channels;    // of the last conv; 0 for 4x its input's
  double dropout;           // torchvision's default
  double norm_eps;
  double norm_momentum;
};

constexpr Scaling kScalings[] = {
    {EfficientNetOptions::B0, kV1Stages, 1.0, 1.0, 0, 0.2, 1e-5, 0.1},
    {EfficientNetOptions::B1, kV1Stages, 1.0, 1.1, 0, 0.2, 1e-5, 0.1},
    {EfficientNetOptions::B2, kV1Stages, 1.1, 1.2, 0, 0.3, 1e-5, 0.1},
    {EfficientNetOptions::B3, kV1Stages, 1.2, 1.4, 0, 0.3, 1e-5, 0.1},
    {EfficientNetOptions::B4, kV1Stages, 1.4, 1.8, 0, 0.4, 1e-5, 0.1},
    {EfficientNetOptions::B5, kV1Stages, 1.6, 2.2, 0, 0.4, 1e-3, 0.01},
    {EfficientNetOptions::B6, kV1Stages, 1.8, 2.6, 0, 0.5, 1e-3, 0.01},
    {EfficientNetOptions::B7, kV1Stages, 2.0, 3.1, 0, 0.5, 1e-3, 0.01},
    {EfficientNetOptions::V2_S, kV2SStages, 1.0, 1.0, 1280, 0.2, 1e-3, 0.1},
    {EfficientNetOptions::V2_M, kV2MStages, 1.0, 1.0, 1280, 0.3, 1e-3, 0.1},
    {EfficientNetOptions::V2_L, kV2LStages, 1.0, 1.0, 1280, 0.4, 1e-3, 0.1},
};

const Scaling* FindScaling(EfficientNetOptions::Variant variant) {
  for (const Scaling& scaling : kScalings) {
    if (scaling.variant == variant) return &scaling;
  }
  return nullptr;
}

// torchvision's Conv2dNormActivation: children "0" (a bias-free conv, padded
// to keep the size at stride 1) and "1" (BatchNorm); its SiLU ("2") has no
// state, so it is applied in forward().
class ConvNormActivationImpl : public torch::nn::Module {
 public:
  ConvNormActivationImpl(int64_t in_channels, int64_t out_channels, int64_t kernel_size,
                         int64_t stride, int64_t groups, bool silu,
                         const torch::nn::BatchNorm2dOptions& norm)
      : silu_(silu) {
    conv_ =
        register_module("0", NormedConv(in_channels, out_channels, kernel_size, stride, groups));
    torch::nn::BatchNorm2dOptions norm_options = norm;
    norm_options.num_features(out_channels);
    norm_ = register_module("1", BatchNorm2d(norm_options));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = norm_(conv_(x));
    return silu_ ? torch::silu_(y) : y;
  }

 private:
  bool silu_;
  torch::nn::Conv2d conv_{nullptr};
  BatchNorm2d norm_{nullptr};
};
TORCH_MODULE(ConvNormActivation);

// The layers of torchvision's MBConv: an optional 1x1 expansion, a
// depthwise conv, squeeze-and-excitation and a linear 1x1 projection.
torch::nn::Sequential MBConvLayers(int64_t in_channels, int64_t out_channels, int64_t expanded,
                                   int64_t kernel_size, int64_t stride,
                                   const torch::nn::BatchNorm2dOptions& norm) {
  torch::nn::Sequential block;
  if (expanded != in_channels) {
    block->push_back(ConvNormActivation(in_channels, expanded, 1, 1, 1, /*silu=*/true, norm));
  }
  block->push_back(ConvNormActivation(expanded, expanded, kernel_size, stride,
                                      /*groups=*/expanded, /*silu=*/true, norm));
  block->push_back(SqueezeExcitation(expanded, std::max<int64_t>(1, in_channels / 4),
                                     SqueezeActivation::kSiLU));
  block->push_back(ConvNormActivation(expanded, out_channels, 1, 1, 1, /*silu=*/false, norm));
  return block;
}

// The layers of torchvision's FusedMBConv (EfficientNetV2's early stages):
// one full convolution in place of the expansion and the depthwise conv,
// then a linear 1x1 projection, which is left out where nothing is
// expanded; no squeeze-and-excitation.
torch::nn::Sequential FusedMBConvLayers(int64_t in_channels, int64_t out_channels, int64_t expanded,
                                        int64_t kernel_size, int64_t stride,
                                        const torch::nn::BatchNorm2dOptions& norm) {
  torch::nn::Sequential block;
  if (expanded != in_channels) {
    block->push_back(
        ConvNormActivation(in_channels, expanded, kernel_size, stride, 1, /*silu=*/true, norm));
    block->push_back(ConvNormActivation(expanded, out_channels, 1, 1, 1, /*silu=*/false, norm));
  } else {
    block->push_back(
        ConvNormActivation(in_channels, out_channels, kernel_size, stride, 1, /*silu=*/true, norm));
  }
  return block;
}

// torchvision's MBConv or FusedMBConv, which differ only in their layers
// (`block`): where the shape allows, the input is added back to the
// layers' output, which stochastic depth drops now and then in training.
// (torchvision's `stochastic_depth` submodule has no state, so it is a
// function here.)
class MBConvImpl : public torch::nn::Module {
 public:
  MBConvImpl(bool fused, int64_t in_channels, int64_t out_channels, int64_t expand_ratio,
             int64_t kernel_size, int64_t stride, double stochastic_depth_prob,
             const torch::nn::BatchNorm2dOptions& norm)
      : use_residual_(stride == 1 && in_channels == out_channels),
        stochastic_depth_prob_(stochastic_depth_prob) {
    const int64_t expanded = MakeDivisible(static_cast<double>(in_channels * expand_ratio));
    block_ = register_module(
        "block",
        fused ? FusedMBConvLayers(in_channels, out_channels, expanded, kernel_size, stride, norm)
              : MBConvLayers(in_channels, out_channels, expanded, kernel_size, stride, norm));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor result = block_->forward(x);
    if (use_residual_) {
      result = StochasticDepth(result, stochastic_depth_prob_, is_training());
      result += x;
    }
    return result;
  }

 private:
  bool use_residual_;
  double stochastic_depth_prob_;
  torch::nn::Sequential block_{nullptr};
};
TORCH_MODULE(MBConv);

// One stage of blocks, torchvision's inner nn.Sequential: its blocks are
// children "0", "1", ... (a LibTorch Sequential cannot hold another).
class StageImpl : public torch::nn::Module {
 public:
  void Add(MBConv block) {
    blocks_.push_back(register_module(std::to_string(blocks_.size()), block));
  }

  torch::Tensor forward(torch::Tensor x) {
    for (MBConv& block : blocks_) x = block->forward(x);
    return x;
  }

 private:
  std::vector<MBConv> blocks_;
};
TORCH_MODULE(Stage);

class EfficientNet : public Model {
 public:
  std::vector<std::string> head_prefixes() const override { return {"classifier.1."}; }

  EfficientNet(const Scaling& scaling, int64_t num_classes, int64_t in_channels, double dropout,
               double stochastic_depth_prob) {
    const torch::nn::BatchNorm2dOptions norm =
        torch::nn::BatchNorm2dOptions(1).eps(scaling.norm_eps).momentum(scaling.norm_momentum);
    // V2's channel counts are multiples of 8 and its multipliers 1, so
    // this leaves them as they are, as torchvision does.
    auto channels = [&scaling](int64_t base) {
      return MakeDivisible(base * scaling.width_multiplier);
    };
    auto depth = [&scaling](int64_t base) {
      return static_cast<int64_t>(std::ceil(base * scaling.depth_multiplier));
    };

    torch::nn::Sequential features;
    features->push_back(ConvNormActivation(in_channels, channels(scaling.stages[0].input_channels),
                                           3, /*stride=*/2, 1, /*silu=*/true, norm));
    int64_t total_blocks = 0;
    for (const StageConfig& stage : scaling.stages) total_blocks += depth(stage.blocks);
    // Stochastic depth grows linearly with the block's position in the
    // network, from 0 for the first.
    int64_t block_index = 0;
    for (const StageConfig& stage : scaling.stages) {
      Stage blocks;
      for (int64_t i = 0; i < depth(stage.blocks); ++i, ++block_index) {
        const int64_t block_in =
            i == 0 ? channels(stage.input_channels) : channels(stage.out_channels);
        blocks->Add(MBConv(stage.fused, block_in, channels(stage.out_channels), stage.expand_ratio,
                           stage.kernel_size, i == 0 ? stage.stride : 1,
                           stochastic_depth_prob * block_index / total_blocks, norm));
      }
      features->push_back(blocks);
    }
    const int64_t last_conv_in = channels(scaling.stages.back().out_channels);
    const int64_t last_conv_out =
        scaling.last_channels > 0 ? scaling.last_channels : 4 * last_conv_in;
    features->push_back(
        ConvNormActivation(last_conv_in, last_conv_out, 1, 1, 1, /*silu=*/true, norm));
    features_ = register_module("features", features);
    // torchvision's `avgpool` has no state and is applied in forward().
    classifier_ = register_module(
        "classifier", torch::nn::Sequential(torch::nn::Dropout(torch::nn::DropoutOptions(dropout)),
                                            torch::nn::Linear(last_conv_out, num_classes)));
    InitialiseLikeTorchvision();
  }

  torch::Tensor forward(const torch::Tensor& images) override {
    torch::Tensor x = features_->forward(images);
    x = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
    return classifier_->forward(x);
  }

 private:
  // LibTorch's BatchNorm2d already starts at weight 1, bias 0, as
  // torchvision sets it.
  void InitialiseLikeTorchvision() {
    for (const auto& module : modules(/*include_self=*/false)) {
      if (auto* conv = module->as<torch::nn::Conv2d>()) {
        torch::nn::init::kaiming_normal_(conv->weight, /*a=*/0, torch::kFanOut);
        if (conv->bias.defined()) torch::nn::init::zeros_(conv->bias);
      } else if (auto* linear = module->as<torch::nn::Linear>()) {
        const double range = 1.0 / std::sqrt(static_cast<double>(linear->options.out_features()));
        torch::nn::init::uniform_(linear->weight, -range, range);
        torch::nn::init::zeros_(linear->bias);
      }
    }
  }

  torch::nn::Sequential features_{nullptr};
  torch::nn::Sequential classifier_{nullptr};
};

absl::Status ValidateEfficientNetOptions(const EfficientNetOptions& options) {
  if (FindScaling(options.variant()) == nullptr) {
    std::vector<std::string> variants;
    for (const Scaling& scaling : kScalings) {
      variants.push_back(EfficientNetOptions::Variant_Name(scaling.variant));
    }
    return absl::InvalidArgumentError(absl::StrCat("variant: ", options.variant(),
                                                   " is not an EfficientNet variant; choose ",
                                                   absl::StrJoin(variants, ", ")));
  }
  RETURN_IF_ERROR(ValidateDropout(options.dropout()));
  if (!(options.stochastic_depth_prob() >= 0 && options.stochastic_depth_prob() <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("stochastic_depth_prob: ", options.stochastic_depth_prob(),
                     " is not a probability; choose a value from 0 to 1"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Model>> CreateEfficientNet(const EfficientNetOptions& options,
                                                          const ModelContext& context) {
  const Scaling& scaling = *FindScaling(options.variant());
  return std::make_unique<EfficientNet>(scaling, context.num_classes, context.input_channels,
                                        options.has_dropout() ? options.dropout() : scaling.dropout,
                                        options.stochastic_depth_prob());
}

PIPELINE_REGISTER_PLUGIN(Model, "efficientnet", EfficientNetOptions,
                         "EfficientNet-B0..B7 and EfficientNetV2-S/M/L with torchvision's "
                         "state_dict keys and init",
                         CreateEfficientNet, ValidateEfficientNetOptions);

}  // namespace
}  // namespace pipeline
