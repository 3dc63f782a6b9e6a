// model `vit`: torchvision's VisionTransformer (patches embedded by a
// strided conv, a class token, learned position embeddings, pre-norm
// encoder blocks of multi-head self-attention and a GELU MLP, the class
// token's final state to a linear head). Submodules carry torchvision's
// attribute names and registration order, and the parameter-free layers
// torchvision keeps in its MLP Sequential (GELU, Dropout) hold their index
// here too, so named_parameters() gives exactly the keys and shapes of
// torchvision's state_dict() and checkpoints can be exchanged with
// torchvision.models.vit_b_16 and the others; the test checks this against
// fixtures written by tools/fixtures/torchvision_state_dict_keys.py, and
// checks the logits against torchvision's for the same weights.
// Initialisation is torchvision's too.
//
// The model takes exactly image_size x image_size images. Pretrained
// weights for another image size load under interpolate_position_embeddings
// (AdaptLoadedTensor), as torchvision's interpolate_embeddings prepares
// them.
//
//   model {
//     name: "vit"
//     weights: "vit_b_16-c867db91.pth"
//     options {
//       [type.googleapis.com/pipeline.VisionTransformerOptions] {
//         variant: B_16 image_size: 384 interpolate_position_embeddings: true
//       }
//     }
//   }

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/util/status_macros.h"
#include "plugins/models/common/dropout.h"
#include "plugins/models/common/layer_norm.h"
#include "plugins/models/common/trunc_normal.h"
#include "plugins/models/vit/vit.pb.h"
#include "torch/nn/functional/dropout.h"
#include "torch/nn/functional/upsampling.h"
#include "torch/nn/init.h"
#include "torch/nn/modules/activation.h"
#include "torch/nn/modules/container/sequential.h"
#include "torch/nn/modules/conv.h"
#include "torch/nn/modules/linear.h"
#include "torch/nn/modules/normalization.h"

namespace pipeline {
namespace {

namespace F = torch::nn::functional;

// The shape of the network: torchvision's arguments to VisionTransformer.
struct Architecture {
  int64_t patch_size;
  int64_t num_layers;
  int64_t num_heads;
  int64_t hidden_dim;
  int64_t mlp_dim;
};

struct VariantArchitecture {
  VisionTransformerOptions::Variant variant;
  Architecture architecture;
};

// torchvision 0.14's vit_* constructors.
constexpr VariantArchitecture kVariants[] = {
    {VisionTransformerOptions::B_16, {16, 12, 12, 768, 3072}},
    {VisionTransformerOptions::B_32, {32, 12, 12, 768, 3072}},
    {VisionTransformerOptions::L_16, {16, 24, 16, 1024, 4096}},
    {VisionTransformerOptions::L_32, {32, 24, 16, 1024, 4096}},
    {VisionTransformerOptions::H_14, {14, 32, 16, 1280, 5120}},
};

const Architecture* FindVariant(VisionTransformerOptions::Variant variant) {
  for (const VariantArchitecture& entry : kVariants) {
    if (entry.variant == variant) return &entry.architecture;
  }
  return nullptr;
}

// The variant's architecture with the options' overrides.
Architecture ArchitectureOf(const VisionTransformerOptions& options) {
  Architecture a = *FindVariant(options.variant());
  if (options.patch_size() > 0) a.patch_size = options.patch_size();
  if (options.num_layers() > 0) a.num_layers = options.num_layers();
  if (options.num_heads() > 0) a.num_heads = options.num_heads();
  if (options.hidden_dim() > 0) a.hidden_dim = options.hidden_dim();
  if (options.mlp_dim() > 0) a.mlp_dim = options.mlp_dim();
  return a;
}

AutocastLayerNorm EncoderNorm(int64_t dim) {
  // torchvision's norm_layer: partial(nn.LayerNorm, eps=1e-6).
  return AutocastLayerNorm(torch::nn::LayerNormOptions({dim}).eps(1e-6));
}

// torchvision's MLPBlock (an MLP Sequential): Linear "0", GELU, Dropout,
// Linear "3", Dropout. The activation and dropouts have no state and are
// applied in forward().
class MlpBlockImpl : public torch::nn::Module {
 public:
  MlpBlockImpl(int64_t dim, int64_t mlp_dim, double dropout) : dropout_(dropout) {
    expand_ = register_module("0", torch::nn::Linear(dim, mlp_dim));
    project_ = register_module("3", torch::nn::Linear(mlp_dim, dim));
    for (torch::nn::Linear* linear : {&expand_, &project_}) {
      torch::nn::init::xavier_uniform_((*linear)->weight);
      torch::nn::init::normal_((*linear)->bias, 0.0, 1e-6);
    }
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = Dropout(torch::gelu(expand_(x)));
    return Dropout(project_(y));
  }

