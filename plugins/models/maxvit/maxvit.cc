// model `maxvit`: torchvision's MaxViT (maxvit_t): a two-conv stem, then
// blocks of MaxVit layers, each an MBConv (with squeeze-and-excitation)
// followed by attention within 7x7 windows and attention across a 7x7 grid,
// then a pooled LayerNorm / Linear / tanh / Linear head. Submodules carry
// torchvision's attribute names and registration order, and the
// parameter-free layers torchvision keeps in its Sequentials hold their
// index here too, so named_parameters() and named_buffers() give exactly
// the keys and shapes of torchvision's state_dict() and checkpoints can be
// exchanged with torchvision.models.maxvit_t; the test checks this against
// fixtures written by tools/fixtures/torchvision_state_dict_keys.py, and
// checks the logits against torchvision's for the same weights.
// Initialisation is torchvision's too.
//
// Layer-wise learning-rate decay (num_layers, layer_id) follows timm's
// MaxxVit: the stem is layer 0, each block (timm's stage) its own layer, the
// head the last.
//
//   model {
//     name: "maxvit"
//     options {
//       [type.googleapis.com/pipeline.MaxVitOptions] { stochastic_depth_prob: 0.1 }
//     }
//   }

#include <array>
#include <cstdint>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "c10/util/Exception.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/layers/batch_norm.h"
#include "plugins/models/common/layer_norm.h"
#include "plugins/models/common/mobile_blocks.h"
#include "plugins/models/common/stochastic_depth.h"
#include "plugins/models/maxvit/maxvit.pb.h"
#include "plugins/models/maxvit/partition_attention.h"
#include "torch/nn/init.h"
#include "torch/nn/modules/container/modulelist.h"
#include "torch/nn/modules/container/sequential.h"
#include "torch/nn/modules/conv.h"
#include "torch/nn/modules/linear.h"
#include "torch/nn/modules/normalization.h"
#include "torch/nn/modules/pooling.h"

namespace pipeline {
namespace {

// torchvision's maxvit_t.
constexpr int64_t kStemChannels = 64;
constexpr std::array<int64_t, 4> kBlockChannels = {64, 128, 256, 512};
constexpr std::array<int64_t, 4> kBlockLayers = {2, 2, 5, 2};
constexpr int64_t kHeadDim = 32;
constexpr int64_t kPartitionSize = 7;
constexpr int64_t kExpansionRatio = 4;
constexpr double kSqueezeRatio = 0.25;
constexpr int64_t kMlpRatio = 4;

// The size a 3x3, stride-2, padding-1 conv gives: the stem's first conv
// and each block's first MBConv.
int64_t HalvedSize(int64_t size) { return (size - 1) / 2 + 1; }

// torchvision's norm_layer for maxvit: BatchNorm2d(eps=1e-3, momentum=0.99).
BatchNorm2d Norm(int64_t channels) {
  return BatchNorm2d(torch::nn::BatchNormOptions(channels).eps(1e-3).momentum(0.99));
}

torch::nn::Conv2d Conv(int64_t in_channels, int64_t out_channels, int64_t kernel_size,
                       int64_t stride, int64_t groups, bool bias) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in_channels, out_channels, kernel_size)
                               .stride(stride)
                               .padding((kernel_size - 1) / 2)
                               .groups(groups)
                               .bias(bias));
}

// Conv2dNormActivation with BatchNorm and GELU: conv "0", norm "1" (the
// GELU, "2", has no state).
class ConvNormGeluImpl : public torch::nn::Module {
 public:
  ConvNormGeluImpl(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride,
                   int64_t groups = 1) {
    conv_ = register_module("0", Conv(in_channels, out_channels, kernel_size, stride, groups,
                                      /*bias=*/false));
    norm_ = register_module("1", Norm(out_channels));
  }

  torch::Tensor forward(const torch::Tensor& x) { return torch::gelu(norm_(conv_(x))); }

