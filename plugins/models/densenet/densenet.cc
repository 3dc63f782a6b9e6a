// model `densenet`: torchvision's DenseNet-121/161/169/201 (DenseNet-BC).
// Each layer of a dense block sees the concatenation of the block's input
// and every earlier layer's output, and adds `growth_rate` features of its
// own; a transition between blocks halves the channels (1x1 convolution)
// and the size (2x2 average pool). Submodules carry torchvision's attribute
// names and registration order (features.denseblock1.denselayer1.norm1,
// features.transition1.conv, classifier, ...), so named_parameters() and
// named_buffers() give exactly the keys and shapes of torchvision's
// state_dict() and checkpoints can be exchanged with
// torchvision.models.densenet<N>; the test checks this against fixtures
// written by tools/fixtures/torchvision_state_dict_keys.py, and checks the
// logits against torchvision's for the same weights. Initialisation is
// torchvision's too.
//
//   model {
//     name: "densenet"
//     options {
//       [type.googleapis.com/pipeline.DenseNetOptions] { variant: DENSENET169 drop_rate: 0.1 }
//     }
//   }

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/layers/batch_norm.h"
#include "plugins/models/common/dropout.h"
#include "plugins/models/densenet/densenet.pb.h"
#include "torch/nn/init.h"
#include "torch/nn/modules/activation.h"
#include "torch/nn/modules/container/sequential.h"
#include "torch/nn/modules/conv.h"
#include "torch/nn/modules/linear.h"
#include "torch/nn/modules/pooling.h"

namespace pipeline {
namespace {

// The arguments torchvision's densenet<N>() passes to its DenseNet class.
struct Architecture {
  int64_t growth_rate;                  // features each dense layer adds
  std::array<int64_t, 4> block_layers;  // dense layers per block
  int64_t stem_features;                // torchvision's num_init_features
};

// torchvision's bn_size: a dense layer's 1x1 bottleneck has bn_size x
// growth_rate channels.
constexpr int64_t kBottleneckFactor = 4;

Architecture FindArchitecture(DenseNetOptions::Variant variant) {
  switch (variant) {
    case DenseNetOptions::DENSENET121:
      return {32, {6, 12, 24, 16}, 64};
    case DenseNetOptions::DENSENET161:
      return {48, {6, 12, 36, 24}, 96};
    case DenseNetOptions::DENSENET169:
      return {32, {6, 12, 32, 32}, 64};
    case DenseNetOptions::DENSENET201:
      return {32, {6, 12, 48, 32}, 64};
  }
  // Unreachable: a proto2 enum field holds only the values it declares.
  return FindArchitecture(DenseNetOptions::DENSENET121);
}

// Bias-free like every convolution in torchvision's DenseNet (a BatchNorm
// follows or precedes each).
torch::nn::Conv2d Conv(int64_t in_channels, int64_t out_channels, int64_t kernel_size,
                       int64_t stride) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in_channels, out_channels, kernel_size)
                               .stride(stride)
                               .padding(kernel_size / 2)
                               .bias(false));
}

// torchvision's _DenseLayer: BatchNorm, ReLU, 1x1 convolution to the
// bottleneck, BatchNorm, ReLU, 3x3 convolution to growth_rate features,
// then (in training, where drop_rate > 0) dropout on those. Its ReLUs have
// no state, so they are applied in forward().
class DenseLayerImpl : public torch::nn::Module {
 public:
  DenseLayerImpl(int64_t in_channels, int64_t growth_rate, double drop_rate)
      : drop_rate_(drop_rate) {
    const int64_t bottleneck = kBottleneckFactor * growth_rate;
    norm1_ = register_module("norm1", BatchNorm2d(in_channels));
    conv1_ = register_module("conv1", Conv(in_channels, bottleneck, 1, 1));
    norm2_ = register_module("norm2", BatchNorm2d(bottleneck));
    conv2_ = register_module("conv2", Conv(bottleneck, growth_rate, 3, 1));
  }

  // `features`: the block's input and every earlier layer's output.
  torch::Tensor forward(const std::vector<torch::Tensor>& features) {
    torch::Tensor x = conv1_(norm1_(torch::cat(features, 1)).relu_());
    x = conv2_(norm2_(x).relu_());
    if (drop_rate_ > 0) x = torch::dropout(x, drop_rate_, is_training());
    return x;
  }

 private:
  double drop_rate_;
  BatchNorm2d norm1_{nullptr}, norm2_{nullptr};
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr};
};
TORCH_MODULE(DenseLayer);