 private:
  torch::Tensor Dropout(const torch::Tensor& x) {
    return F::dropout(x, F::DropoutFuncOptions().p(dropout_).training(is_training()));
  }

  double dropout_;
  torch::nn::Linear expand_{nullptr}, project_{nullptr};
};
TORCH_MODULE(MlpBlock);

// torchvision's EncoderBlock: x + attention(ln_1(x)), then + mlp(ln_2(.)).
class EncoderBlockImpl : public torch::nn::Module {
 public:
  EncoderBlockImpl(const Architecture& a, double dropout, double attention_dropout)
      : dropout_(dropout) {
    ln_1_ = register_module("ln_1", EncoderNorm(a.hidden_dim));
    // LibTorch's MultiheadAttention initialises as torch's: Xavier-uniform
    // in_proj_weight, zero biases, out_proj.weight as any Linear's.
    self_attention_ = register_module(
        "self_attention",
        torch::nn::MultiheadAttention(torch::nn::MultiheadAttentionOptions(a.hidden_dim, a.num_heads)
                                          .dropout(attention_dropout)));
    ln_2_ = register_module("ln_2", EncoderNorm(a.hidden_dim));
    mlp_ = register_module("mlp", MlpBlock(a.hidden_dim, a.mlp_dim, dropout));
  }

  // `x`: batch x sequence x hidden_dim.
  torch::Tensor forward(const torch::Tensor& x) {
    // LibTorch's attention takes sequence x batch x hidden_dim (torch's
    // batch_first=False).
    const torch::Tensor normed = ln_1_(x).transpose(0, 1);
    torch::Tensor attended = std::get<0>(self_attention_->forward(
        normed, normed, normed, /*key_padding_mask=*/{}, /*need_weights=*/false));
    attended = F::dropout(attended.transpose(0, 1),
                          F::DropoutFuncOptions().p(dropout_).training(is_training()));
    const torch::Tensor y = attended + x;
    return y + mlp_(ln_2_(y));
  }

 private:
  double dropout_;
  AutocastLayerNorm ln_1_{nullptr}, ln_2_{nullptr};
  torch::nn::MultiheadAttention self_attention_{nullptr};
  MlpBlock mlp_{nullptr};
};
TORCH_MODULE(EncoderBlock);

// torchvision's Encoder: the position embeddings (its own parameter),
// `layers` (encoder_layer_0, encoder_layer_1, ...) and the final norm `ln`.
class EncoderImpl : public torch::nn::Module {
 public:
  EncoderImpl(const Architecture& a, int64_t seq_length, double dropout, double attention_dropout)
      : dropout_(dropout) {
    // From BERT, as torchvision: N(0, 0.02).
    pos_embedding_ = register_parameter(
        "pos_embedding", torch::empty({1, seq_length, a.hidden_dim}).normal_(0.0, 0.02));
    torch::OrderedDict<std::string, torch::nn::AnyModule> layers;
    for (int64_t i = 0; i < a.num_layers; ++i) {
      layers.insert(absl::StrCat("encoder_layer_", i),
                    torch::nn::AnyModule(EncoderBlock(a, dropout, attention_dropout)));
    }
    layers_ = register_module("layers", torch::nn::Sequential(std::move(layers)));
    ln_ = register_module("ln", EncoderNorm(a.hidden_dim));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = F::dropout(x + pos_embedding_,
                                 F::DropoutFuncOptions().p(dropout_).training(is_training()));
    return ln_(layers_->forward(y));
  }

