// model `inception_v3`: torchvision's Inception v3, its auxiliary
// classifier included. Submodules carry torchvision's attribute names and
// registration order, so named_parameters() and named_buffers() give
// exactly the keys and shapes of torchvision's state_dict() and checkpoints
// can be exchanged with torchvision.models.inception_v3 (with or without
// aux_logits); the test checks this against fixtures written by
// tools/fixtures/torchvision_state_dict_keys.py, and checks the logits
// against torchvision's for the same weights. Initialisation is
// torchvision's too (init_weights: truncated normal weights).
//
// torchvision's forward returns the auxiliary logits beside the main ones
// in training; here forward() returns the main logits and
// auxiliary_logits() the others, which training adds to the loss times
// aux_loss_weight (Model::auxiliary_logits).
//
//   model {
//     name: "inception_v3"
//     options {
//       [type.googleapis.com/pipeline.InceptionV3Options] { aux_logits: true aux_loss_weight: 0.4 }
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
#include "plugins/models/inception_v3/inception_v3.pb.h"
#include "torch/nn/modules/conv.h"
#include "torch/nn/modules/linear.h"

namespace pipeline {
namespace {

using ConvOptions = torch::nn::Conv2dOptions;

// A BasicConv2d registered under `name` in `module`.
BasicConv2d AddConv(torch::nn::Module& module, const std::string& name, ConvOptions options) {
  return module.register_module(name, BasicConv2d(options));
}

// The 3x3 average pool, stride 1, of the A, C and E blocks' pool branches.
torch::Tensor PoolBranchInput(const torch::Tensor& x) {
  return torch::avg_pool2d(x, {3, 3}, /*stride=*/{1, 1}, /*padding=*/{1, 1});
}

torch::Tensor MaxPool3x3Stride2(const torch::Tensor& x) {
  return torch::max_pool2d(x, {3, 3}, /*stride=*/{2, 2});
}

// torchvision's InceptionA (Mixed_5b..5d): 1x1, 5x5, double 3x3 and pool
// branches at the 35x35 scale.
class InceptionAImpl : public torch::nn::Module {
 public:
  InceptionAImpl(int64_t in, int64_t pool_features) {
    branch1x1_ = AddConv(*this, "branch1x1", ConvOptions(in, 64, 1));
    branch5x5_1_ = AddConv(*this, "branch5x5_1", ConvOptions(in, 48, 1));
    branch5x5_2_ = AddConv(*this, "branch5x5_2", ConvOptions(48, 64, 5).padding(2));
    branch3x3dbl_1_ = AddConv(*this, "branch3x3dbl_1", ConvOptions(in, 64, 1));
    branch3x3dbl_2_ = AddConv(*this, "branch3x3dbl_2", ConvOptions(64, 96, 3).padding(1));
    branch3x3dbl_3_ = AddConv(*this, "branch3x3dbl_3", ConvOptions(96, 96, 3).padding(1));
    branch_pool_ = AddConv(*this, "branch_pool", ConvOptions(in, pool_features, 1));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    return torch::cat(
        {branch1x1_->forward(x), branch5x5_2_->forward(branch5x5_1_->forward(x)),
         branch3x3dbl_3_->forward(branch3x3dbl_2_->forward(branch3x3dbl_1_->forward(x))),
         branch_pool_->forward(PoolBranchInput(x))},
        1);
  }

