// model `shufflenet_v2`: torchvision's ShuffleNetV2 (blocks that split the
// channels, convolve one half and shuffle the halves together again).
// Submodules carry torchvision's attribute names and registration order, and
// the parameter-free layers torchvision keeps in its Sequentials (ReLU)
// hold their index here too, so named_parameters() and named_buffers() give
// exactly the keys and shapes of torchvision's state_dict() and checkpoints
// can be exchanged with torchvision.models.shufflenet_v2_x<width>; the test
// checks this against fixtures written by
// tools/fixtures/torchvision_state_dict_keys.py, and checks the logits
// against torchvision's for the same weights. torchvision sets no
// initialisation of its own for ShuffleNetV2: the layers keep torch's
// defaults, which LibTorch's layers share.
//
//   model {
//     name: "shufflenet_v2"
//     options { [type.googleapis.com/pipeline.ShuffleNetV2Options] { variant: X0_5 } }
//   }

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/layers/batch_norm.h"
#include "plugins/models/shufflenet_v2/shufflenet_v2.pb.h"
#include "torch/nn/modules/activation.h"
#include "torch/nn/modules/container/sequential.h"
#include "torch/nn/modules/conv.h"
#include "torch/nn/modules/linear.h"

namespace pipeline {
namespace {

// nn.ReLU(inplace=True), as torchvision builds it: no copy of each activation.
const torch::nn::ReLUOptions kInPlace = torch::nn::ReLUOptions().inplace(true);

// torchvision's stages_repeats and stages_out_channels of one width.
struct Architecture {
  ShuffleNetV2Options::Variant variant;
  int64_t stem_channels;
  int64_t stage_channels[3];
  int64_t last_channels;
};

constexpr int64_t kStageRepeats[] = {4, 8, 4};

constexpr Architecture kArchitectures[] = {
    {ShuffleNetV2Options::X0_5, 24, {48, 96, 192}, 1024},
    {ShuffleNetV2Options::X1_0, 24, {116, 232, 464}, 1024},
    {ShuffleNetV2Options::X1_5, 24, {176, 352, 704}, 1024},
    {ShuffleNetV2Options::X2_0, 24, {244, 488, 976}, 2048},
};

const Architecture* FindArchitecture(ShuffleNetV2Options::Variant variant) {
  for (const Architecture& architecture : kArchitectures) {
    if (architecture.variant == variant) return &architecture;
  }
  return nullptr;
}

torch::nn::Conv2d Conv(int64_t in_channels, int64_t out_channels, int64_t kernel_size,
                       int64_t stride = 1, int64_t padding = 0, int64_t groups = 1) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in_channels, out_channels, kernel_size)
                               .stride(stride)
                               .padding(padding)
                               .groups(groups)
                               .bias(false));
}

// Interleaves the channels of `groups` groups: channel j of group g moves
// to position j * groups + g, so the next block's halves mix both.
torch::Tensor ChannelShuffle(const torch::Tensor& x, int64_t groups) {
  const int64_t n = x.size(0), channels = x.size(1), height = x.size(2), width = x.size(3);
  return x.view({n, groups, channels / groups, height, width})
      .transpose(1, 2)
      .contiguous()
      .view({n, -1, height, width});
}

// torchvision's InvertedResidual. At stride 1 the input's first half passes
// unchanged and branch2 convolves the second; at stride 2 branch1 and
// branch2 both see the whole input and halve its size. (At stride 1
// torchvision's branch1 is an empty Sequential, with no state.)
class InvertedResidualImpl : public torch::nn::Module {
 public:
  InvertedResidualImpl(int64_t in_channels, int64_t out_channels, int64_t stride)
      : stride_(stride) {
    const int64_t branch_channels = out_channels / 2;
    if (stride > 1) {
      branch1_ = register_module(
          "branch1",
          torch::nn::Sequential(Conv(in_channels, in_channels, 3, stride, 1, in_channels),
                                BatchNorm2d(in_channels), Conv(in_channels, branch_channels, 1),
                                BatchNorm2d(branch_channels), torch::nn::ReLU(kInPlace)));
    }
    branch2_ = register_module(
        "branch2", torch::nn::Sequential(
                       Conv(stride > 1 ? in_channels : branch_channels, branch_channels, 1),
                       BatchNorm2d(branch_channels), torch::nn::ReLU(kInPlace),
                       Conv(branch_channels, branch_channels, 3, stride, 1, branch_channels),
                       BatchNorm2d(branch_channels), Conv(branch_channels, branch_channels, 1),
                       BatchNorm2d(branch_channels), torch::nn::ReLU(kInPlace)));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor out;
    if (stride_ == 1) {
      const std::vector<torch::Tensor> halves = x.chunk(2, 1);
      out = torch::cat({halves[0], branch2_->forward(halves[1])}, 1);
    } else {
      out = torch::cat({branch1_->forward(x), branch2_->forward(x)}, 1);
    }
    return ChannelShuffle(out, 2);
  }