 private:
  double dropout_;
  torch::Tensor pos_embedding_;
  torch::nn::Sequential layers_{nullptr};
  AutocastLayerNorm ln_{nullptr};
};
TORCH_MODULE(Encoder);

// torchvision's interpolate_embeddings for one position embedding
// (1 x (1 + n*n) x hidden): the class token's entry kept, the n x n grid
// resampled bicubically (corners aligned) to grid x grid.
torch::Tensor InterpolatePositionEmbedding(const torch::Tensor& embedding, int64_t n,
                                           int64_t grid) {
  const int64_t hidden = embedding.size(2);
  const torch::Tensor token = embedding.narrow(1, 0, 1);
  const torch::Tensor image =
      embedding.narrow(1, 1, n * n).permute({0, 2, 1}).reshape({1, hidden, n, n});
  const torch::Tensor resampled =
      F::interpolate(image, F::InterpolateFuncOptions()
                                .size(std::vector<int64_t>{grid, grid})
                                .mode(torch::kBicubic)
                                .align_corners(true));
  return torch::cat({token, resampled.reshape({1, hidden, grid * grid}).permute({0, 2, 1})}, 1);
}

constexpr char kPositionEmbedding[] = "encoder.pos_embedding";

class VisionTransformer : public Model {
 public:
  VisionTransformer(const Architecture& a, const VisionTransformerOptions& options,
                    int64_t num_classes, int64_t in_channels)
      : architecture_(a),
        image_size_(options.image_size()),
        interpolate_position_embeddings_(options.interpolate_position_embeddings()) {
    conv_proj_ = register_module(
        "conv_proj", torch::nn::Conv2d(torch::nn::Conv2dOptions(in_channels, a.hidden_dim,
                                                                a.patch_size)
                                           .stride(a.patch_size)));
    class_token_ = register_parameter("class_token", torch::zeros({1, 1, a.hidden_dim}));
    const int64_t grid = image_size_ / a.patch_size;
    encoder_ = register_module("encoder", Encoder(a, grid * grid + 1, options.dropout(),
                                                  options.attention_dropout()));
    torch::OrderedDict<std::string, torch::nn::AnyModule> heads;
    heads.insert("head", torch::nn::AnyModule(torch::nn::Linear(a.hidden_dim, num_classes)));
    heads_ = register_module("heads", torch::nn::Sequential(std::move(heads)));
    InitialiseLikeTorchvision(in_channels);
  }

  std::vector<std::string> head_prefixes() const override { return {"heads.head."}; }

  torch::Tensor forward(const torch::Tensor& images) override {
    TORCH_CHECK(images.dim() == 4 && images.size(2) == image_size_ && images.size(3) == image_size_,
                "vit: the images are ", ImageSizeText(images), " but this model takes ",
                image_size_, "x", image_size_, " (its image_size): resize or crop them to that ",
                "(a transform), or set image_size in the vit options to their size, a multiple ",
                "of the patch size ", architecture_.patch_size);
    const int64_t n = images.size(0);
    // n x hidden x grid x grid -> n x (grid * grid) x hidden.
    torch::Tensor x = conv_proj_(images).reshape({n, architecture_.hidden_dim, -1});
    x = torch::cat({class_token_.expand({n, -1, -1}), x.permute({0, 2, 1})}, 1);
    x = encoder_(x);
    return heads_->forward(x.select(1, 0));
  }

  // timm's layer-decay order (param_groups_layer_decay with the ViT's
  // group_matcher): the patch embedding, class token and position
  // embeddings first, then encoder layer i as layer i + 1, the head last.
  // The final norm goes with the head, as Model::num_layers asks (timm's
  // matcher puts it with the last encoder layer, one decay step lower).
  int num_layers() const override { return static_cast<int>(architecture_.num_layers) + 2; }

  int layer_id(const std::string& parameter_name) const override {
    absl::string_view name = parameter_name;
    if (name == "class_token" || name == kPositionEmbedding ||
        absl::StartsWith(name, "conv_proj.")) {
      return 0;
    }
    int block = 0;
    if (absl::ConsumePrefix(&name, "encoder.layers.encoder_layer_") &&
        absl::SimpleAtoi(name.substr(0, name.find('.')), &block)) {
      return block + 1;
    }
    return num_layers() - 1;
  }