// torchvision's _DenseBlock: layers "denselayer1", "denselayer2", ...; its
// output is its input and every layer's output, concatenated.
class DenseBlockImpl : public torch::nn::Module {
 public:
  DenseBlockImpl(int64_t layers, int64_t in_channels, int64_t growth_rate, double drop_rate) {
    for (int64_t i = 0; i < layers; ++i) {
      layers_.push_back(
          register_module(absl::StrCat("denselayer", i + 1),
                          DenseLayer(in_channels + i * growth_rate, growth_rate, drop_rate)));
    }
  }

  torch::Tensor forward(const torch::Tensor& x) {
    std::vector<torch::Tensor> features = {x};
    for (DenseLayer& layer : layers_) features.push_back(layer->forward(features));
    return torch::cat(features, 1);
  }

 private:
  std::vector<DenseLayer> layers_;
};
TORCH_MODULE(DenseBlock);

// torchvision's _Transition (a Sequential of norm, relu, conv and pool):
// BatchNorm, ReLU, a 1x1 convolution to `out_channels` and a 2x2 average
// pool, stride 2. Its own module rather than a Sequential, since a LibTorch
// Sequential cannot hold another; the ReLU and pool have no state and are
// applied in forward().
class TransitionImpl : public torch::nn::Module {
 public:
  TransitionImpl(int64_t in_channels, int64_t out_channels) {
    norm_ = register_module("norm", BatchNorm2d(in_channels));
    conv_ = register_module("conv", Conv(in_channels, out_channels, 1, 1));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    return torch::avg_pool2d(conv_(norm_(x).relu_()), /*kernel_size=*/2, /*stride=*/2);
  }

 private:
  BatchNorm2d norm_{nullptr};
  torch::nn::Conv2d conv_{nullptr};
};
TORCH_MODULE(Transition);

class DenseNet : public Model {
 public:
  std::vector<std::string> head_prefixes() const override { return {"classifier."}; }

  DenseNet(const Architecture& architecture, int64_t num_classes, int64_t in_channels,
           double drop_rate) {
    // torchvision's `features`: a Sequential of named entries. Its
    // parameter-free ReLUs and pools are entries here too, so it runs as a
    // Sequential; they add nothing to the state_dict.
    torch::nn::Sequential features;
    int64_t channels = architecture.stem_features;
    features->push_back("conv0", Conv(in_channels, channels, 7, 2));
    features->push_back("norm0", BatchNorm2d(channels));
    features->push_back("relu0", torch::nn::ReLU(torch::nn::ReLUOptions(/*inplace=*/true)));
    features->push_back("pool0",
                        torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(3).stride(2).padding(1)));
    for (size_t i = 0; i < architecture.block_layers.size(); ++i) {
      const int64_t layers = architecture.block_layers[i];
      features->push_back(absl::StrCat("denseblock", i + 1),
                          DenseBlock(layers, channels, architecture.growth_rate, drop_rate));
      channels += layers * architecture.growth_rate;
      if (i + 1 < architecture.block_layers.size()) {
        features->push_back(absl::StrCat("transition", i + 1), Transition(channels, channels / 2));
        channels /= 2;
      }
    }
    features->push_back("norm5", BatchNorm2d(channels));
    features_ = register_module("features", features);
    classifier_ = register_module("classifier", torch::nn::Linear(channels, num_classes));
    InitialiseLikeTorchvision();
  }

  torch::Tensor forward(const torch::Tensor& images) override {
    torch::Tensor x = features_->forward(images).relu_();
    x = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
    return classifier_(x);
  }

 private:
  // Convolutions: Kaiming normal with torch's defaults (fan_in, gain
  // sqrt(2)); the classifier keeps torch's Linear weights with a zero bias.
  // LibTorch's BatchNorm2d already starts at weight 1, bias 0, as
  // torchvision sets it.
  void InitialiseLikeTorchvision() {
    for (const auto& module : modules(/*include_self=*/false)) {
      if (auto* conv = module->as<torch::nn::Conv2d>()) {
        torch::nn::init::kaiming_normal_(conv->weight);
      }
    }
    torch::nn::init::zeros_(classifier_->bias);
  }

  torch::nn::Sequential features_{nullptr};
  torch::nn::Linear classifier_{nullptr};
};

absl::Status ValidateDenseNetOptions(const DenseNetOptions& options) {
  return ValidateDropout(options.drop_rate(), "drop_rate");
}

absl::StatusOr<std::unique_ptr<Model>> CreateDenseNet(const DenseNetOptions& options,
                                                      const ModelContext& context) {
  return std::make_unique<DenseNet>(FindArchitecture(options.variant()), context.num_classes,
                                    context.input_channels, options.drop_rate());
}

PIPELINE_REGISTER_PLUGIN(Model, "densenet", DenseNetOptions,
                         "DenseNet-121/161/169/201 with torchvision's state_dict keys and init",
                         CreateDenseNet, ValidateDenseNetOptions);

}  // namespace
}  // namespace pipeline