 private:
  BasicConv2d branch1x1_{nullptr}, branch5x5_1_{nullptr}, branch5x5_2_{nullptr},
      branch3x3dbl_1_{nullptr}, branch3x3dbl_2_{nullptr}, branch3x3dbl_3_{nullptr},
      branch_pool_{nullptr};
};
TORCH_MODULE(InceptionA);

// torchvision's InceptionB (Mixed_6a): 35x35 down to 17x17.
class InceptionBImpl : public torch::nn::Module {
 public:
  explicit InceptionBImpl(int64_t in) {
    branch3x3_ = AddConv(*this, "branch3x3", ConvOptions(in, 384, 3).stride(2));
    branch3x3dbl_1_ = AddConv(*this, "branch3x3dbl_1", ConvOptions(in, 64, 1));
    branch3x3dbl_2_ = AddConv(*this, "branch3x3dbl_2", ConvOptions(64, 96, 3).padding(1));
    branch3x3dbl_3_ = AddConv(*this, "branch3x3dbl_3", ConvOptions(96, 96, 3).stride(2));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    return torch::cat(
        {branch3x3_->forward(x),
         branch3x3dbl_3_->forward(branch3x3dbl_2_->forward(branch3x3dbl_1_->forward(x))),
         MaxPool3x3Stride2(x)},
        1);
  }

 private:
  BasicConv2d branch3x3_{nullptr}, branch3x3dbl_1_{nullptr}, branch3x3dbl_2_{nullptr},
      branch3x3dbl_3_{nullptr};
};
TORCH_MODULE(InceptionB);

// torchvision's InceptionC (Mixed_6b..6e): factorised 7x7 convolutions at
// the 17x17 scale.
class InceptionCImpl : public torch::nn::Module {
 public:
  InceptionCImpl(int64_t in, int64_t c7) {
    const ConvOptions row = ConvOptions(c7, c7, {1, 7}).padding({0, 3});
    const ConvOptions column = ConvOptions(c7, c7, {7, 1}).padding({3, 0});
    branch1x1_ = AddConv(*this, "branch1x1", ConvOptions(in, 192, 1));
    branch7x7_1_ = AddConv(*this, "branch7x7_1", ConvOptions(in, c7, 1));
    branch7x7_2_ = AddConv(*this, "branch7x7_2", row);
    branch7x7_3_ = AddConv(*this, "branch7x7_3", ConvOptions(c7, 192, {7, 1}).padding({3, 0}));
    branch7x7dbl_1_ = AddConv(*this, "branch7x7dbl_1", ConvOptions(in, c7, 1));
    branch7x7dbl_2_ = AddConv(*this, "branch7x7dbl_2", column);
    branch7x7dbl_3_ = AddConv(*this, "branch7x7dbl_3", row);
    branch7x7dbl_4_ = AddConv(*this, "branch7x7dbl_4", column);
    branch7x7dbl_5_ =
        AddConv(*this, "branch7x7dbl_5", ConvOptions(c7, 192, {1, 7}).padding({0, 3}));
    branch_pool_ = AddConv(*this, "branch_pool", ConvOptions(in, 192, 1));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor branch7x7 =
        branch7x7_3_->forward(branch7x7_2_->forward(branch7x7_1_->forward(x)));
    torch::Tensor branch7x7dbl = branch7x7dbl_1_->forward(x);
    branch7x7dbl = branch7x7dbl_3_->forward(branch7x7dbl_2_->forward(branch7x7dbl));
    branch7x7dbl = branch7x7dbl_5_->forward(branch7x7dbl_4_->forward(branch7x7dbl));
    return torch::cat({branch1x1_->forward(x), branch7x7, branch7x7dbl,
                       branch_pool_->forward(PoolBranchInput(x))},
                      1);
  }