 private:
  int64_t stride_;
  torch::nn::Sequential branch1_{nullptr};
  torch::nn::Sequential branch2_{nullptr};
};
TORCH_MODULE(InvertedResidual);

class ShuffleNetV2 : public Model {
 public:
  ShuffleNetV2(const Architecture& architecture, int64_t num_classes, int64_t in_channels) {
    conv1_ = register_module(
        "conv1",
        torch::nn::Sequential(Conv(in_channels, architecture.stem_channels, 3, 2, 1),
                              BatchNorm2d(architecture.stem_channels), torch::nn::ReLU(kInPlace)));
    // torchvision's `maxpool` has no state and is applied in forward().
    int64_t channels = architecture.stem_channels;
    for (int stage = 0; stage < 3; ++stage) {
      const int64_t out_channels = architecture.stage_channels[stage];
      torch::nn::Sequential blocks;
      for (int64_t i = 0; i < kStageRepeats[stage]; ++i) {
        blocks->push_back(i == 0 ? InvertedResidual(channels, out_channels, 2)
                                 : InvertedResidual(out_channels, out_channels, 1));
      }
      stages_.push_back(register_module(absl::StrCat("stage", stage + 2), blocks));
      channels = out_channels;
    }
    conv5_ = register_module(
        "conv5",
        torch::nn::Sequential(Conv(channels, architecture.last_channels, 1),
                              BatchNorm2d(architecture.last_channels), torch::nn::ReLU(kInPlace)));
    fc_ = register_module("fc", torch::nn::Linear(architecture.last_channels, num_classes));
  }

  torch::Tensor forward(const torch::Tensor& images) override {
    torch::Tensor x = conv1_->forward(images);
    x = torch::max_pool2d(x, /*kernel_size=*/{3, 3}, /*stride=*/{2, 2}, /*padding=*/{1, 1});
    for (torch::nn::Sequential& stage : stages_) x = stage->forward(x);
    x = conv5_->forward(x).mean({2, 3});
    return fc_->forward(x);
  }

  std::vector<std::string> head_prefixes() const override { return {"fc."}; }

 private:
  torch::nn::Sequential conv1_{nullptr};
  std::vector<torch::nn::Sequential> stages_;
  torch::nn::Sequential conv5_{nullptr};
  torch::nn::Linear fc_{nullptr};
};

absl::Status ValidateShuffleNetV2Options(const ShuffleNetV2Options& options) {
  if (FindArchitecture(options.variant()) != nullptr) return absl::OkStatus();
  std::vector<std::string> variants;
  for (const Architecture& architecture : kArchitectures) {
    variants.push_back(ShuffleNetV2Options::Variant_Name(architecture.variant));
  }
  return absl::InvalidArgumentError(absl::StrCat("variant: ", options.variant(),
                                                 " is not a ShuffleNetV2 width; choose one of ",
                                                 absl::StrJoin(variants, ", ")));
}

absl::StatusOr<std::unique_ptr<Model>> CreateShuffleNetV2(const ShuffleNetV2Options& options,
                                                          const ModelContext& context) {
  return std::make_unique<ShuffleNetV2>(*FindArchitecture(options.variant()), context.num_classes,
                                        context.input_channels);
}

PIPELINE_REGISTER_PLUGIN(Model, "shufflenet_v2", ShuffleNetV2Options,
                         "ShuffleNetV2 (x0.5 to x2.0) with torchvision's state_dict keys",
                         CreateShuffleNetV2, ValidateShuffleNetV2Options);

}  // namespace
}  // namespace pipeline
