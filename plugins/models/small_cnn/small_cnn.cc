// model `small_cnn`: a few conv-BN-ReLU-maxpool stages, global average
// pooling and a linear head; small enough to train a few steps on 28x28
// images in a fraction of a second, for tests and tiny data sets. Keys are
// stages.<i>.{conv,bn} and fc (see small_cnn.proto). Initialisation as
// torchvision's ResNet: convolutions Kaiming-normal (fan_out, ReLU),
// BatchNorm weight 1 and bias 0, the linear head PyTorch's default.
//
//   model {
//     name: "small_cnn"
//     options { [type.googleapis.com/pipeline.SmallCnnOptions] { width: 16 stages: 2 } }
//   }

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "pipeline/layers/batch_norm.h"
#include "pipeline/interfaces/model.h"
#include "plugins/models/small_cnn/small_cnn.pb.h"
#include "torch/nn/init.h"
#include "torch/nn/modules/batchnorm.h"
#include "torch/nn/modules/container/sequential.h"
#include "torch/nn/modules/conv.h"
#include "torch/nn/modules/linear.h"

namespace pipeline {
namespace {

constexpr int kMaxWidth = 1024;
constexpr int kMaxStages = 6;

class StageImpl : public torch::nn::Module {
 public:
  StageImpl(int64_t in_channels, int64_t out_channels, bool batch_norm) {
    // With a BatchNorm after it the convolution needs no bias of its own.
    conv_ = register_module(
        "conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(in_channels, out_channels, 3)
                                      .padding(1)
                                      .bias(!batch_norm)));
    torch::nn::init::kaiming_normal_(conv_->weight, /*a=*/0, torch::kFanOut, torch::kReLU);
    if (!batch_norm) torch::nn::init::zeros_(conv_->bias);
    // LibTorch's BatchNorm2d already starts at weight 1, bias 0.
    if (batch_norm) bn_ = register_module("bn", BatchNorm2d(out_channels));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = conv_(x);
    if (bn_) y = bn_(y);
    // ceil_mode: odd sizes round up, and a 1x1 map stays 1x1 instead of
    // vanishing, so any number of stages suits any input size.
    return torch::max_pool2d(y.relu_(), /*kernel_size=*/{2, 2}, /*stride=*/{2, 2},
                             /*padding=*/{0, 0}, /*dilation=*/{1, 1}, /*ceil_mode=*/true);
  }

 private:
  torch::nn::Conv2d conv_{nullptr};
  BatchNorm2d bn_{nullptr};
};
TORCH_MODULE(Stage);

class SmallCnn : public Model {
 public:
  std::vector<std::string> head_prefixes() const override { return {"fc."}; }

  SmallCnn(int64_t num_classes, int64_t in_channels, int64_t width, int stages,
           bool batch_norm) {
    torch::nn::Sequential sequential;
    int64_t channels = in_channels;
    for (int i = 0; i < stages; ++i) {
      const int64_t out_channels = width << i;
      sequential->push_back(Stage(channels, out_channels, batch_norm));
      channels = out_channels;
    }
    stages_ = register_module("stages", sequential);
    fc_ = register_module("fc", torch::nn::Linear(channels, num_classes));
  }

  torch::Tensor forward(const torch::Tensor& images) override {
    torch::Tensor x = stages_->forward(images);
    return fc_(torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1));
  }

 private:
  torch::nn::Sequential stages_{nullptr};
  torch::nn::Linear fc_{nullptr};
};

absl::Status ValidateSmallCnnOptions(const SmallCnnOptions& options) {
  if (options.width() < 1 || options.width() > kMaxWidth) {
    return absl::InvalidArgumentError(
        absl::StrCat("width: ", options.width(), " is not a channel count from 1 to ", kMaxWidth));
  }
  if (options.stages() < 1 || options.stages() > kMaxStages) {
    return absl::InvalidArgumentError(
        absl::StrCat("stages: ", options.stages(), " is not a stage count from 1 to ", kMaxStages));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Model>> CreateSmallCnn(const SmallCnnOptions& options,
                                                      const ModelContext& context) {
  return std::make_unique<SmallCnn>(context.num_classes, context.input_channels, options.width(),
                                    options.stages(), options.batch_norm());
}

PIPELINE_REGISTER_PLUGIN(Model, "small_cnn", SmallCnnOptions,
                         "A tiny conv-BN-ReLU-maxpool CNN for tests and small images",
                         CreateSmallCnn, ValidateSmallCnnOptions);

}  // namespace
}  // namespace pipeline