 private:
  BasicConv2d branch1x1_{nullptr}, branch7x7_1_{nullptr}, branch7x7_2_{nullptr},
      branch7x7_3_{nullptr}, branch7x7dbl_1_{nullptr}, branch7x7dbl_2_{nullptr},
      branch7x7dbl_3_{nullptr}, branch7x7dbl_4_{nullptr}, branch7x7dbl_5_{nullptr},
      branch_pool_{nullptr};
};
TORCH_MODULE(InceptionC);

// torchvision's InceptionD (Mixed_7a): 17x17 down to 8x8.
class InceptionDImpl : public torch::nn::Module {
 public:
  explicit InceptionDImpl(int64_t in) {
    branch3x3_1_ = AddConv(*this, "branch3x3_1", ConvOptions(in, 192, 1));
    branch3x3_2_ = AddConv(*this, "branch3x3_2", ConvOptions(192, 320, 3).stride(2));
    branch7x7x3_1_ = AddConv(*this, "branch7x7x3_1", ConvOptions(in, 192, 1));
    branch7x7x3_2_ = AddConv(*this, "branch7x7x3_2", ConvOptions(192, 192, {1, 7}).padding({0, 3}));
    branch7x7x3_3_ = AddConv(*this, "branch7x7x3_3", ConvOptions(192, 192, {7, 1}).padding({3, 0}));
    branch7x7x3_4_ = AddConv(*this, "branch7x7x3_4", ConvOptions(192, 192, 3).stride(2));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor branch7x7x3 = branch7x7x3_2_->forward(branch7x7x3_1_->forward(x));
    branch7x7x3 = branch7x7x3_4_->forward(branch7x7x3_3_->forward(branch7x7x3));
    return torch::cat(
        {branch3x3_2_->forward(branch3x3_1_->forward(x)), branch7x7x3, MaxPool3x3Stride2(x)}, 1);
  }

 private:
  BasicConv2d branch3x3_1_{nullptr}, branch3x3_2_{nullptr}, branch7x7x3_1_{nullptr},
      branch7x7x3_2_{nullptr}, branch7x7x3_3_{nullptr}, branch7x7x3_4_{nullptr};
};
TORCH_MODULE(InceptionD);

// torchvision's InceptionE (Mixed_7b, 7c): expanded filter banks at the 8x8
// scale, the 3x3 branches split into 1x3 and 3x1 side by side.
class InceptionEImpl : public torch::nn::Module {
 public:
  explicit InceptionEImpl(int64_t in) {
    const ConvOptions row = ConvOptions(384, 384, {1, 3}).padding({0, 1});
    const ConvOptions column = ConvOptions(384, 384, {3, 1}).padding({1, 0});
    branch1x1_ = AddConv(*this, "branch1x1", ConvOptions(in, 320, 1));
    branch3x3_1_ = AddConv(*this, "branch3x3_1", ConvOptions(in, 384, 1));
    branch3x3_2a_ = AddConv(*this, "branch3x3_2a", row);
    branch3x3_2b_ = AddConv(*this, "branch3x3_2b", column);
    branch3x3dbl_1_ = AddConv(*this, "branch3x3dbl_1", ConvOptions(in, 448, 1));
    branch3x3dbl_2_ = AddConv(*this, "branch3x3dbl_2", ConvOptions(448, 384, 3).padding(1));
    branch3x3dbl_3a_ = AddConv(*this, "branch3x3dbl_3a", row);
    branch3x3dbl_3b_ = AddConv(*this, "branch3x3dbl_3b", column);
    branch_pool_ = AddConv(*this, "branch_pool", ConvOptions(in, 192, 1));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    const torch::Tensor branch3x3 = branch3x3_1_->forward(x);
    const torch::Tensor branch3x3dbl = branch3x3dbl_2_->forward(branch3x3dbl_1_->forward(x));
    return torch::cat(
        {branch1x1_->forward(x),
         torch::cat({branch3x3_2a_->forward(branch3x3), branch3x3_2b_->forward(branch3x3)}, 1),
         torch::cat(
             {branch3x3dbl_3a_->forward(branch3x3dbl), branch3x3dbl_3b_->forward(branch3x3dbl)}, 1),
         branch_pool_->forward(PoolBranchInput(x))},
        1);
  }

