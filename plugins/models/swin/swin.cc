// model `swin`: torchvision's Swin Transformer, v1 (swin_t/s/b) and v2
// (swin_v2_t/s/b): a 4x4 patch embedding, four stages of shifted-window
// attention blocks with patch merging between them, a final LayerNorm and a
// linear head. Submodules carry torchvision's attribute names and
// registration order, and the parameter-free layers torchvision keeps in its
// Sequentials (Permute, GELU, Dropout) hold their index here too, so
// named_parameters() and named_buffers() give exactly the keys and shapes of
// torchvision's state_dict() and checkpoints can be exchanged with
// torchvision.models.swin_*; the test checks this against fixtures written
// by tools/fixtures/torchvision_state_dict_keys.py, and checks the logits
// against torchvision's for the same weights. Initialisation is
// torchvision's too.
//
// Layer-wise learning-rate decay (num_layers, layer_id) follows timm's Swin:
// the patch embedding is layer 0, each block its own layer in order, a patch
// merging goes with the first block of the stage it feeds, and the final
// norm and the head are the last layer.
//
//   model {
//     name: "swin"
//     options {
//       [type.googleapis.com/pipeline.SwinOptions] { variant: SWIN_V2_T }
//     }
//   }

#include <array>
#include <cstdint>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "c10/util/Exception.h"
#include "pipeline/interfaces/model.h"
#include "plugins/models/common/layer_norm.h"
#include "plugins/models/common/stochastic_depth.h"
#include "plugins/models/common/trunc_normal.h"
#include "plugins/models/swin/shifted_window_attention.h"
#include "plugins/models/swin/swin.pb.h"
#include "torch/nn/init.h"
#include "torch/nn/modules/conv.h"
#include "torch/nn/modules/linear.h"
#include "torch/nn/modules/normalization.h"

namespace pipeline {
namespace {

// One of torchvision's swin_* constructors.
struct Architecture {
  SwinOptions::Variant variant;
  int64_t embed_dim;
  std::array<int64_t, 4> depths;     // blocks per stage
  std::array<int64_t, 4> num_heads;  // per stage
  int64_t window_size;
  double stochastic_depth_prob;  // torchvision's default
  bool v2;
};

constexpr Architecture kArchitectures[] = {
    {SwinOptions::SWIN_T, 96, {2, 2, 6, 2}, {3, 6, 12, 24}, 7, 0.2, false},
    {SwinOptions::SWIN_S, 96, {2, 2, 18, 2}, {3, 6, 12, 24}, 7, 0.3, false},
    {SwinOptions::SWIN_B, 128, {2, 2, 18, 2}, {4, 8, 16, 32}, 7, 0.5, false},
    {SwinOptions::SWIN_V2_T, 96, {2, 2, 6, 2}, {3, 6, 12, 24}, 8, 0.2, true},
    {SwinOptions::SWIN_V2_S, 96, {2, 2, 18, 2}, {3, 6, 12, 24}, 8, 0.3, true},
    {SwinOptions::SWIN_V2_B, 128, {2, 2, 18, 2}, {4, 8, 16, 32}, 8, 0.5, true},
};

const Architecture* FindArchitecture(SwinOptions::Variant variant) {
  for (const Architecture& architecture : kArchitectures) {
    if (architecture.variant == variant) return &architecture;
  }
  return nullptr;
}

constexpr int64_t kPatchSize = 4;

AutocastLayerNorm NormLayer(int64_t dim) {
  return AutocastLayerNorm(torch::nn::LayerNormOptions({dim}).eps(1e-5));
}

// features.0: a 4x4, stride-4 conv ("0"), the permute to channels-last
// ("1", no state) and a LayerNorm ("2").
class PatchEmbeddingImpl : public torch::nn::Module {
 public:
  PatchEmbeddingImpl(int64_t in_channels, int64_t embed_dim) {
    conv_ = register_module(
        "0", torch::nn::Conv2d(
                 torch::nn::Conv2dOptions(in_channels, embed_dim, kPatchSize).stride(kPatchSize)));
    norm_ = register_module("2", NormLayer(embed_dim));
  }

  // [B, C, H, W] images to a [B, H / 4, W / 4, embed_dim] map.
  torch::Tensor forward(const torch::Tensor& images) {
    return norm_(conv_(images).permute({0, 2, 3, 1}));
  }

 private:
  torch::nn::Conv2d conv_{nullptr};
  AutocastLayerNorm norm_{nullptr};
};
TORCH_MODULE(PatchEmbedding);

// torchvision.ops.MLP as a block builds it: Linear "0", GELU "1", Dropout
// "2" (p = 0), Linear "3", Dropout "4".
class MlpImpl : public torch::nn::Module {
 public:
  explicit MlpImpl(int64_t dim) {
    fc1_ = register_module("0", torch::nn::Linear(dim, 4 * dim));
    fc2_ = register_module("3", torch::nn::Linear(4 * dim, dim));
  }

