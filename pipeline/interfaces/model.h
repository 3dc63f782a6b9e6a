#ifndef PIPELINE_INTERFACES_MODEL_H_
#define PIPELINE_INTERFACES_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "pipeline/registry/registry.h"
#include "torch/nn/module.h"

namespace pipeline {

// The logits of an auxiliary classifier (GoogLeNet's aux1 and aux2,
// Inception v3's AuxLogits) from a training-mode forward pass, and the
// weight its loss carries in the training objective.
struct AuxiliaryLogits {
  torch::Tensor logits;  // N x num_classes, part of the forward's graph
  double loss_weight = 0;
};

// An image classifier: NCHW float images in, N x num_classes logits out.
// Submodules are registered under the attribute names of the reference
// implementation (torchvision), so state_dict keys match it.
class Model : public torch::nn::Module {
 public:
  using torch::nn::Module::Module;
  virtual torch::Tensor forward(const torch::Tensor& images) = 0;

  // State_dict prefixes ("fc.", "classifier.6.") of the classifier head: the
  // layer whose shape follows num_classes. Pretrained weights for another
  // number of classes leave these at their fresh initialisation, and
  // freeze_backbone keeps only these trainable. Every model plugin names
  // its head; the default (no head) only suits models built in tests.
  virtual std::vector<std::string> head_prefixes() const { return {}; }

  // Depth order for layer-wise learning-rate decay (optimizer.layer_decay,
  // timm's param_groups_layer_decay): the stem and embeddings are layer 0,
  // the i-th block (or stage) layer i + 1, the final norm and the head
  // num_layers() - 1, whose rate is the base rate; a parameter of layer l
  // gets decay^(num_layers() - 1 - l) of it. Models without such an order
  // (the CNNs of torchvision's reference recipes) keep 0 layers, and a config
  // that asks them for layer decay is refused. A plugin whose models have one
  // declares ModelTraits{.has_depth_order = true}.
  virtual int num_layers() const { return 0; }
  virtual int layer_id(const std::string& parameter_name) const { return 0; }

  // Pretrained weights (model.weights) for another configuration of the
  // same architecture can hold an entry whose shape follows that
  // configuration rather than the architecture: a ViT's position embeddings
  // follow the image size. LoadStateDict (pipeline/weights/pretrained.h)
  // asks the model to convert such an entry, `loaded` under `name`, to the
  // shape of its own `target`, for every entry outside the head whose shape
  // differs. The converted tensor where the model knows how; an undefined
  // one where it does not (the default), and the entry is reported as not
  // fitting; an error where the conversion exists but the options leave it
  // off, saying which option to set.
  virtual absl::StatusOr<torch::Tensor> AdaptLoadedTensor(const std::string& name,
                                                          const torch::Tensor& loaded,
                                                          const torch::Tensor& target) const {
    return torch::Tensor();
  }

  // The auxiliary classifiers' logits of the last forward() in training
  // mode, with their loss weights; none after an eval-mode forward and for
  // models without auxiliary classifiers (the default). forward() returns
  // the main logits alone, so inference, metrics and validation never see
  // these; only training adds weight * loss(logits, targets) for each (see
  // TrainingLoss in strategy.h), which is what makes the auxiliary heads
  // learn, as torchvision's training recipes for these models do.
  virtual std::vector<AuxiliaryLogits> auxiliary_logits() const { return {}; }
};

// What a model plugin's factory is built for, resolved once for every model
// by BuildModel (pipeline/weights/build_model.h) from the config's
// model.num_classes / model.in_channels or, where those are 0, the training
// data. Both are positive there; the plugin need not check or resolve them,
// and it neither loads weights nor freezes anything (BuildModel does both).
struct ModelContext {
  // Outputs of the classifier head.
  int64_t num_classes = 0;
  // Channels of the input images.
  int64_t input_channels = 0;
};

// What a model plugin declares about itself (PIPELINE_PLUGIN_TRAITS), so the
// config is checked before any model is built.
struct ModelTraits {
  // Whether its models have a depth order (num_layers() > 0), which
  // optimizer.param_groups.layer_decay needs. The model conformance suite
  // checks that the built model agrees.
  bool has_depth_order = false;
};

template <>
struct PluginKind<Model> {
  static constexpr const char* kName = "model";
  using Context = ModelContext;
  using Traits = ModelTraits;
};

// The registered models that declare a depth order, by name.
inline std::vector<std::string> ModelsWithDepthOrder() {
  const Registry<Model>& models = Registry<Model>::Global();
  std::vector<std::string> names;
  for (const std::string& name : models.Names()) {
    if (models.TraitsOf(name).has_depth_order) names.push_back(name);
  }
  return names;
}

}  // namespace pipeline

#endif  // PIPELINE_INTERFACES_MODEL_H_