 private:
  BasicConv2d branch1x1_{nullptr}, branch3x3_1_{nullptr}, branch3x3_2a_{nullptr},
      branch3x3_2b_{nullptr}, branch3x3dbl_1_{nullptr}, branch3x3dbl_2_{nullptr},
      branch3x3dbl_3a_{nullptr}, branch3x3dbl_3b_{nullptr}, branch_pool_{nullptr};
};
TORCH_MODULE(InceptionE);

// torchvision's InceptionAux (AuxLogits): a 5x5 average pool, stride 3, a
// 1x1 and a 5x5 conv, then a linear classifier on the pooled features.
class AuxiliaryClassifierImpl : public torch::nn::Module {
 public:
  AuxiliaryClassifierImpl(int64_t in, int64_t num_classes) {
    conv0_ = AddConv(*this, "conv0", ConvOptions(in, 128, 1));
    conv1_ = AddConv(*this, "conv1", ConvOptions(128, 768, 5));
    fc = register_module("fc", torch::nn::Linear(768, num_classes));
  }

  torch::Tensor forward(const torch::Tensor& features) {
    torch::Tensor x = torch::avg_pool2d(features, {5, 5}, /*stride=*/{3, 3});
    x = conv1_->forward(conv0_->forward(x));
    return fc->forward(torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1));
  }

  torch::nn::Linear fc{nullptr};

 private:
  BasicConv2d conv0_{nullptr}, conv1_{nullptr};
};
TORCH_MODULE(AuxiliaryClassifier);

class InceptionV3 : public Model {
 public:
  InceptionV3(const InceptionV3Options& options, int64_t num_classes, int64_t in_channels)
      : options_(options) {
    // torchvision's max pools, average pool and dropout have no state and
    // are applied in forward().
    conv1a_ = AddConv(*this, "Conv2d_1a_3x3", ConvOptions(in_channels, 32, 3).stride(2));
    conv2a_ = AddConv(*this, "Conv2d_2a_3x3", ConvOptions(32, 32, 3));
    conv2b_ = AddConv(*this, "Conv2d_2b_3x3", ConvOptions(32, 64, 3).padding(1));
    conv3b_ = AddConv(*this, "Conv2d_3b_1x1", ConvOptions(64, 80, 1));
    conv4a_ = AddConv(*this, "Conv2d_4a_3x3", ConvOptions(80, 192, 3));
    mixed5b_ = register_module("Mixed_5b", InceptionA(192, 32));
    mixed5c_ = register_module("Mixed_5c", InceptionA(256, 64));
    mixed5d_ = register_module("Mixed_5d", InceptionA(288, 64));
    mixed6a_ = register_module("Mixed_6a", InceptionB(288));
    mixed6b_ = register_module("Mixed_6b", InceptionC(768, 128));
    mixed6c_ = register_module("Mixed_6c", InceptionC(768, 160));
    mixed6d_ = register_module("Mixed_6d", InceptionC(768, 160));
    mixed6e_ = register_module("Mixed_6e", InceptionC(768, 192));
    if (options.aux_logits()) {
      aux_logits_ = register_module("AuxLogits", AuxiliaryClassifier(768, num_classes));
    }
    mixed7a_ = register_module("Mixed_7a", InceptionD(768));
    mixed7b_ = register_module("Mixed_7b", InceptionE(1280));
    mixed7c_ = register_module("Mixed_7c", InceptionE(2048));
    fc_ = register_module("fc", torch::nn::Linear(2048, num_classes));
    InitialiseLikeTorchvision();
  }