  torch::Tensor forward(const torch::Tensor& x) { return fc2_(torch::gelu(fc1_(x))); }

 private:
  torch::nn::Linear fc1_{nullptr}, fc2_{nullptr};
};
TORCH_MODULE(Mlp);

// SwinTransformerBlock (v1: pre-norm residual branches) and
// SwinTransformerBlockV2 (the norm after each branch), each branch dropped
// by stochastic depth in training.
class SwinBlockImpl : public torch::nn::Module {
 public:
  SwinBlockImpl(int64_t dim, int64_t num_heads, int64_t window_size, int64_t shift_size,
                double stochastic_depth_prob, bool v2)
      : stochastic_depth_prob_(stochastic_depth_prob), v2_(v2) {
    norm1_ = register_module("norm1", NormLayer(dim));
    attn_ = register_module("attn",
                            ShiftedWindowAttention(dim, window_size, shift_size, num_heads, v2));
    norm2_ = register_module("norm2", NormLayer(dim));
    mlp_ = register_module("mlp", Mlp(dim));
  }

  torch::Tensor forward(torch::Tensor x) {
    const torch::Tensor attended = v2_ ? norm1_(attn_(x)) : attn_(norm1_(x));
    x = x + StochasticDepth(attended, stochastic_depth_prob_, is_training());
    const torch::Tensor mixed = v2_ ? norm2_(mlp_(x)) : mlp_(norm2_(x));
    return x + StochasticDepth(mixed, stochastic_depth_prob_, is_training());
  }

 private:
  double stochastic_depth_prob_;
  bool v2_;
  AutocastLayerNorm norm1_{nullptr}, norm2_{nullptr};
  ShiftedWindowAttention attn_{nullptr};
  Mlp mlp_{nullptr};
};
TORCH_MODULE(SwinBlock);

// PatchMerging (v1: norm, then reduction) and PatchMergingV2 (reduction,
// then norm): each 2x2 neighbourhood's channels concatenated, the map
// padded to even sides first, and reduced to twice the input's channels.
class PatchMergingImpl : public torch::nn::Module {
 public:
  PatchMergingImpl(int64_t dim, bool v2) : v2_(v2) {
    reduction_ = register_module(
        "reduction", torch::nn::Linear(torch::nn::LinearOptions(4 * dim, 2 * dim).bias(false)));
    norm_ = register_module("norm", NormLayer(v2 ? 2 * dim : 4 * dim));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    const torch::Tensor padded =
        torch::constant_pad_nd(x, {0, 0, 0, x.size(-2) % 2, 0, x.size(-3) % 2});
    auto quarter = [&padded](int64_t row, int64_t column) {
      return padded.slice(-3, row, padded.size(-3), 2).slice(-2, column, padded.size(-2), 2);
    };
    const torch::Tensor merged =
        torch::cat({quarter(0, 0), quarter(1, 0), quarter(0, 1), quarter(1, 1)}, -1);
    return v2_ ? norm_(reduction_(merged)) : reduction_(norm_(merged));
  }

 private:
  bool v2_;
  torch::nn::Linear reduction_{nullptr};
  AutocastLayerNorm norm_{nullptr};
};
TORCH_MODULE(PatchMerging);

// One stage, torchvision's nn.Sequential of blocks: children "0", "1", ...
class StageImpl : public torch::nn::Module {
 public:
  void Add(SwinBlock block) {
    blocks_.push_back(register_module(std::to_string(blocks_.size()), block));
  }

  torch::Tensor forward(torch::Tensor x) {
    for (SwinBlock& block : blocks_) x = block->forward(x);
    return x;
  }