 private:
  torch::nn::Conv2d conv_{nullptr};
  BatchNorm2d norm_{nullptr};
};
TORCH_MODULE(ConvNormGelu);

// The MBConv's `layers`: pre_norm, conv_a (1x1 expansion), conv_b (3x3
// depthwise, carrying the stride), squeeze_excitation, conv_c (1x1
// projection).
class MBConvLayersImpl : public torch::nn::Module {
 public:
  MBConvLayersImpl(int64_t in_channels, int64_t out_channels, int64_t stride) {
    const int64_t mid = out_channels * kExpansionRatio;
    pre_norm_ = register_module("pre_norm", Norm(in_channels));
    conv_a_ = register_module("conv_a", ConvNormGelu(in_channels, mid, 1, 1));
    conv_b_ = register_module("conv_b", ConvNormGelu(mid, mid, 3, stride, /*groups=*/mid));
    squeeze_excitation_ = register_module(
        "squeeze_excitation",
        SqueezeExcitation(mid, static_cast<int64_t>(out_channels * kSqueezeRatio),
                          SqueezeActivation::kSiLU));
    conv_c_ = register_module("conv_c", Conv(mid, out_channels, 1, 1, 1, /*bias=*/true));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    return conv_c_(squeeze_excitation_(conv_b_(conv_a_(pre_norm_(x)))));
  }

 private:
  BatchNorm2d pre_norm_{nullptr};
  ConvNormGelu conv_a_{nullptr}, conv_b_{nullptr};
  SqueezeExcitation squeeze_excitation_{nullptr};
  torch::nn::Conv2d conv_c_{nullptr};
};
TORCH_MODULE(MBConvLayers);

// torchvision's maxvit MBConv: `layers` plus a shortcut `proj` (average
// pool "0" where strided, 1x1 conv "1"; just the conv "0" where only the
// width changes) when the shape changes; the branch is dropped by
// stochastic depth in training.
class MBConvImpl : public torch::nn::Module {
 public:
  MBConvImpl(int64_t in_channels, int64_t out_channels, int64_t stride,
             double stochastic_depth_prob)
      : stochastic_depth_prob_(stochastic_depth_prob) {
    if (stride != 1 || in_channels != out_channels) {
      proj_ = torch::nn::Sequential();
      if (stride == 2) {
        proj_->push_back(torch::nn::AvgPool2d(
            torch::nn::AvgPool2dOptions(3).stride(stride).padding(1)));
      }
      proj_->push_back(Conv(in_channels, out_channels, 1, 1, 1, /*bias=*/true));
      register_module("proj", proj_);
    }
    layers_ = register_module("layers", MBConvLayers(in_channels, out_channels, stride));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    const torch::Tensor shortcut = proj_ ? proj_->forward(x) : x;
    return shortcut + StochasticDepth(layers_(x), stochastic_depth_prob_, is_training());
  }

 private:
  double stochastic_depth_prob_;
  torch::nn::Sequential proj_{nullptr};
  MBConvLayers layers_{nullptr};
};
TORCH_MODULE(MBConv);

// MaxVitLayer's `layers`: MBconv, window_attention, grid_attention.
class MaxVitLayerImpl : public torch::nn::Module {
 public:
  MaxVitLayerImpl(int64_t in_channels, int64_t out_channels, int64_t stride,
                  double stochastic_depth_prob) {
    auto layers = register_module("layers", std::make_shared<torch::nn::Module>());
    mbconv_ = layers->register_module(
        "MBconv", MBConv(in_channels, out_channels, stride, stochastic_depth_prob));
    window_attention_ = layers->register_module(
        "window_attention", PartitionAttention(out_channels, kHeadDim, kPartitionSize,
                                               Partition::kWindow, kMlpRatio,
                                               stochastic_depth_prob));
    grid_attention_ = layers->register_module(
        "grid_attention", PartitionAttention(out_channels, kHeadDim, kPartitionSize,
                                             Partition::kGrid, kMlpRatio, stochastic_depth_prob));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    return grid_attention_(window_attention_(mbconv_(x)));
  }

