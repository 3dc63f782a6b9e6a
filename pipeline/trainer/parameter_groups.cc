#include "pipeline/trainer/parameter_groups.h"

#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "pipeline/layers/batch_norm.h"
#include "torch/nn/functional/instancenorm.h"  // instancenorm.h uses it undeclared
#include "torch/nn/modules/batchnorm.h"
#include "torch/nn/modules/instancenorm.h"
#include "torch/nn/modules/normalization.h"

namespace pipeline {
namespace {

// torchvision's set_weight_decay takes _BatchNorm, LayerNorm, GroupNorm,
// _InstanceNorm and LocalResponseNorm; module types, as there, since
// models name their norms freely ("bn1", "downsample.1", "ln").
bool IsNormalization(const torch::nn::Module& module) {
  return dynamic_cast<const torch::nn::BatchNorm1dImpl*>(&module) != nullptr ||
         dynamic_cast<const torch::nn::BatchNorm2dImpl*>(&module) != nullptr ||
         dynamic_cast<const torch::nn::BatchNorm3dImpl*>(&module) != nullptr ||
         dynamic_cast<const BatchNorm2dImpl*>(&module) != nullptr ||
         dynamic_cast<const torch::nn::InstanceNorm1dImpl*>(&module) != nullptr ||
         dynamic_cast<const torch::nn::InstanceNorm2dImpl*>(&module) != nullptr ||
         dynamic_cast<const torch::nn::InstanceNorm3dImpl*>(&module) != nullptr ||
         dynamic_cast<const torch::nn::LayerNormImpl*>(&module) != nullptr ||
         dynamic_cast<const torch::nn::GroupNormImpl*>(&module) != nullptr ||
         dynamic_cast<const torch::nn::LocalResponseNormImpl*>(&module) != nullptr;
}

// The full names of the parameters that normalization layers hold themselves.
// (Models are not held by shared_ptr, so named_modules cannot include the
// model itself, which is never a norm anyway.)
std::set<std::string> NormalizationParameterNames(torch::nn::Module& model) {
  std::set<std::string> names;
  for (const auto& item : model.named_modules(/*name_prefix=*/"", /*include_self=*/false)) {
    if (!IsNormalization(*item.value())) continue;
    for (const auto& parameter : item.value()->named_parameters(/*recurse=*/false)) {
      names.insert(absl::StrCat(item.key(), ".", parameter.key()));
    }
  }
  return names;
}

std::string LeafName(const std::string& name) {
  const size_t dot = name.rfind('.');
  return dot == std::string::npos ? name : name.substr(dot + 1);
}

// torchvision's transformer_embedding_decay keys, plus pos_embedding: the
// name torchvision's ViT gives its position embedding.
bool IsEmbedding(const std::string& leaf) {
  return leaf == "class_token" || leaf == "pos_embedding" || leaf == "position_embedding" ||
         leaf == "relative_position_bias_table";
}

std::optional<double> WeightDecayOf(const ParamGroupsConfig& config, const std::string& name,
                                    const torch::Tensor& parameter,
                                    const std::set<std::string>& norm_parameters) {
  const std::string leaf = LeafName(name);
  if (config.has_bias_weight_decay() && leaf == "bias") return config.bias_weight_decay();
  if (config.has_embedding_weight_decay() && IsEmbedding(leaf)) {
    return config.embedding_weight_decay();
  }
  if (config.has_norm_weight_decay() && norm_parameters.count(name) > 0) {
    return config.norm_weight_decay();
  }
  if (config.no_weight_decay_1d() && parameter.dim() <= 1) return 0.0;
  return std::nullopt;
}

bool Matches(const std::string& pattern, const std::string& name) {
  return fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
}

// Checks what depends on the model before any group is formed.
absl::Status CheckAgainstModel(const ParamGroupsConfig& config, const Model& model,
                               const std::vector<std::string>& names) {
  std::vector<std::string> errors;
  for (int i = 0; i < config.lr_scales_size(); ++i) {
    const std::string& pattern = config.lr_scales(i).pattern();
    bool matched = false;
    for (const std::string& name : names) matched = matched || Matches(pattern, name);
    if (!matched) {
      std::vector<std::string> examples(names.begin(), names.begin() + std::min<size_t>(3, names.size()));
      if (names.size() > 3) examples.push_back(names.back());
      errors.push_back(absl::StrCat(
          "optimizer.param_groups.lr_scales[", i, "].pattern: \"", pattern,
          "\" matches no trainable parameter of the model (a glob over the whole name; the ",
          names.size(), " trainable parameters are named like ", absl::StrJoin(examples, ", "),
          ")"));
    }
  }
  if (config.layer_decay() > 0 && model.num_layers() == 0) {
    errors.push_back(absl::StrCat(
        "optimizer.param_groups.layer_decay: ", config.layer_decay(),
        "; this model has no depth order (Model::num_layers() is 0), and only models with a "
        "depth order support layer-wise learning-rate decay (",
        absl::StrJoin(ModelsWithDepthOrder(), ", "), "); leave layer_decay out"));
  }
  if (errors.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrJoin(errors, "\n"));
}

absl::StatusOr<double> LrScaleOf(const ParamGroupsConfig& config, const Model& model,
                                 const std::string& name) {
  double scale = 1;
  for (const LearningRateScale& entry : config.lr_scales()) {
    if (Matches(entry.pattern(), name)) {
      scale = entry.lr_scale();
      break;
    }
  }
  if (config.layer_decay() > 0) {
    const int layers = model.num_layers();
    const int layer = model.layer_id(name);
    if (layer < 0 || layer >= layers) {
      return absl::InternalError(absl::StrCat("the model puts parameter ", name, " in layer ",
                                              layer, ", outside its ", layers, " layers"));
    }
    scale *= std::pow(config.layer_decay(), layers - 1 - layer);
  }
  return scale;
}

std::string Number(double value) { return absl::StrCat(value); }

}  // namespace

absl::StatusOr<OptimizerContext> GroupParameters(const ParamGroupsConfig& config, Model& model) {
  std::vector<std::pair<std::string, torch::Tensor>> trainable;
  std::vector<std::string> names;
  for (const auto& item : model.named_parameters()) {
    if (!item.value().requires_grad()) continue;
    trainable.emplace_back(item.key(), item.value());
    names.push_back(item.key());
  }
  if (absl::Status status = CheckAgainstModel(config, model, names); !status.ok()) return status;
  const std::set<std::string> norm_parameters = NormalizationParameterNames(model);
  OptimizerContext context;
  for (const auto& [name, parameter] : trainable) {
    absl::StatusOr<double> lr_scale = LrScaleOf(config, model, name);
    if (!lr_scale.ok()) return lr_scale.status();
    const std::optional<double> weight_decay =
        WeightDecayOf(config, name, parameter, norm_parameters);
    OptimizerParameterGroup* group = nullptr;
    for (OptimizerParameterGroup& existing : context.groups) {
      if (existing.lr_scale == *lr_scale && existing.weight_decay == weight_decay) {
        group = &existing;
        break;
      }
    }
    if (group == nullptr) {
      context.groups.push_back({{}, *lr_scale, weight_decay});
      group = &context.groups.back();
    }
    group->parameters.push_back(parameter);
  }
  // A model with nothing to train still gets an optimizer, of one empty group.
  if (context.groups.empty()) context.groups.emplace_back();
  return context;
}

std::vector<std::string> DescribeParameterGroups(const OptimizerContext& context) {
  std::vector<std::string> lines;
  for (size_t g = 0; g < context.groups.size(); ++g) {
    const OptimizerParameterGroup& group = context.groups[g];
    int64_t values = 0;
    for (const torch::Tensor& parameter : group.parameters) values += parameter.numel();
    lines.push_back(absl::StrCat(
        "param group ", g, ": ", group.parameters.size(),
        group.parameters.size() == 1 ? " tensor (" : " tensors (", values, " values), lr x",
        Number(group.lr_scale), ", weight_decay ",
        group.weight_decay ? Number(*group.weight_decay) : "the optimizer's"));
  }
  return lines;
}

}  // namespace pipeline
