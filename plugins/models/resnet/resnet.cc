// model `resnet`: torchvision's ResNet-18/34/50/101/152 (v1.5, the stride of
// a Bottleneck on its 3x3 conv), and the ResNeXts and Wide ResNets that
// torchvision builds from the same class with grouped or wider Bottleneck
// 3x3 convolutions (`groups`, `width_per_group`). Submodules carry
// torchvision's attribute names and registration order, so
// named_parameters() and named_buffers() give exactly the keys and shapes of
// torchvision's state_dict() and checkpoints can be exchanged with
// torchvision.models.resnet<depth>, resnext*, wide_resnet*; the test checks
// this against fixtures written by tools/fixtures/torchvision_state_dict_keys.py
// and the logits against torchvision's for the same weights.
// Initialisation is torchvision's too.
//
//   model {
//     name: "resnet"
//     options {
//       # torchvision.models.resnext50_32x4d
//       [type.googleapis.com/pipeline.ResNetOptions] { depth: 50 groups: 32 width_per_group: 4 }
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
#include "absl/strings/str_join.h"
#include "pipeline/layers/batch_norm.h"
#include "pipeline/interfaces/model.h"
#include "plugins/models/resnet/resnet.pb.h"
#include "torch/nn/init.h"
#include "torch/nn/modules/batchnorm.h"
#include "torch/nn/modules/container/sequential.h"
#include "torch/nn/modules/conv.h"
#include "torch/nn/modules/linear.h"

namespace pipeline {
namespace {

struct Architecture {
  int depth;
  bool bottleneck;
  std::array<int64_t, 4> blocks_per_layer;
};

constexpr Architecture kArchitectures[] = {
    {18, false, {2, 2, 2, 2}},
    {34, false, {3, 4, 6, 3}},
    {50, true, {3, 4, 6, 3}},
    {101, true, {3, 4, 23, 3}},
    {152, true, {3, 8, 36, 3}},
};

const Architecture* FindArchitecture(int depth) {
  for (const Architecture& architecture : kArchitectures) {
    if (architecture.depth == depth) return &architecture;
  }
  return nullptr;
}

// The grouping of a Bottleneck's 3x3 convolution: torchvision's `groups`
// and `width_per_group` (its blocks' `base_width`). ResNet's is {1, 64}.
struct Grouping {
  int64_t groups;
  int64_t width_per_group;
};

// Bias-free like every convolution in torchvision's ResNet (a BatchNorm
// follows each), padded to keep the size at stride 1, and initialised as
// torchvision does.
torch::nn::Conv2d Conv(int64_t in_planes, int64_t out_planes, int64_t kernel_size, int64_t stride,
                       int64_t groups = 1) {
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(in_planes, out_planes, kernel_size)
                             .stride(stride)
                             .padding(kernel_size / 2)
                             .groups(groups)
                             .bias(false));
  torch::nn::init::kaiming_normal_(conv->weight, /*a=*/0, torch::kFanOut, torch::kReLU);
  return conv;
}

// LibTorch's BatchNorm2d already starts at weight 1, bias 0 (torchvision's
// init); zero_init_residual instead starts a block's last BatchNorm at weight
// 0, so the block begins as the identity.
BatchNorm2d BatchNorm(int64_t planes, bool zero_weight = false) {
  BatchNorm2d batch_norm(planes);
  if (zero_weight) torch::nn::init::zeros_(batch_norm->weight);
  return batch_norm;
}

// torchvision's `downsample`: a strided 1x1 projection where the shortcut
// changes shape. Where it does not, torchvision's attribute is None, so there
// is no submodule (and no state_dict key) either. Registered last, after the
// block's own layers, as in torchvision.
torch::nn::Sequential RegisterDownsample(torch::nn::Module& block, int64_t in_planes,
                                         int64_t out_planes, int64_t stride) {
  if (stride == 1 && in_planes == out_planes) return nullptr;
  return block.register_module(
      "downsample",
      torch::nn::Sequential(Conv(in_planes, out_planes, 1, stride), BatchNorm(out_planes)));
}

// torchvision's parameter-free `relu`, `maxpool` and `avgpool` submodules add
// nothing to the state_dict, so they are applied as functions here rather
// than registered.

// Takes no Grouping: like torchvision's, it has only ResNet's (checked by
// ValidateResNetOptions).
class BasicBlockImpl : public torch::nn::Module {
 public:
  static constexpr int64_t kExpansion = 1;

