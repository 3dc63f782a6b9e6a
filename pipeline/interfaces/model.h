#ifndef PIPELINE_INTERFACES_MODEL_H_
#define PIPELINE_INTERFACES_MODEL_H_

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "pipeline/registry/registry.h"
#include "torch/nn/module.h"

namespace pipeline {

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
};

struct ModelContext {
  // Classes in the training data and channels of a transformed training
  // sample: used when the model's options leave them at 0.
  int64_t num_classes = 0;
  int64_t input_channels = 0;
  // Whether the model loads the file its `weights` option names. Off where
  // the caller restores the weights itself (predict, export from a
  // checkpoint), so the original file need not exist any more.
  bool load_weights = true;
  // Where loading pretrained weights says what it skipped and froze; none
  // if null.
  std::ostream* log = nullptr;
};

template <>
struct PluginKind<Model> {
  static constexpr const char* kName = "model";
  using Context = ModelContext;
};

}  // namespace pipeline

#endif  // PIPELINE_INTERFACES_MODEL_H_
