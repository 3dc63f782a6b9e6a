// model `regnet`: torchvision's RegNetX and RegNetY (ResNet-like bottleneck
// blocks with grouped 3x3 convolutions, squeeze-and-excitation in RegNetY),
// every size torchvision builds. The stage widths and depths follow from
// each constructor's design-space parameters, computed as torchvision's
// BlockParams.from_init_params computes them. Submodules carry torchvision's
// attribute names and registration order (stem, trunk_output.block1.
// block1-0.proj/f, fc), and the parameter-free layers torchvision keeps in its
// Sequentials (activations) hold their index here too, so named_parameters()
// and named_buffers() give exactly the keys and shapes of torchvision's
// state_dict() and checkpoints can be exchanged with
// torchvision.models.regnet_<x|y>_<size>; the test checks this against
// fixtures written by tools/fixtures/torchvision_state_dict_keys.py, and
// checks the logits against torchvision's for the same weights.
// Initialisation is torchvision's too.
//
//   model {
//     name: "regnet"
//     options { [type.googleapis.com/pipeline.RegNetOptions] { variant: REGNET_X_400MF } }
//   }

#include <algorithm>
#include <cmath>
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
#include "plugins/models/common/mobile_blocks.h"
#include "plugins/models/regnet/regnet.pb.h"
#include "torch/nn/init.h"
#include "torch/nn/modules/container/sequential.h"
#include "torch/nn/modules/conv.h"
#include "torch/nn/modules/linear.h"

namespace pipeline {
namespace {

// The arguments one of torchvision's constructors passes to
// BlockParams.from_init_params. Every one leaves the bottleneck multiplier
// at 1, so a block's inner width is its output width.
struct Design {
  RegNetOptions::Variant variant;
  int64_t depth;  // blocks in all
  int64_t w_0;    // the first block's width
  double w_a;     // the slope of the widths' linear ramp
  double w_m;     // the ratio between consecutive stages' widths
  int64_t group_width;
  double se_ratio;  // of the block's input width; 0 without squeeze-and-excitation
};

constexpr Design kDesigns[] = {
    {RegNetOptions::REGNET_Y_400MF, 16, 48, 27.89, 2.09, 8, 0.25},
    {RegNetOptions::REGNET_Y_800MF, 14, 56, 38.84, 2.4, 16, 0.25},
    {RegNetOptions::REGNET_Y_1600MF, 27, 48, 20.71, 2.65, 24, 0.25},
    {RegNetOptions::REGNET_Y_3200MF, 21, 80, 42.63, 2.66, 24, 0.25},
    {RegNetOptions::REGNET_Y_8GF, 17, 192, 76.82, 2.19, 56, 0.25},
    {RegNetOptions::REGNET_Y_16GF, 18, 200, 106.23, 2.48, 112, 0.25},
    {RegNetOptions::REGNET_Y_32GF, 20, 232, 115.89, 2.53, 232, 0.25},
    {RegNetOptions::REGNET_Y_128GF, 27, 456, 160.83, 2.52, 264, 0.25},
    {RegNetOptions::REGNET_X_400MF, 22, 24, 24.48, 2.54, 16, 0},
    {RegNetOptions::REGNET_X_800MF, 16, 56, 35.73, 2.28, 16, 0},
    {RegNetOptions::REGNET_X_1600MF, 18, 80, 34.01, 2.25, 24, 0},
    {RegNetOptions::REGNET_X_3200MF, 25, 88, 26.31, 2.25, 48, 0},
    {RegNetOptions::REGNET_X_8GF, 23, 80, 49.56, 2.88, 120, 0},
    {RegNetOptions::REGNET_X_16GF, 22, 216, 55.59, 2.1, 128, 0},
    {RegNetOptions::REGNET_X_32GF, 23, 320, 69.86, 2.0, 168, 0},
};

const Design* FindDesign(RegNetOptions::Variant variant) {
  for (const Design& design : kDesigns) {
    if (design.variant == variant) return &design;
  }
  return nullptr;
}

// One stage of blocks of the same output width; its first block halves the
// size.
struct Stage {
  int64_t width;
  int64_t depth;
  int64_t group_width;
};

// torchvision's BlockParams.from_init_params: the widths of a linear ramp,
// quantised in log space to powers of w_m and then to multiples of 8; a
// stage is a run of blocks of the same width, which is then made a multiple
// of its group width. The ramp is computed with torch's float32 ops, as
// torchvision computes it, so the roundings agree.
std::vector<Stage> StagesOf(const Design& design) {
  constexpr int64_t kQuantum = 8;
  const torch::Tensor widths_cont = torch::arange(design.depth) * design.w_a + design.w_0;
  const torch::Tensor block_capacity =
      torch::round(torch::log(widths_cont / design.w_0) / std::log(design.w_m));
  const torch::Tensor block_widths =
      (torch::round(torch::pow(design.w_m, block_capacity) * design.w_0 / kQuantum) * kQuantum)
          .to(torch::kInt64);
  std::vector<Stage> stages;
  for (int64_t i = 0; i < design.depth; ++i) {
    const int64_t width = block_widths[i].item<int64_t>();
    if (stages.empty() || stages.back().width != width) {
      stages.push_back({width, 0, design.group_width});
    }
    ++stages.back().depth;
  }
  // _adjust_widths_groups_compatibilty: a group is at most the whole width.
  for (Stage& stage : stages) {
    stage.group_width = std::min(stage.group_width, stage.width);
    stage.width = MakeDivisible(static_cast<double>(stage.width), stage.group_width);
  }
  return stages;
}

// torchvision's Conv2dNormActivation: children "0" (a bias-free conv, padded
// to keep the size at stride 1) and "1" (BatchNorm); its ReLU ("2") has no
// state, so it is applied in forward().
class ConvNormActivationImpl : public torch::nn::Module {
 public:
  ConvNormActivationImpl(int64_t in_channels, int64_t out_channels, int64_t kernel_size,
                         int64_t stride, int64_t groups, bool relu)
      : relu_(relu) {
    conv_ =
        register_module("0", NormedConv(in_channels, out_channels, kernel_size, stride, groups));
    norm_ = register_module("1", BatchNorm2d(out_channels));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = norm_(conv_(x));
    return relu_ ? y.relu_() : y;
  }