 private:
  MBConv mbconv_{nullptr};
  PartitionAttention window_attention_{nullptr}, grid_attention_{nullptr};
};
TORCH_MODULE(MaxVitLayer);

// MaxVitBlock: `layers`, the first of which halves the map and changes the
// width.
class MaxVitBlockImpl : public torch::nn::Module {
 public:
  MaxVitBlockImpl(int64_t in_channels, int64_t out_channels,
                  const std::vector<double>& stochastic_depth_probs) {
    layers_ = register_module("layers", torch::nn::ModuleList());
    for (size_t i = 0; i < stochastic_depth_probs.size(); ++i) {
      layers_->push_back(MaxVitLayer(i == 0 ? in_channels : out_channels, out_channels,
                                     /*stride=*/i == 0 ? 2 : 1, stochastic_depth_probs[i]));
    }
  }

  torch::Tensor forward(torch::Tensor x) {
    for (const auto& layer : *layers_) x = layer->as<MaxVitLayerImpl>()->forward(x);
    return x;
  }

 private:
  torch::nn::ModuleList layers_{nullptr};
};
TORCH_MODULE(MaxVitBlock);

// stem: a strided 3x3 conv with BatchNorm and GELU ("0"), then a plain 3x3
// conv with a bias ("1.0").
class StemImpl : public torch::nn::Module {
 public:
  explicit StemImpl(int64_t in_channels) {
    first_ = register_module("0", ConvNormGelu(in_channels, kStemChannels, 3, /*stride=*/2));
    second_ = register_module(
        "1", torch::nn::Sequential(Conv(kStemChannels, kStemChannels, 3, 1, 1, /*bias=*/true)));
  }

  torch::Tensor forward(const torch::Tensor& x) { return second_->forward(first_(x)); }

 private:
  ConvNormGelu first_{nullptr};
  torch::nn::Sequential second_{nullptr};
};
TORCH_MODULE(Stem);

// classifier: average pool "0" and flatten "1" (no state), LayerNorm "2",
// Linear "3", tanh "4", the class Linear "5" (no bias).
class ClassifierImpl : public torch::nn::Module {
 public:
  ClassifierImpl(int64_t channels, int64_t num_classes) {
    norm_ = register_module("2", AutocastLayerNorm(torch::nn::LayerNormOptions({channels})));
    pre_logits_ = register_module("3", torch::nn::Linear(channels, channels));
    logits_ = register_module(
        "5", torch::nn::Linear(torch::nn::LinearOptions(channels, num_classes).bias(false)));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    const torch::Tensor pooled = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
    return logits_(torch::tanh(pre_logits_(norm_(pooled))));
  }

 private:
  AutocastLayerNorm norm_{nullptr};
  torch::nn::Linear pre_logits_{nullptr}, logits_{nullptr};
};
TORCH_MODULE(Classifier);

// Each block's attention partitions its map into 7x7 windows and a 7x7
// grid, so every block's map must divide by 7 (and be square, the grid
// being one size for both sides, as in torchvision); otherwise an error
// that says which sizes work, rather than a failed reshape deep inside.
void CheckImageSize(const torch::Tensor& images) {
  TORCH_CHECK(images.dim() == 4, "maxvit takes N x C x H x W images; got ", images.sizes());
  int64_t height = HalvedSize(images.size(2)), width = HalvedSize(images.size(3));
  bool divisible = height == width;
  std::vector<std::string> maps;
  for (size_t block = 0; block < kBlockChannels.size(); ++block) {
    height = HalvedSize(height);
    width = HalvedSize(width);
    divisible = divisible && height % kPartitionSize == 0 && width % kPartitionSize == 0;
    maps.push_back(absl::StrCat(height, "x", width));
  }
  TORCH_CHECK(divisible, "maxvit takes square images whose side is a multiple of 224 (224x224, ",
              "448x448, ...), so that each block's map divides into ", kPartitionSize, "x",
              kPartitionSize, " partitions; ", images.size(2), "x", images.size(3),
              " images give its blocks ", absl::StrJoin(maps, ", "), " maps");
}