  torch::Tensor forward(const torch::Tensor& images) override {
    auxiliary_.clear();
    torch::Tensor x = options_.transform_input() ? TransformInputLikeTorchvision(images) : images;
    x = conv2b_->forward(conv2a_->forward(conv1a_->forward(x)));
    x = MaxPool3x3Stride2(x);
    x = MaxPool3x3Stride2(conv4a_->forward(conv3b_->forward(x)));
    x = mixed5d_->forward(mixed5c_->forward(mixed5b_->forward(x)));
    x = mixed6b_->forward(mixed6a_->forward(x));
    x = mixed6e_->forward(mixed6d_->forward(mixed6c_->forward(x)));
    // torchvision runs its auxiliary classifier in training only.
    torch::Tensor aux;
    if (options_.aux_logits() && is_training()) aux = aux_logits_->forward(x);
    x = mixed7c_->forward(mixed7b_->forward(mixed7a_->forward(x)));
    x = torch::adaptive_avg_pool2d(x, {1, 1});
    x = torch::dropout(x, options_.dropout(), is_training()).flatten(1);
    x = fc_->forward(x);
    if (aux.defined()) auxiliary_ = {{aux, options_.aux_loss_weight()}};
    return x;
  }

  std::vector<AuxiliaryLogits> auxiliary_logits() const override { return auxiliary_; }

  // The auxiliary classifier's last layer follows num_classes too.
  std::vector<std::string> head_prefixes() const override {
    if (!options_.aux_logits()) return {"fc."};
    return {"fc.", "AuxLogits.fc."};
  }

 private:
  // Every conv and linear weight from N(0, 0.1^2) cut to [-2, 2], but
  // AuxLogits.fc's from N(0, 0.001^2): what torchvision's init_weights
  // does. (torchvision also marks AuxLogits.conv1 with stddev 0.01, but on
  // its BasicConv2d, which its loop never reads, so that conv gets 0.1 as
  // well; this follows what torchvision computes.) Linear biases keep
  // torch's default, as torchvision leaves them; LibTorch's BatchNorm2d
  // already starts at weight 1, bias 0.
  void InitialiseLikeTorchvision() {
    for (const auto& module : modules(/*include_self=*/false)) {
      if (auto* conv = module->as<torch::nn::Conv2d>()) {
        TruncNormal(conv->weight, 0.1, -2, 2);
      } else if (auto* linear = module->as<torch::nn::Linear>()) {
        const bool auxiliary = aux_logits_ && linear == aux_logits_->fc.get();
        TruncNormal(linear->weight, auxiliary ? 0.001 : 0.1, -2, 2);
      }
    }
  }

  const InceptionV3Options options_;
  BasicConv2d conv1a_{nullptr}, conv2a_{nullptr}, conv2b_{nullptr}, conv3b_{nullptr},
      conv4a_{nullptr};
  InceptionA mixed5b_{nullptr}, mixed5c_{nullptr}, mixed5d_{nullptr};
  InceptionB mixed6a_{nullptr};
  InceptionC mixed6b_{nullptr}, mixed6c_{nullptr}, mixed6d_{nullptr}, mixed6e_{nullptr};
  AuxiliaryClassifier aux_logits_{nullptr};
  InceptionD mixed7a_{nullptr};
  InceptionE mixed7b_{nullptr}, mixed7c_{nullptr};
  torch::nn::Linear fc_{nullptr};
  // Of the last forward in training mode with aux_logits; empty otherwise.
  std::vector<AuxiliaryLogits> auxiliary_;
};

absl::Status ValidateInceptionV3Options(const InceptionV3Options& options) {
  RETURN_IF_ERROR(ValidateDropout(options.dropout()));
  RETURN_IF_ERROR(ValidateAuxLossWeight(options.aux_loss_weight(),
                                        "0.4 is PyTorch's fine-tuning recipe's"));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Model>> CreateInceptionV3(const InceptionV3Options& options,
                                                         const ModelContext& context) {
  RETURN_IF_ERROR(CheckTransformInputChannels(options.transform_input(), context.input_channels));
  return std::make_unique<InceptionV3>(options, context.num_classes, context.input_channels);
}

PIPELINE_REGISTER_PLUGIN(Model, "inception_v3", InceptionV3Options,
                         "Inception v3 with its auxiliary classifier, torchvision's state_dict "
                         "keys and init",
                         CreateInceptionV3, ValidateInceptionV3Options);

}  // namespace
}  // namespace pipeline