 private:
  bool relu_;
  torch::nn::Conv2d conv_{nullptr};
  BatchNorm2d norm_{nullptr};
};
TORCH_MODULE(ConvNormActivation);

// torchvision's ResBottleneckBlock: `f` (BottleneckTransform: 1x1 "a",
// grouped 3x3 "b" carrying the stride, squeeze-and-excitation "se" in
// RegNetY, linear 1x1 "c") added to the input, or to its 1x1 projection
// `proj` where the shape changes, then ReLU. proj is registered first, as
// torchvision assigns it first.
class BlockImpl : public torch::nn::Module {
 public:
  BlockImpl(int64_t width_in, int64_t width_out, int64_t stride, int64_t group_width,
            double se_ratio) {
    if (width_in != width_out || stride != 1) {
      proj_ = register_module("proj", ConvNormActivation(width_in, width_out, 1, stride, 1,
                                                         /*relu=*/false));
    }
    torch::nn::Sequential f;
    f->push_back("a", ConvNormActivation(width_in, width_out, 1, 1, 1, /*relu=*/true));
    f->push_back("b", ConvNormActivation(width_out, width_out, 3, stride,
                                         /*groups=*/width_out / group_width, /*relu=*/true));
    if (se_ratio > 0) {
      // Python's round(), half to even, as std::nearbyint in the default
      // rounding mode.
      const auto squeeze = static_cast<int64_t>(std::nearbyint(se_ratio * width_in));
      f->push_back("se", SqueezeExcitation(width_out, squeeze, SqueezeActivation::kReLU));
    }
    f->push_back("c", ConvNormActivation(width_out, width_out, 1, 1, 1, /*relu=*/false));
    f_ = register_module("f", f);
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor shortcut = proj_ ? proj_(x) : x;
    return (shortcut + f_->forward(x)).relu_();
  }

