// model `vgg`: torchvision's VGG-11/13/16/19, plain or with BatchNorm.
// `features` (3x3 convolutions, each followed by [BatchNorm and] ReLU, and
// 2x2 max pools), `avgpool` (adaptive, to 7x7) and `classifier` (Linear,
// ReLU, Dropout, Linear, ReLU, Dropout, Linear) are Sequentials with the same
// children at the same indices as torchvision's, so the state_dict keys
// (features.0.weight ... classifier.6.bias), order and shapes equal
// torchvision.models.vgg<depth>[_bn]'s; the test checks this against
// fixtures written by tools/fixtures/torchvision_state_dict_keys.py.
// Initialisation is torchvision's: convolutions Kaiming-normal (fan_out,
// ReLU) with zero bias, BatchNorm weight 1 and bias 0, Linear weights
// normal(0, 0.01) with zero bias. Inputs need at least 32x32 pixels.
//
//   model {
//     name: "vgg"
//     options { [type.googleapis.com/pipeline.VggOptions] { depth: 16 batch_norm: true } }
//   }

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/layers/batch_norm.h"
#include "plugins/models/common/dropout.h"
#include "plugins/models/vgg/vgg.pb.h"
#include "torch/nn/init.h"
#include "torch/nn/modules/activation.h"
#include "torch/nn/modules/batchnorm.h"
#include "torch/nn/modules/container/sequential.h"
#include "torch/nn/modules/conv.h"
#include "torch/nn/modules/dropout.h"
#include "torch/nn/modules/linear.h"
#include "torch/nn/modules/pooling.h"

namespace pipeline {
namespace {

// torchvision's cfgs: output channels of each 3x3 convolution, kMaxPool for
// a 2x2 max pool.
constexpr int kMaxPool = 0;

struct Architecture {
  int depth;
  std::vector<int> layers;
};

const std::vector<Architecture>& Architectures() {
  static const auto* architectures = new std::vector<Architecture>{
      {11,
       {64, kMaxPool, 128, kMaxPool, 256, 256, kMaxPool, 512, 512, kMaxPool, 512, 512, kMaxPool}},
      {13,
       {64, 64, kMaxPool, 128, 128, kMaxPool, 256, 256, kMaxPool, 512, 512, kMaxPool, 512, 512,
        kMaxPool}},
      {16,
       {64, 64, kMaxPool, 128, 128, kMaxPool, 256, 256, 256, kMaxPool, 512, 512, 512, kMaxPool, 512,
        512, 512, kMaxPool}},
      {19, {64,  64,  kMaxPool, 128, 128,      kMaxPool, 256, 256, 256, 256,     kMaxPool,
            512, 512, 512,      512, kMaxPool, 512,      512, 512, 512, kMaxPool}},
  };
  return *architectures;
}

const Architecture* FindArchitecture(int depth) {
  for (const Architecture& architecture : Architectures()) {
    if (architecture.depth == depth) return &architecture;
  }
  return nullptr;
}

// The parameter-free ReLUs, pools and Dropouts are registered too (rather
// than applied as functions) because they hold indices in torchvision's
// Sequentials: the parameters after them are numbered accordingly.
torch::nn::ReLU ReLU() { return torch::nn::ReLU(torch::nn::ReLUOptions(/*inplace=*/true)); }

torch::nn::Linear Linear(int64_t in_features, int64_t out_features) {
  torch::nn::Linear linear(in_features, out_features);
  torch::nn::init::normal_(linear->weight, 0, 0.01);
  torch::nn::init::zeros_(linear->bias);
  return linear;
}

torch::nn::Sequential Features(const Architecture& architecture, bool batch_norm,
                               int64_t in_channels) {
  torch::nn::Sequential features;
  for (const int layer : architecture.layers) {
    if (layer == kMaxPool) {
      features->push_back(torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(2).stride(2)));
      continue;
    }
    torch::nn::Conv2d conv(torch::nn::Conv2dOptions(in_channels, layer, 3).padding(1));
    torch::nn::init::kaiming_normal_(conv->weight, /*a=*/0, torch::kFanOut, torch::kReLU);
    torch::nn::init::zeros_(conv->bias);
    features->push_back(conv);
    // LibTorch's BatchNorm2d already starts at weight 1, bias 0.
    if (batch_norm) features->push_back(BatchNorm2d(layer));
    features->push_back(ReLU());
    in_channels = layer;
  }
  return features;
}

class Vgg : public Model {
 public:
  std::vector<std::string> head_prefixes() const override { return {"classifier.6."}; }

  Vgg(const Architecture& architecture, bool batch_norm, int64_t num_classes, int64_t in_channels,
      double dropout) {
    features_ = register_module("features", Features(architecture, batch_norm, in_channels));
    avgpool_ = register_module(
        "avgpool", torch::nn::AdaptiveAvgPool2d(torch::nn::AdaptiveAvgPool2dOptions({7, 7})));
    classifier_ = register_module(
        "classifier",
        torch::nn::Sequential(Linear(512 * 7 * 7, 4096), ReLU(), torch::nn::Dropout(dropout),
                              Linear(4096, 4096), ReLU(), torch::nn::Dropout(dropout),
                              Linear(4096, num_classes)));
  }

  torch::Tensor forward(const torch::Tensor& images) override {
    torch::Tensor x = avgpool_(features_->forward(images)).flatten(1);
    return classifier_->forward(x);
  }

 private:
  torch::nn::Sequential features_{nullptr};
  torch::nn::AdaptiveAvgPool2d avgpool_{nullptr};
  torch::nn::Sequential classifier_{nullptr};
};

absl::Status ValidateVggOptions(const VggOptions& options) {
  if (FindArchitecture(options.depth()) == nullptr) {
    std::vector<int> depths;
    for (const Architecture& architecture : Architectures()) depths.push_back(architecture.depth);
    return absl::InvalidArgumentError(
        absl::StrCat("depth: ", options.depth(), " is not a VGG depth; choose ",
                     absl::StrJoin(depths.begin(), depths.end() - 1, ", "), " or ", depths.back()));
  }
  return ValidateDropout(options.dropout());
}

absl::StatusOr<std::unique_ptr<Model>> CreateVgg(const VggOptions& options,
                                                 const ModelContext& context) {
  return std::make_unique<Vgg>(*FindArchitecture(options.depth()), options.batch_norm(),
                               context.num_classes, context.input_channels, options.dropout());
}

PIPELINE_REGISTER_PLUGIN(Model, "vgg", VggOptions,
                         "VGG-11/13/16/19 (optionally BatchNorm) with torchvision's state_dict "
                         "keys and init (inputs >= 32x32)",
                         CreateVgg, ValidateVggOptions);

}  // namespace
}  // namespace pipeline
