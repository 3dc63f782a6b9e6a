// model `squeezenet`: torchvision's SqueezeNet 1.0 and 1.1: a stem
// convolution, then Fire modules (a 1x1 "squeeze" convolution feeding 1x1
// and 3x3 "expand" convolutions, concatenated) between ceil-mode max-pools,
// and a head without a Linear layer: dropout, a 1x1 convolution to one
// channel per class, ReLU and a global average pool. Submodules carry
// torchvision's attribute names and registration order, and the
// parameter-free layers torchvision keeps in its Sequentials (ReLUs, pools,
// Dropout) hold their index here too, so named_parameters() and
// named_buffers() give exactly the keys and shapes of torchvision's
// state_dict() and checkpoints can be exchanged with
// torchvision.models.squeezenet1_0 and squeezenet1_1; the test checks this
// against fixtures written by tools/fixtures/torchvision_state_dict_keys.py,
// and checks the logits against torchvision's for the same weights.
// Initialisation is torchvision's too.
//
//   model {
//     name: "squeezenet"
//     options {
//       [type.googleapis.com/pipeline.SqueezeNetOptions] { variant: SQUEEZENET1_1 dropout: 0.3 }
//     }
//   }

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pipeline/interfaces/model.h"
#include "plugins/models/common/dropout.h"
#include "plugins/models/squeezenet/squeezenet.pb.h"
#include "torch/nn/init.h"
#include "torch/nn/modules/activation.h"
#include "torch/nn/modules/container/sequential.h"
#include "torch/nn/modules/conv.h"
#include "torch/nn/modules/dropout.h"
#include "torch/nn/modules/pooling.h"

namespace pipeline {
namespace {

// One entry of `features` after the stem convolution and its ReLU and
// max-pool: a Fire module, or (squeeze 0) another max-pool.
struct FeatureLayer {
  int64_t squeeze;  // channels of the squeeze convolution
  int64_t expand;   // channels of each expand convolution; the output has 2x
};

constexpr FeatureLayer kMaxPool = {0, 0};

struct Architecture {
  int64_t stem_channels;
  int64_t stem_kernel_size;  // stride 2, no padding
  std::vector<FeatureLayer> layers;
};

Architecture FindArchitecture(SqueezeNetOptions::Variant variant) {
  switch (variant) {
    case SqueezeNetOptions::SQUEEZENET1_0:
      return {96,
              7,
              {{16, 64}, {16, 64}, {32, 128}, kMaxPool, {32, 128}, {48, 192}, {48, 192},
               {64, 256}, kMaxPool, {64, 256}}};
    case SqueezeNetOptions::SQUEEZENET1_1:
      return {64,
              3,
              {{16, 64}, {16, 64}, kMaxPool, {32, 128}, {32, 128}, kMaxPool, {48, 192}, {48, 192},
               {64, 256}, {64, 256}}};
  }
  // Unreachable: a proto2 enum field holds only the values it declares.
  return FindArchitecture(SqueezeNetOptions::SQUEEZENET1_0);
}

// Every pool of torchvision's SqueezeNet: 3x3, stride 2, rounding the output
// size up, so a window may hang over the edge.
torch::nn::MaxPool2d MaxPool() {
  return torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(3).stride(2).ceil_mode(true));
}

torch::nn::ReLU ReLU() { return torch::nn::ReLU(torch::nn::ReLUOptions(/*inplace=*/true)); }

// torchvision's Fire: the squeeze convolution's ReLU'd output feeds both
// expand convolutions, whose ReLU'd outputs are concatenated. The ReLUs have
// no state, so they are applied in forward().
class FireImpl : public torch::nn::Module {
 public:
  FireImpl(int64_t in_channels, int64_t squeeze, int64_t expand) {
    squeeze_ = register_module("squeeze", torch::nn::Conv2d(in_channels, squeeze, 1));
    expand1x1_ = register_module("expand1x1", torch::nn::Conv2d(squeeze, expand, 1));
    expand3x3_ = register_module(
        "expand3x3", torch::nn::Conv2d(torch::nn::Conv2dOptions(squeeze, expand, 3).padding(1)));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    const torch::Tensor squeezed = squeeze_(x).relu_();
    return torch::cat({expand1x1_(squeezed).relu_(), expand3x3_(squeezed).relu_()}, 1);
  }

 private:
  torch::nn::Conv2d squeeze_{nullptr}, expand1x1_{nullptr}, expand3x3_{nullptr};
};
TORCH_MODULE(Fire);

class SqueezeNet : public Model {
 public:
  std::vector<std::string> head_prefixes() const override { return {"classifier.1."}; }

  SqueezeNet(const Architecture& architecture, int64_t num_classes, int64_t in_channels,
             double dropout) {
    torch::nn::Sequential features;
    features->push_back(
        torch::nn::Conv2d(torch::nn::Conv2dOptions(in_channels, architecture.stem_channels,
                                                   architecture.stem_kernel_size)
                              .stride(2)));
    features->push_back(ReLU());
    features->push_back(MaxPool());
    int64_t channels = architecture.stem_channels;
    for (const FeatureLayer& layer : architecture.layers) {
      if (layer.squeeze == 0) {
        features->push_back(MaxPool());
        continue;
      }
      features->push_back(Fire(channels, layer.squeeze, layer.expand));
      channels = 2 * layer.expand;
    }
    features_ = register_module("features", features);
    final_conv_ = torch::nn::Conv2d(channels, num_classes, 1);
    classifier_ = register_module(
        "classifier",
        torch::nn::Sequential(
            torch::nn::Dropout(torch::nn::DropoutOptions(dropout)), final_conv_, ReLU(),
            torch::nn::AdaptiveAvgPool2d(torch::nn::AdaptiveAvgPool2dOptions({1, 1}))));
    InitialiseLikeTorchvision();
  }

  // Logits are the pooled, ReLU'd class maps: never negative, as in
  // torchvision.
  torch::Tensor forward(const torch::Tensor& images) override {
    return classifier_->forward(features_->forward(images)).flatten(1);
  }

 private:
  // Kaiming uniform with torch's defaults (fan_in, gain sqrt(2)) for every
  // convolution but the final one, which starts small (normal, std 0.01);
  // zero biases.
  void InitialiseLikeTorchvision() {
    for (const auto& module : modules(/*include_self=*/false)) {
      auto* conv = module->as<torch::nn::Conv2d>();
      if (conv == nullptr) continue;
      if (conv == final_conv_.get()) {
        torch::nn::init::normal_(conv->weight, 0.0, 0.01);
      } else {
        torch::nn::init::kaiming_uniform_(conv->weight);
      }
      torch::nn::init::zeros_(conv->bias);
    }
  }

  torch::nn::Sequential features_{nullptr};
  torch::nn::Conv2d final_conv_{nullptr};
  torch::nn::Sequential classifier_{nullptr};
};

absl::Status ValidateSqueezeNetOptions(const SqueezeNetOptions& options) {
  return ValidateDropout(options.dropout());
}

absl::StatusOr<std::unique_ptr<Model>> CreateSqueezeNet(const SqueezeNetOptions& options,
                                                        const ModelContext& context) {
  return std::make_unique<SqueezeNet>(FindArchitecture(options.variant()), context.num_classes,
                                      context.input_channels, options.dropout());
}

PIPELINE_REGISTER_PLUGIN(Model, "squeezenet", SqueezeNetOptions,
                         "SqueezeNet 1.0/1.1 with torchvision's state_dict keys and init",
                         CreateSqueezeNet, ValidateSqueezeNetOptions);

}  // namespace
}  // namespace pipeline
