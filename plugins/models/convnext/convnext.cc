// model `convnext`: torchvision's ConvNeXt (a 4x4 patchify stem, four
// stages of CNBlocks: depthwise 7x7 conv, LayerNorm, an inverted GELU MLP,
// a learned per-channel layer scale and stochastic depth on the residual
// branch; LayerNorm and a 2x2 strided conv between stages). Submodules
// carry torchvision's attribute names and registration order, and the
// parameter-free layers torchvision keeps in its Sequentials (Permute, GELU,
// Flatten) hold their index here too, so named_parameters() gives exactly
// the keys and shapes of torchvision's state_dict() and checkpoints can be
// exchanged with torchvision.models.convnext_tiny and the others; the test
// checks this against fixtures written by
// tools/fixtures/torchvision_state_dict_keys.py, and checks the logits
// against torchvision's for the same weights. Initialisation is
// torchvision's too.
//
//   model {
//     name: "convnext"
//     options {
//       [type.googleapis.com/pipeline.ConvNeXtOptions] { variant: TINY }
//     }
//   }

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "pipeline/interfaces/model.h"
#include "plugins/models/common/layer_norm.h"
#include "plugins/models/common/stochastic_depth.h"
#include "plugins/models/common/trunc_normal.h"
#include "plugins/models/convnext/convnext.pb.h"
#include "torch/nn/modules/container/any.h"
#include "torch/nn/modules/conv.h"
#include "torch/nn/modules/linear.h"
#include "torch/nn/modules/normalization.h"

namespace pipeline {
namespace {

constexpr int kStages = 4;
constexpr double kNormEps = 1e-6;

// Section 3 of the ConvNeXt paper, as torchvision's CNBlockConfig lists:
// each stage's channels and blocks, and the variant's stochastic depth.
struct Setting {
  ConvNeXtOptions::Variant variant;
  std::array<int64_t, kStages> channels;
  std::array<int64_t, kStages> blocks;
  double stochastic_depth_prob;  // torchvision's default
};

constexpr Setting kSettings[] = {
    {ConvNeXtOptions::TINY, {96, 192, 384, 768}, {3, 3, 9, 3}, 0.1},
    {ConvNeXtOptions::SMALL, {96, 192, 384, 768}, {3, 3, 27, 3}, 0.4},
    {ConvNeXtOptions::BASE, {128, 256, 512, 1024}, {3, 3, 27, 3}, 0.5},
    {ConvNeXtOptions::LARGE, {192, 384, 768, 1536}, {3, 3, 27, 3}, 0.5},
};

const Setting* FindSetting(ConvNeXtOptions::Variant variant) {
  for (const Setting& setting : kSettings) {
    if (setting.variant == variant) return &setting;
  }
  return nullptr;
}

// A CNBlock's residual branch, torchvision's `block` Sequential: depthwise
// conv "0", Permute to NHWC, LayerNorm "2", Linear "3", GELU, Linear "5",
// Permute back. The permutes and GELU have no state and are applied in
// forward().
class BranchImpl : public torch::nn::Module {
 public:
  explicit BranchImpl(int64_t dim) {
    depthwise_ = register_module(
        "0", torch::nn::Conv2d(torch::nn::Conv2dOptions(dim, dim, 7).padding(3).groups(dim)));
    norm_ = register_module(
        "2", AutocastLayerNorm(torch::nn::LayerNormOptions({dim}).eps(kNormEps)));
    expand_ = register_module("3", torch::nn::Linear(dim, 4 * dim));
    project_ = register_module("5", torch::nn::Linear(4 * dim, dim));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = norm_(depthwise_(x).permute({0, 2, 3, 1}));
    return project_(torch::gelu(expand_(y))).permute({0, 3, 1, 2});
  }

