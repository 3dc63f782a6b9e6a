// model `alexnet`: torchvision's AlexNet. `features` (five convolutions with
// ReLUs and three max pools), `avgpool` (adaptive, to 6x6) and `classifier`
// (Dropout, Linear, ReLU, Dropout, Linear, ReLU, Linear) are Sequentials with
// the same children at the same indices as torchvision's, so the state_dict
// keys (features.0.weight ... classifier.6.bias), order and shapes equal
// torchvision.models.alexnet's; the test checks this against a fixture
// written by tools/fixtures/torchvision_state_dict_keys.py. torchvision keeps
// PyTorch's default initialisation for AlexNet, and so does LibTorch.
// Inputs need at least 63x63 pixels.
//
//   model {
//     name: "alexnet"
//     options { [type.googleapis.com/pipeline.AlexNetOptions] { dropout: 0.5 } }
//   }

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "pipeline/interfaces/model.h"
#include "plugins/models/alexnet/alexnet.pb.h"
#include "plugins/models/common/dropout.h"
#include "torch/nn/modules/activation.h"
#include "torch/nn/modules/container/sequential.h"
#include "torch/nn/modules/conv.h"
#include "torch/nn/modules/dropout.h"
#include "torch/nn/modules/linear.h"
#include "torch/nn/modules/pooling.h"

namespace pipeline {
namespace {

// The parameter-free ReLUs, pools and Dropouts are registered too (rather
// than applied as functions) because they hold indices in torchvision's
// Sequentials: the parameters after them are numbered accordingly.
torch::nn::ReLU ReLU() { return torch::nn::ReLU(torch::nn::ReLUOptions(/*inplace=*/true)); }

torch::nn::MaxPool2d MaxPool() {
  return torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(3).stride(2));
}

torch::nn::Conv2d Conv(int64_t in_channels, int64_t out_channels, int64_t kernel_size,
                       int64_t stride, int64_t padding) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in_channels, out_channels, kernel_size)
                               .stride(stride)
                               .padding(padding));
}

class AlexNet : public Model {
 public:
  std::vector<std::string> head_prefixes() const override { return {"classifier.6."}; }

  AlexNet(int64_t num_classes, int64_t in_channels, double dropout) {
    features_ = register_module(
        "features", torch::nn::Sequential(Conv(in_channels, 64, 11, 4, 2), ReLU(), MaxPool(),
                                          Conv(64, 192, 5, 1, 2), ReLU(), MaxPool(),
                                          Conv(192, 384, 3, 1, 1), ReLU(), Conv(384, 256, 3, 1, 1),
                                          ReLU(), Conv(256, 256, 3, 1, 1), ReLU(), MaxPool()));
    avgpool_ = register_module(
        "avgpool", torch::nn::AdaptiveAvgPool2d(torch::nn::AdaptiveAvgPool2dOptions({6, 6})));
    classifier_ = register_module(
        "classifier",
        torch::nn::Sequential(torch::nn::Dropout(dropout), torch::nn::Linear(256 * 6 * 6, 4096),
                              ReLU(), torch::nn::Dropout(dropout), torch::nn::Linear(4096, 4096),
                              ReLU(), torch::nn::Linear(4096, num_classes)));
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

absl::Status ValidateAlexNetOptions(const AlexNetOptions& options) {
  return ValidateDropout(options.dropout());
}

absl::StatusOr<std::unique_ptr<Model>> CreateAlexNet(const AlexNetOptions& options,
                                                     const ModelContext& context) {
  return std::make_unique<AlexNet>(context.num_classes, context.input_channels, options.dropout());
}

PIPELINE_REGISTER_PLUGIN(Model, "alexnet", AlexNetOptions,
                         "AlexNet with torchvision's state_dict keys and init (inputs >= 63x63)",
                         CreateAlexNet, ValidateAlexNetOptions);

}  // namespace
}  // namespace pipeline
