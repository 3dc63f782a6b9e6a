// model `googlenet`: torchvision's GoogLeNet (Inception v1, with
// BatchNorm), its two auxiliary classifiers included. Submodules carry
// torchvision's attribute names and registration order, so
// named_parameters() and named_buffers() give exactly the keys and shapes of
// torchvision's state_dict() and checkpoints can be exchanged with
// torchvision.models.googlenet (with or without aux_logits); the test
// checks this against fixtures written by
// tools/fixtures/torchvision_state_dict_keys.py, and checks the logits
// against torchvision's for the same weights. Initialisation is
// torchvision's too (init_weights: truncated normal weights).
//
// torchvision's forward returns the auxiliary logits beside the main ones
// in training; here forward() returns the main logits and
// auxiliary_logits() the others, which training adds to the loss, each
// times aux_loss_weight (Model::auxiliary_logits).
//
//   model {
//     name: "googlenet"
//     options {
//       [type.googleapis.com/pipeline.GoogLeNetOptions] { aux_logits: true aux_loss_weight: 0.3 }
//     }
//   }

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/util/status_macros.h"
#include "plugins/models/common/dropout.h"
#include "plugins/models/common/inception_blocks.h"
#include "plugins/models/common/trunc_normal.h"
#include "plugins/models/googlenet/googlenet.pb.h"
#include "torch/nn/modules/container/sequential.h"
#include "torch/nn/modules/conv.h"
#include "torch/nn/modules/linear.h"
#include "torch/nn/modules/pooling.h"

namespace pipeline {
namespace {

using ConvOptions = torch::nn::Conv2dOptions;

// torchvision's Inception block: four branches side by side (1x1; 1x1 then
// 3x3; 1x1 then another 3x3, torchvision's stand-in for the paper's 5x5;
// a 3x3 max pool then 1x1), concatenated along the channels.
class InceptionImpl : public torch::nn::Module {
 public:
  InceptionImpl(int64_t in_channels, int64_t ch1x1, int64_t ch3x3red, int64_t ch3x3,
                int64_t ch5x5red, int64_t ch5x5, int64_t pool_proj) {
    branch1_ = register_module("branch1", BasicConv2d(ConvOptions(in_channels, ch1x1, 1)));
    branch2_ = register_module(
        "branch2", torch::nn::Sequential(BasicConv2d(ConvOptions(in_channels, ch3x3red, 1)),
                                         BasicConv2d(ConvOptions(ch3x3red, ch3x3, 3).padding(1))));
    branch3_ = register_module(
        "branch3", torch::nn::Sequential(BasicConv2d(ConvOptions(in_channels, ch5x5red, 1)),
                                         BasicConv2d(ConvOptions(ch5x5red, ch5x5, 3).padding(1))));
    branch4_ = register_module(
        "branch4", torch::nn::Sequential(
                       torch::nn::MaxPool2d(
                           torch::nn::MaxPool2dOptions(3).stride(1).padding(1).ceil_mode(true)),
                       BasicConv2d(ConvOptions(in_channels, pool_proj, 1))));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    return torch::cat(
        {branch1_->forward(x), branch2_->forward(x), branch3_->forward(x), branch4_->forward(x)},
        1);
  }

 private:
  BasicConv2d branch1_{nullptr};
  torch::nn::Sequential branch2_{nullptr}, branch3_{nullptr}, branch4_{nullptr};
};
TORCH_MODULE(Inception);

// torchvision's InceptionAux for GoogLeNet: pooled to 4x4, a 1x1 conv to
// 128 channels, two linear layers with dropout between.
class AuxiliaryClassifierImpl : public torch::nn::Module {
 public:
  AuxiliaryClassifierImpl(int64_t in_channels, int64_t num_classes, double dropout)
      : dropout_(dropout) {
    conv_ = register_module("conv", BasicConv2d(ConvOptions(in_channels, 128, 1)));
    fc1_ = register_module("fc1", torch::nn::Linear(2048, 1024));
    fc2_ = register_module("fc2", torch::nn::Linear(1024, num_classes));
  }

  torch::Tensor forward(const torch::Tensor& features) {
    torch::Tensor x = conv_->forward(torch::adaptive_avg_pool2d(features, {4, 4})).flatten(1);
    x = fc1_->forward(x).relu_();
    return fc2_->forward(torch::dropout(x, dropout_, is_training()));
  }