 private:
  torch::nn::Conv2d depthwise_{nullptr};
  AutocastLayerNorm norm_{nullptr};
  torch::nn::Linear expand_{nullptr}, project_{nullptr};
};
TORCH_MODULE(Branch);

// torchvision's CNBlock: input + stochastic_depth(layer_scale * block(input)).
class CNBlockImpl : public torch::nn::Module {
 public:
  CNBlockImpl(int64_t dim, double layer_scale, double stochastic_depth_prob)
      : stochastic_depth_prob_(stochastic_depth_prob) {
    block_ = register_module("block", Branch(dim));
    layer_scale_ = register_parameter("layer_scale", torch::full({dim, 1, 1}, layer_scale));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor result = layer_scale_ * block_(x);
    return StochasticDepth(result, stochastic_depth_prob_, is_training()) + x;
  }

 private:
  double stochastic_depth_prob_;
  Branch block_{nullptr};
  torch::Tensor layer_scale_;
};
TORCH_MODULE(CNBlock);

// A torchvision nn.Sequential inside another: LibTorch's Sequential cannot
// be nested (its forward() is a template), so this one holds its modules as
// children "0", "1", ... and applies them in order.
class ChainImpl : public torch::nn::Module {
 public:
  template <typename ModuleType>
  void Add(ModuleType module) {
    modules_.emplace_back(register_module(std::to_string(modules_.size()), module));
  }

  torch::Tensor forward(torch::Tensor x) {
    for (torch::nn::AnyModule& module : modules_) x = module.forward(x);
    return x;
  }

 private:
  std::vector<torch::nn::AnyModule> modules_;
};
TORCH_MODULE(Chain);

// The non-overlapping strided conv of the stem (4x4, stride 4) and of the
// downsampling between stages (2x2, stride 2).
torch::nn::Conv2d Patchify(int64_t in_channels, int64_t out_channels, int64_t size) {
  return torch::nn::Conv2d(
      torch::nn::Conv2dOptions(in_channels, out_channels, size).stride(size));
}

class ConvNeXt : public Model {
 public:
  ConvNeXt(const Setting& setting, int64_t num_classes, int64_t in_channels,
           double stochastic_depth_prob, double layer_scale)
      : blocks_(setting.blocks) {
    const std::array<int64_t, kStages>& channels = setting.channels;
    // The stem: torchvision's Conv2dNormActivation without activation.
    Chain stem;
    stem->Add(Patchify(in_channels, channels[0], 4));
    stem->Add(AutocastLayerNorm2d(channels[0], kNormEps));
    Chain features;
    features->Add(stem);
    int64_t total_blocks = 0;
    for (int64_t blocks : blocks_) total_blocks += blocks;
    // Stochastic depth grows linearly with the block's position in the
    // network, from 0 for the first to stochastic_depth_prob for the last.
    int64_t block_index = 0;
    for (int stage = 0; stage < kStages; ++stage) {
      Chain blocks;
      for (int64_t i = 0; i < blocks_[stage]; ++i, ++block_index) {
        blocks->Add(CNBlock(channels[stage], layer_scale,
                            stochastic_depth_prob * block_index / (total_blocks - 1.0)));
      }
      features->Add(blocks);
      if (stage + 1 < kStages) {
        Chain downsample;
        downsample->Add(AutocastLayerNorm2d(channels[stage], kNormEps));
        downsample->Add(Patchify(channels[stage], channels[stage + 1], 2));
        features->Add(downsample);
      }
    }
    features_ = register_module("features", features);
    // torchvision's `avgpool` has no state and is applied in forward(), as
    // is the classifier's Flatten ("1").
    classifier_ = register_module("classifier", std::make_shared<torch::nn::Module>());
    classifier_norm_ =
        classifier_->register_module("0", AutocastLayerNorm2d(channels[kStages - 1], kNormEps));
    classifier_linear_ =
        classifier_->register_module("2", torch::nn::Linear(channels[kStages - 1], num_classes));
    InitialiseLikeTorchvision();
  }

  std::vector<std::string> head_prefixes() const override { return {"classifier.2."}; }

  torch::Tensor forward(const torch::Tensor& images) override {
    torch::Tensor x = features_(images);
    x = classifier_norm_(torch::adaptive_avg_pool2d(x, {1, 1}));
    return classifier_linear_(x.flatten(1));
  }