  absl::StatusOr<torch::Tensor> AdaptLoadedTensor(const std::string& name,
                                                  const torch::Tensor& loaded,
                                                  const torch::Tensor& target) const override {
    if (name != kPositionEmbedding || loaded.dim() != 3 || loaded.size(0) != 1 ||
        loaded.size(2) != target.size(2)) {
      return torch::Tensor();
    }
    // The file's grid of patches: what remains after the class token.
    const int64_t n = static_cast<int64_t>(std::lround(std::sqrt(loaded.size(1) - 1.0)));
    if (n * n != loaded.size(1) - 1) return torch::Tensor();
    const int64_t grid = image_size_ / architecture_.patch_size;
    if (!interpolate_position_embeddings_) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, ": the file's (", absl::StrJoin(loaded.sizes(), "x"), ") are for a ", n, "x", n,
          " grid of patches (image_size ", n * architecture_.patch_size, " at patch size ",
          architecture_.patch_size, "), this model's for ", grid, "x", grid, " (image_size ",
          image_size_, "); set interpolate_position_embeddings: true in the vit options to "
          "resample them (bicubic, as torchvision's interpolate_embeddings), or image_size: ",
          n * architecture_.patch_size, " to match the file"));
    }
    return InterpolatePositionEmbedding(loaded, n, grid);
  }

 private:
  static std::string ImageSizeText(const torch::Tensor& images) {
    if (images.dim() != 4) return absl::StrCat("of ", images.dim(), " dimensions, not N x C x H x W,");
    return absl::StrCat(images.size(2), "x", images.size(3));
  }

  // What torchvision's constructors set beyond LibTorch's defaults (the
  // attention's and LayerNorm's are torch's already, the MLP's are set
  // where it is built).
  void InitialiseLikeTorchvision(int64_t in_channels) {
    const double fan_in =
        static_cast<double>(in_channels * architecture_.patch_size * architecture_.patch_size);
    TruncNormal(conv_proj_->weight, std::sqrt(1.0 / fan_in));
    torch::NoGradGuard no_grad;
    conv_proj_->bias.zero_();
    // The head starts at zero: every class equally likely.
    for (torch::Tensor& p : heads_->parameters()) p.zero_();
  }

  Architecture architecture_;
  int64_t image_size_;
  bool interpolate_position_embeddings_;
  torch::nn::Conv2d conv_proj_{nullptr};
  torch::Tensor class_token_;
  Encoder encoder_{nullptr};
  torch::nn::Sequential heads_{nullptr};
};

absl::Status ValidateProbability(const char* field, double value) {
  if (value >= 0 && value <= 1) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": ", value, " is not a probability; choose a value from 0 to 1"));
}

absl::Status ValidateVisionTransformerOptions(const VisionTransformerOptions& options) {
  if (FindVariant(options.variant()) == nullptr) {
    std::vector<std::string> variants;
    for (const VariantArchitecture& entry : kVariants) {
      variants.push_back(VisionTransformerOptions::Variant_Name(entry.variant));
    }
    return absl::InvalidArgumentError(absl::StrCat("variant: ", options.variant(),
                                                   " is not a ViT variant; choose ",
                                                   absl::StrJoin(variants, ", ")));
  }
  const std::pair<const char*, int32_t> overrides[] = {{"patch_size", options.patch_size()},
                                                        {"num_layers", options.num_layers()},
                                                        {"num_heads", options.num_heads()},
                                                        {"hidden_dim", options.hidden_dim()},
                                                        {"mlp_dim", options.mlp_dim()}};
  for (const auto& [field, value] : overrides) {
    if (value < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ": ", value, " is negative; set a positive count, or 0 for the variant's"));
    }
  }
  const Architecture a = ArchitectureOf(options);
  if (options.image_size() <= 0 || options.image_size() % a.patch_size != 0) {
    const int64_t below = std::max<int64_t>(1, options.image_size() / a.patch_size);
    return absl::InvalidArgumentError(absl::StrCat(
        "image_size: ", options.image_size(), " is not a positive multiple of the patch size ",
        a.patch_size, "; choose one, such as ", below * a.patch_size, " or ",
        (below + 1) * a.patch_size));
  }
  if (a.hidden_dim % a.num_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "hidden_dim: ", a.hidden_dim, " does not split into num_heads: ", a.num_heads,
        " heads; choose a multiple of ", a.num_heads));
  }
  RETURN_IF_ERROR(ValidateDropout(options.dropout()));
  return ValidateProbability("attention_dropout", options.attention_dropout());
}

absl::StatusOr<std::unique_ptr<Model>> CreateVisionTransformer(
    const VisionTransformerOptions& options, const ModelContext& context) {
  return std::make_unique<VisionTransformer>(ArchitectureOf(options), options,
                                             context.num_classes, context.input_channels);
}

PIPELINE_REGISTER_PLUGIN(Model, "vit", VisionTransformerOptions,
                         "Vision Transformer (ViT-B/16 ... ViT-H/14) with torchvision's "
                         "state_dict keys and init",
                         CreateVisionTransformer, ValidateVisionTransformerOptions);
PIPELINE_PLUGIN_TRAITS(Model, "vit", ModelTraits{.has_depth_order = true});

}  // namespace
}  // namespace pipeline