 private:
  std::vector<SwinBlock> blocks_;
};
TORCH_MODULE(Stage);

class SwinTransformer : public Model {
 public:
  SwinTransformer(const Architecture& architecture, int64_t num_classes, int64_t in_channels,
                  double stochastic_depth_prob)
      : depths_(architecture.depths) {
    features_ = register_module("features", torch::nn::Sequential());
    features_->push_back(PatchEmbedding(in_channels, architecture.embed_dim));
    const int64_t total_blocks = std::accumulate(depths_.begin(), depths_.end(), int64_t{0});
    int64_t block_index = 0;
    for (size_t stage = 0; stage < depths_.size(); ++stage) {
      const int64_t dim = architecture.embed_dim << stage;
      Stage blocks;
      for (int64_t i = 0; i < depths_[stage]; ++i, ++block_index) {
        // Every other block shifts its windows by half a window.
        const int64_t shift = i % 2 == 0 ? 0 : architecture.window_size / 2;
        blocks->Add(SwinBlock(dim, architecture.num_heads[stage], architecture.window_size, shift,
                              stochastic_depth_prob * block_index / (total_blocks - 1),
                              architecture.v2));
      }
      features_->push_back(blocks);
      if (stage + 1 < depths_.size()) features_->push_back(PatchMerging(dim, architecture.v2));
    }
    const int64_t num_features = architecture.embed_dim << (depths_.size() - 1);
    norm_ = register_module("norm", NormLayer(num_features));
    // torchvision's permute, avgpool and flatten have no state and are
    // applied in forward().
    head_ = register_module("head", torch::nn::Linear(num_features, num_classes));
    InitialiseLikeTorchvision();
  }

  std::vector<std::string> head_prefixes() const override { return {"head."}; }

  torch::Tensor forward(const torch::Tensor& images) override {
    TORCH_CHECK(images.dim() == 4 && images.size(2) >= kPatchSize && images.size(3) >= kPatchSize,
                "swin takes N x C x H x W images of at least ", kPatchSize, "x", kPatchSize,
                " pixels (one patch; any larger size works, padded to whole windows, and "
                "torchvision's weights are trained at 224x224 for v1, 256x256 for v2); got ",
                images.sizes());
    torch::Tensor x = norm_(features_->forward(images));
    x = torch::adaptive_avg_pool2d(x.permute({0, 3, 1, 2}), {1, 1}).flatten(1);
    return head_(x);
  }

  // The patch embedding, one layer per block, then the norm and head.
  int num_layers() const override {
    return static_cast<int>(std::accumulate(depths_.begin(), depths_.end(), int64_t{0})) + 2;
  }

  int layer_id(const std::string& parameter_name) const override;

 private:
  // torchvision inits every Linear (the MLPs' own xavier init included,
  // which this overrides) with a truncated normal; the patch conv keeps
  // torch's default, LayerNorm starts at 1 and 0.
  void InitialiseLikeTorchvision() {
    for (const auto& module : modules(/*include_self=*/false)) {
      if (auto* linear = module->as<torch::nn::Linear>()) {
        TruncNormal(linear->weight, 0.02);
        if (linear->bias.defined()) torch::nn::init::zeros_(linear->bias);
      }
    }
  }

  std::array<int64_t, 4> depths_;
  torch::nn::Sequential features_{nullptr};
  AutocastLayerNorm norm_{nullptr};
  torch::nn::Linear head_{nullptr};
};

int SwinTransformer::layer_id(const std::string& parameter_name) const {
  const int last = num_layers() - 1;
  // features.<index>.<rest>: 0 the patch embedding, then each stage (odd
  // indices, blocks "<stage index>.<block>.") and the patch merging after
  // it (even), which feeds the next stage.
  const std::vector<absl::string_view> parts = absl::StrSplit(parameter_name, '.');
  int feature = 0;
  if (parts.size() < 3 || parts[0] != "features" || !absl::SimpleAtoi(parts[1], &feature)) {
    return last;  // the final norm and the head
  }
  if (feature == 0) return 0;
  const int stage = (feature - 1) / 2;
  int first_block = 1;
  for (int s = 0; s < stage; ++s) first_block += static_cast<int>(depths_[s]);
  if (feature % 2 == 0) return first_block + static_cast<int>(depths_[stage]);
  int block = 0;
  if (!absl::SimpleAtoi(parts[2], &block)) return last;
  return first_block + block;
}

// Every Variant has its row in kArchitectures, so the enum needs no check.
absl::Status ValidateSwinOptions(const SwinOptions& options) {
  return ValidateStochasticDepthProb(options.stochastic_depth_prob());
}

absl::StatusOr<std::unique_ptr<Model>> CreateSwin(const SwinOptions& options,
                                                  const ModelContext& context) {
  const Architecture& architecture = *FindArchitecture(options.variant());
  return std::make_unique<SwinTransformer>(architecture, context.num_classes,
                                           context.input_channels,
                                           options.has_stochastic_depth_prob()
                                               ? options.stochastic_depth_prob()
                                               : architecture.stochastic_depth_prob);
}

PIPELINE_REGISTER_PLUGIN(Model, "swin", SwinOptions,
                         "Swin Transformer v1/v2 (T/S/B) with torchvision's state_dict keys and "
                         "init",
                         CreateSwin, ValidateSwinOptions);
PIPELINE_PLUGIN_TRAITS(Model, "swin", ModelTraits{.has_depth_order = true});

}  // namespace
}  // namespace pipeline