  // timm's layer-decay order (param_groups_layer_decay with ConvNeXt's
  // group_matcher): the stem is layer 0, then every block its own layer in
  // network order, a downsampling with the first block of the stage it
  // leads into (timm's stages.<i>.downsample), and the classifier (its norm
  // included) last.
  int num_layers() const override { return static_cast<int>(BlocksBefore(kStages)) + 2; }

  int layer_id(const std::string& parameter_name) const override {
    const std::vector<absl::string_view> parts = absl::StrSplit(parameter_name, '.');
    int feature = 0;
    if (parts.size() < 2 || parts[0] != "features" || !absl::SimpleAtoi(parts[1], &feature)) {
      return num_layers() - 1;
    }
    if (feature == 0) return 0;
    const int stage = feature / 2;  // of a block (feature 2s+1) or of a downsampling (2s)
    int block = 0;
    if (feature % 2 == 1 && parts.size() > 2) absl::SimpleAtoi(parts[2], &block);
    return static_cast<int>(BlocksBefore(stage)) + block + 1;
  }

 private:
  int64_t BlocksBefore(int stage) const {
    int64_t blocks = 0;
    for (int s = 0; s < stage; ++s) blocks += blocks_[s];
    return blocks;
  }

  void InitialiseLikeTorchvision() {
    for (const auto& module : modules(/*include_self=*/false)) {
      torch::Tensor weight, bias;
      if (auto* conv = module->as<torch::nn::Conv2d>()) {
        weight = conv->weight;
        bias = conv->bias;
      } else if (auto* linear = module->as<torch::nn::Linear>()) {
        weight = linear->weight;
        bias = linear->bias;
      } else {
        continue;
      }
      TruncNormal(weight, /*std=*/0.02);
      torch::NoGradGuard no_grad;
      bias.zero_();
    }
  }

  std::array<int64_t, kStages> blocks_;
  Chain features_{nullptr};
  std::shared_ptr<torch::nn::Module> classifier_;
  AutocastLayerNorm2d classifier_norm_{nullptr};
  torch::nn::Linear classifier_linear_{nullptr};
};

absl::Status ValidateConvNeXtOptions(const ConvNeXtOptions& options) {
  if (FindSetting(options.variant()) == nullptr) {
    std::vector<std::string> variants;
    for (const Setting& setting : kSettings) {
      variants.push_back(ConvNeXtOptions::Variant_Name(setting.variant));
    }
    return absl::InvalidArgumentError(absl::StrCat("variant: ", options.variant(),
                                                   " is not a ConvNeXt variant; choose ",
                                                   absl::StrJoin(variants, ", ")));
  }
  if (!(options.stochastic_depth_prob() >= 0 && options.stochastic_depth_prob() <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("stochastic_depth_prob: ", options.stochastic_depth_prob(),
                     " is not a probability; choose a value from 0 to 1"));
  }
  if (!(options.layer_scale() > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("layer_scale: ", options.layer_scale(),
                     " would start every residual branch at 0 or reversed; choose a positive "
                     "scale (torchvision's is 1e-6)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Model>> CreateConvNeXt(const ConvNeXtOptions& options,
                                                      const ModelContext& context) {
  const Setting& setting = *FindSetting(options.variant());
  return std::make_unique<ConvNeXt>(
      setting, context.num_classes, context.input_channels,
      options.has_stochastic_depth_prob() ? options.stochastic_depth_prob()
                                          : setting.stochastic_depth_prob,
      options.layer_scale());
}

PIPELINE_REGISTER_PLUGIN(Model, "convnext", ConvNeXtOptions,
                         "ConvNeXt (tiny, small, base, large) with torchvision's state_dict "
                         "keys and init",
                         CreateConvNeXt, ValidateConvNeXtOptions);
PIPELINE_PLUGIN_TRAITS(Model, "convnext", ModelTraits{.has_depth_order = true});

}  // namespace
}  // namespace pipeline