class MaxVit : public Model {
 public:
  MaxVit(int64_t num_classes, int64_t in_channels, double stochastic_depth_prob) {
    stem_ = register_module("stem", Stem(in_channels));
    blocks_ = register_module("blocks", torch::nn::ModuleList());
    // Stochastic depth grows linearly over all layers of all blocks, from 0
    // for the first to stochastic_depth_prob for the last.
    const int64_t total_layers =
        std::accumulate(kBlockLayers.begin(), kBlockLayers.end(), int64_t{0});
    int64_t layer_index = 0;
    int64_t in = kStemChannels;
    for (size_t block = 0; block < kBlockChannels.size(); ++block) {
      std::vector<double> probs;
      for (int64_t i = 0; i < kBlockLayers[block]; ++i, ++layer_index) {
        probs.push_back(stochastic_depth_prob * layer_index / (total_layers - 1));
      }
      blocks_->push_back(MaxVitBlock(in, kBlockChannels[block], probs));
      in = kBlockChannels[block];
    }
    classifier_ = register_module("classifier", Classifier(in, num_classes));
    InitialiseLikeTorchvision();
  }

  std::vector<std::string> head_prefixes() const override { return {"classifier.5."}; }

  torch::Tensor forward(const torch::Tensor& images) override {
    CheckImageSize(images);
    torch::Tensor x = stem_(images);
    for (const auto& block : *blocks_) x = block->as<MaxVitBlockImpl>()->forward(x);
    return classifier_(x);
  }

  // The stem, one layer per block, the classifier.
  int num_layers() const override { return static_cast<int>(kBlockChannels.size()) + 2; }

  int layer_id(const std::string& parameter_name) const override {
    const std::vector<absl::string_view> parts = absl::StrSplit(parameter_name, '.');
    if (parts[0] == "stem") return 0;
    int block = 0;
    if (parts.size() > 1 && parts[0] == "blocks" && absl::SimpleAtoi(parts[1], &block)) {
      return block + 1;
    }
    return num_layers() - 1;  // the classifier
  }

 private:
  // torchvision's _init_weights: N(0, 0.02) for every conv and Linear, zero
  // biases; BatchNorm and LayerNorm start at 1 and 0, as LibTorch's do; the
  // attention's bias tables keep their truncated normal.
  void InitialiseLikeTorchvision() {
    for (const auto& module : modules(/*include_self=*/false)) {
      if (auto* conv = module->as<torch::nn::Conv2d>()) {
        torch::nn::init::normal_(conv->weight, 0, 0.02);
        if (conv->bias.defined()) torch::nn::init::zeros_(conv->bias);
      } else if (auto* linear = module->as<torch::nn::Linear>()) {
        torch::nn::init::normal_(linear->weight, 0, 0.02);
        if (linear->bias.defined()) torch::nn::init::zeros_(linear->bias);
      }
    }
  }

  Stem stem_{nullptr};
  torch::nn::ModuleList blocks_{nullptr};
  Classifier classifier_{nullptr};
};

// MAXVIT_T is the enum's only value, so the variant needs no check.
absl::Status ValidateMaxVitOptions(const MaxVitOptions& options) {
  return ValidateStochasticDepthProb(options.stochastic_depth_prob());
}

absl::StatusOr<std::unique_ptr<Model>> CreateMaxVit(const MaxVitOptions& options,
                                                    const ModelContext& context) {
  return std::make_unique<MaxVit>(context.num_classes, context.input_channels,
                                  options.stochastic_depth_prob());
}

PIPELINE_REGISTER_PLUGIN(Model, "maxvit", MaxVitOptions,
                         "MaxViT-T with torchvision's state_dict keys and init", CreateMaxVit,
                         ValidateMaxVitOptions);
PIPELINE_PLUGIN_TRAITS(Model, "maxvit", ModelTraits{.has_depth_order = true});

}  // namespace
}  // namespace pipeline