 private:
  ConvNormActivation proj_{nullptr};
  torch::nn::Sequential f_{nullptr};
};
TORCH_MODULE(Block);

// torchvision's AnyStage, an nn.Sequential whose blocks are named
// "block<stage>-<i>" (a LibTorch Sequential cannot sit in another).
class AnyStageImpl : public torch::nn::Module {
 public:
  AnyStageImpl(int stage_index, int64_t width_in, const Stage& stage, double se_ratio) {
    for (int64_t i = 0; i < stage.depth; ++i) {
      blocks_.push_back(
          register_module(absl::StrCat("block", stage_index, "-", i),
                          Block(i == 0 ? width_in : stage.width, stage.width,
                                /*stride=*/i == 0 ? 2 : 1, stage.group_width, se_ratio)));
    }
  }

  torch::Tensor forward(torch::Tensor x) {
    for (Block& block : blocks_) x = block->forward(x);
    return x;
  }

 private:
  std::vector<Block> blocks_;
};
TORCH_MODULE(AnyStage);

class RegNet : public Model {
 public:
  std::vector<std::string> head_prefixes() const override { return {"fc."}; }

  RegNet(const Design& design, int64_t num_classes, int64_t in_channels) {
    constexpr int64_t kStemWidth = 32;
    stem_ = register_module(
        "stem", ConvNormActivation(in_channels, kStemWidth, 3, /*stride=*/2, 1, /*relu=*/true));
    torch::nn::Sequential trunk_output;
    int64_t width = kStemWidth;
    int stage_index = 0;
    for (const Stage& stage : StagesOf(design)) {
      ++stage_index;
      trunk_output->push_back(absl::StrCat("block", stage_index),
                              AnyStage(stage_index, width, stage, design.se_ratio));
      width = stage.width;
    }
    trunk_output_ = register_module("trunk_output", trunk_output);
    // torchvision's `avgpool` has no state and is applied in forward().
    fc_ = register_module("fc", torch::nn::Linear(width, num_classes));
    InitialiseLikeTorchvision();
  }

  torch::Tensor forward(const torch::Tensor& images) override {
    torch::Tensor x = trunk_output_->forward(stem_(images));
    x = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
    return fc_(x);
  }

 private:
  // ResNet-style: N(0, 2 / fan_out) convolutions (fan_out the output
  // channels times the kernel's area, groups aside), N(0, 0.01) for the
  // classifier and a zero bias. torchvision leaves the squeeze-and-excitation
  // convs' biases at PyTorch's default init, as LibTorch's is; LibTorch's
  // BatchNorm2d already starts at weight 1, bias 0.
  void InitialiseLikeTorchvision() {
    for (const auto& module : modules(/*include_self=*/false)) {
      if (auto* conv = module->as<torch::nn::Conv2d>()) {
        const auto& kernel = conv->options.kernel_size();
        const double fan_out =
            static_cast<double>(kernel->at(0) * kernel->at(1) * conv->options.out_channels());
        torch::nn::init::normal_(conv->weight, 0, std::sqrt(2.0 / fan_out));
      } else if (auto* linear = module->as<torch::nn::Linear>()) {
        torch::nn::init::normal_(linear->weight, 0, 0.01);
        torch::nn::init::zeros_(linear->bias);
      }
    }
  }

  ConvNormActivation stem_{nullptr};
  torch::nn::Sequential trunk_output_{nullptr};
  torch::nn::Linear fc_{nullptr};
};

absl::Status ValidateRegNetOptions(const RegNetOptions& options) {
  if (FindDesign(options.variant()) == nullptr) {
    std::vector<std::string> variants;
    for (const Design& design : kDesigns) {
      variants.push_back(RegNetOptions::Variant_Name(design.variant));
    }
    return absl::InvalidArgumentError(absl::StrCat("variant: ", options.variant(),
                                                   " is not a RegNet variant; choose ",
                                                   absl::StrJoin(variants, ", ")));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Model>> CreateRegNet(const RegNetOptions& options,
                                                    const ModelContext& context) {
  return std::make_unique<RegNet>(*FindDesign(options.variant()), context.num_classes,
                                  context.input_channels);
}

PIPELINE_REGISTER_PLUGIN(Model, "regnet", RegNetOptions,
                         "RegNetX and RegNetY (every torchvision size) with torchvision's "
                         "state_dict keys and init",
                         CreateRegNet, ValidateRegNetOptions);

}  // namespace
}  // namespace pipeline