  BasicBlockImpl(int64_t in_planes, int64_t planes, int64_t stride, const Grouping& /*grouping*/,
                 bool zero_init_residual) {
    conv1_ = register_module("conv1", Conv(in_planes, planes, 3, stride));
    bn1_ = register_module("bn1", BatchNorm(planes));
    conv2_ = register_module("conv2", Conv(planes, planes, 3, 1));
    bn2_ = register_module("bn2", BatchNorm(planes, zero_init_residual));
    downsample_ = RegisterDownsample(*this, in_planes, planes * kExpansion, stride);
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor out = bn1_(conv1_(x)).relu_();
    out = bn2_(conv2_(out));
    out += downsample_ ? downsample_->forward(x) : x;
    return out.relu_();
  }

 private:
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr};
  BatchNorm2d bn1_{nullptr}, bn2_{nullptr};
  torch::nn::Sequential downsample_{nullptr};
};
TORCH_MODULE(BasicBlock);

class BottleneckImpl : public torch::nn::Module {
 public:
  static constexpr int64_t kExpansion = 4;

  // The 3x3 convolution is `width` channels wide, torchvision's
  // int(planes * width_per_group / 64) * groups: planes for ResNet, wider for
  // Wide ResNet, split into groups for ResNeXt. (planes is 64 << layer, so
  // the division is exact.)
  BottleneckImpl(int64_t in_planes, int64_t planes, int64_t stride, const Grouping& grouping,
                 bool zero_init_residual) {
    const int64_t width = planes * grouping.width_per_group / 64 * grouping.groups;
    conv1_ = register_module("conv1", Conv(in_planes, width, 1, 1));
    bn1_ = register_module("bn1", BatchNorm(width));
    conv2_ = register_module("conv2", Conv(width, width, 3, stride, grouping.groups));
    bn2_ = register_module("bn2", BatchNorm(width));
    conv3_ = register_module("conv3", Conv(width, planes * kExpansion, 1, 1));
    bn3_ = register_module("bn3", BatchNorm(planes * kExpansion, zero_init_residual));
    downsample_ = RegisterDownsample(*this, in_planes, planes * kExpansion, stride);
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor out = bn1_(conv1_(x)).relu_();
    out = bn2_(conv2_(out)).relu_();
    out = bn3_(conv3_(out));
    out += downsample_ ? downsample_->forward(x) : x;
    return out.relu_();
  }

 private:
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr}, conv3_{nullptr};
  BatchNorm2d bn1_{nullptr}, bn2_{nullptr}, bn3_{nullptr};
  torch::nn::Sequential downsample_{nullptr};
};
TORCH_MODULE(Bottleneck);

class ResNet : public Model {
 public:
  std::vector<std::string> head_prefixes() const override { return {"fc."}; }

  ResNet(const Architecture& architecture, const Grouping& grouping, int64_t num_classes,
         int64_t in_channels, bool zero_init_residual, ResNetOptions::Stem stem)
      : max_pool_(stem != ResNetOptions::CIFAR) {
    conv1_ = register_module("conv1", stem == ResNetOptions::IMAGENET
                                          ? Conv(in_channels, 64, 7, 2)
                                          : Conv(in_channels, 64, 3, 1));
    bn1_ = register_module("bn1", BatchNorm(64));
    if (architecture.bottleneck) {
      RegisterLayersAndHead<Bottleneck>(architecture, grouping, num_classes, zero_init_residual);
    } else {
      RegisterLayersAndHead<BasicBlock>(architecture, grouping, num_classes, zero_init_residual);
    }
  }