 private:
  double dropout_;
  BasicConv2d conv_{nullptr};
  torch::nn::Linear fc1_{nullptr}, fc2_{nullptr};
};
TORCH_MODULE(AuxiliaryClassifier);

torch::Tensor MaxPoolCeil(const torch::Tensor& x, int64_t kernel_size) {
  return torch::max_pool2d(x, {kernel_size, kernel_size}, /*stride=*/{2, 2}, /*padding=*/{0, 0},
                           /*dilation=*/{1, 1}, /*ceil_mode=*/true);
}

class GoogLeNet : public Model {
 public:
  GoogLeNet(const GoogLeNetOptions& options, int64_t num_classes, int64_t in_channels)
      : options_(options) {
    conv1_ =
        register_module("conv1", BasicConv2d(ConvOptions(in_channels, 64, 7).stride(2).padding(3)));
    conv2_ = register_module("conv2", BasicConv2d(ConvOptions(64, 64, 1)));
    conv3_ = register_module("conv3", BasicConv2d(ConvOptions(64, 192, 3).padding(1)));
    // torchvision's max pools have no state and are applied in forward().
    inception3a_ = register_module("inception3a", Inception(192, 64, 96, 128, 16, 32, 32));
    inception3b_ = register_module("inception3b", Inception(256, 128, 128, 192, 32, 96, 64));
    inception4a_ = register_module("inception4a", Inception(480, 192, 96, 208, 16, 48, 64));
    inception4b_ = register_module("inception4b", Inception(512, 160, 112, 224, 24, 64, 64));
    inception4c_ = register_module("inception4c", Inception(512, 128, 128, 256, 24, 64, 64));
    inception4d_ = register_module("inception4d", Inception(512, 112, 144, 288, 32, 64, 64));
    inception4e_ = register_module("inception4e", Inception(528, 256, 160, 320, 32, 128, 128));
    inception5a_ = register_module("inception5a", Inception(832, 256, 160, 320, 32, 128, 128));
    inception5b_ = register_module("inception5b", Inception(832, 384, 192, 384, 48, 128, 128));
    if (options.aux_logits()) {
      aux1_ = register_module("aux1", AuxiliaryClassifier(512, num_classes, options.dropout_aux()));
      aux2_ = register_module("aux2", AuxiliaryClassifier(528, num_classes, options.dropout_aux()));
    }
    fc_ = register_module("fc", torch::nn::Linear(1024, num_classes));
    InitialiseLikeTorchvision();
  }

  torch::Tensor forward(const torch::Tensor& images) override {
    auxiliary_.clear();
    // torchvision runs its auxiliary classifiers in training only.
    const bool auxiliary = options_.aux_logits() && is_training();
    torch::Tensor x = options_.transform_input() ? TransformInputLikeTorchvision(images) : images;
    x = MaxPoolCeil(conv1_->forward(x), 3);
    x = MaxPoolCeil(conv3_->forward(conv2_->forward(x)), 3);
    x = MaxPoolCeil(inception3b_->forward(inception3a_->forward(x)), 3);
    x = inception4a_->forward(x);
    torch::Tensor aux1 = auxiliary ? aux1_->forward(x) : torch::Tensor();
    x = inception4d_->forward(inception4c_->forward(inception4b_->forward(x)));
    torch::Tensor aux2 = auxiliary ? aux2_->forward(x) : torch::Tensor();
    x = MaxPoolCeil(inception4e_->forward(x), 2);
    x = inception5b_->forward(inception5a_->forward(x));
    x = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
    x = fc_->forward(torch::dropout(x, options_.dropout(), is_training()));
    if (auxiliary) {
      auxiliary_ = {{aux1, options_.aux_loss_weight()}, {aux2, options_.aux_loss_weight()}};
    }
    return x;
  }

  std::vector<AuxiliaryLogits> auxiliary_logits() const override { return auxiliary_; }

  // The auxiliary classifiers' last layers follow num_classes too.
  std::vector<std::string> head_prefixes() const override {
    if (!options_.aux_logits()) return {"fc."};
    return {"fc.", "aux1.fc2.", "aux2.fc2."};
  }

 private:
  // Every conv and linear weight from N(0, 0.01) cut to [-2, 2]; linear
  // biases keep torch's default, as torchvision leaves them; LibTorch's
  // BatchNorm2d already starts at weight 1, bias 0.
  void InitialiseLikeTorchvision() {
    for (const auto& module : modules(/*include_self=*/false)) {
      if (auto* conv = module->as<torch::nn::Conv2d>()) {
        TruncNormal(conv->weight, 0.01, -2, 2);
      } else if (auto* linear = module->as<torch::nn::Linear>()) {
        TruncNormal(linear->weight, 0.01, -2, 2);
      }
    }
  }

  const GoogLeNetOptions options_;
  BasicConv2d conv1_{nullptr}, conv2_{nullptr}, conv3_{nullptr};
  Inception inception3a_{nullptr}, inception3b_{nullptr};
  Inception inception4a_{nullptr}, inception4b_{nullptr}, inception4c_{nullptr},
      inception4d_{nullptr}, inception4e_{nullptr};
  Inception inception5a_{nullptr}, inception5b_{nullptr};
  AuxiliaryClassifier aux1_{nullptr}, aux2_{nullptr};
  torch::nn::Linear fc_{nullptr};
  // Of the last forward in training mode with aux_logits; empty otherwise.
  std::vector<AuxiliaryLogits> auxiliary_;
};

absl::Status ValidateGoogLeNetOptions(const GoogLeNetOptions& options) {
  RETURN_IF_ERROR(ValidateDropout(options.dropout()));
  if (!(options.dropout_aux() >= 0 && options.dropout_aux() <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dropout_aux: ", options.dropout_aux(),
        " is not a probability from 0 to 1 (torch.nn.Dropout's range); set 0 to disable "
        "dropout"));
  }
  RETURN_IF_ERROR(
      ValidateAuxLossWeight(options.aux_loss_weight(), "0.3 is the GoogLeNet paper's"));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Model>> CreateGoogLeNet(const GoogLeNetOptions& options,
                                                       const ModelContext& context) {
  RETURN_IF_ERROR(CheckTransformInputChannels(options.transform_input(), context.input_channels));
  return std::make_unique<GoogLeNet>(options, context.num_classes, context.input_channels);
}

PIPELINE_REGISTER_PLUGIN(Model, "googlenet", GoogLeNetOptions,
                         "GoogLeNet with its auxiliary classifiers, torchvision's state_dict "
                         "keys and init",
                         CreateGoogLeNet, ValidateGoogLeNetOptions);

}  // namespace
}  // namespace pipeline