  torch::Tensor forward(const torch::Tensor& images) override {
    torch::Tensor x = bn1_(conv1_(images)).relu_();
    if (max_pool_) x = torch::max_pool2d(x, /*kernel_size=*/3, /*stride=*/2, /*padding=*/1);
    for (torch::nn::Sequential& layer : layers_) x = layer->forward(x);
    x = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
    return fc_(x);
  }

 private:
  template <typename Block>
  void RegisterLayersAndHead(const Architecture& architecture, const Grouping& grouping,
                             int64_t num_classes, bool zero_init_residual) {
    int64_t in_planes = 64;
    for (int i = 0; i < 4; ++i) {
      const int64_t planes = int64_t{64} << i;
      // Only a layer's first block changes the shape: it halves the size
      // from layer2 on, and RegisterDownsample gives it a matching shortcut.
      torch::nn::Sequential layer;
      for (int64_t block = 0; block < architecture.blocks_per_layer[i]; ++block) {
        const int64_t stride = (i > 0 && block == 0) ? 2 : 1;
        layer->push_back(Block(in_planes, planes, stride, grouping, zero_init_residual));
        in_planes = planes * Block::Impl::kExpansion;
      }
      layers_[i] = register_module(absl::StrCat("layer", i + 1), layer);
    }
    // LibTorch's Linear initialises like PyTorch's, which torchvision keeps.
    fc_ = register_module("fc", torch::nn::Linear(in_planes, num_classes));
  }

  const bool max_pool_;
  torch::nn::Conv2d conv1_{nullptr};
  BatchNorm2d bn1_{nullptr};
  std::array<torch::nn::Sequential, 4> layers_{nullptr, nullptr, nullptr, nullptr};
  torch::nn::Linear fc_{nullptr};
};

// "18, 34, 50, 101 or 152", or only the depths built from Bottlenecks.
std::string JoinDepths(bool only_bottleneck) {
  std::vector<int> depths;
  for (const Architecture& architecture : kArchitectures) {
    if (architecture.bottleneck || !only_bottleneck) depths.push_back(architecture.depth);
  }
  return absl::StrCat(absl::StrJoin(depths.begin(), depths.end() - 1, ", "), " or ", depths.back());
}

absl::Status ValidateResNetOptions(const ResNetOptions& options) {
  const Architecture* architecture = FindArchitecture(options.depth());
  if (architecture == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("depth: ", options.depth(),
                                                   " is not a ResNet depth; choose ",
                                                   JoinDepths(/*only_bottleneck=*/false)));
  }
  if (options.groups() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("groups: ", options.groups(),
                     " is not a number of groups; choose 1 or more (32 or 64 for ResNeXt)"));
  }
  if (options.width_per_group() < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "width_per_group: ", options.width_per_group(),
        " is not a channel count; choose 1 or more (64 for ResNet, 128 for Wide ResNet, 4 or 8 "
        "for ResNeXt)"));
  }
  // torchvision's BasicBlock raises "BasicBlock only supports groups=1 and
  // base_width=64".
  if (!architecture->bottleneck && (options.groups() != 1 || options.width_per_group() != 64)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "groups: ", options.groups(), " and width_per_group: ", options.width_per_group(),
        " need a Bottleneck depth (", JoinDepths(/*only_bottleneck=*/true), "); depth: ",
        options.depth(), " has BasicBlocks, which take only groups: 1 and width_per_group: 64"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Model>> CreateResNet(const ResNetOptions& options,
                                                    const ModelContext& context) {
  return std::make_unique<ResNet>(
      *FindArchitecture(options.depth()), Grouping{options.groups(), options.width_per_group()},
      context.num_classes, context.input_channels, options.zero_init_residual(), options.stem());
}

PIPELINE_REGISTER_PLUGIN(Model, "resnet", ResNetOptions,
                         "ResNet-18/34/50/101/152, ResNeXt and Wide ResNet with torchvision's "
                         "state_dict keys and init",
                         CreateResNet, ValidateResNetOptions);

}  // namespace
}  // namespace pipeline
