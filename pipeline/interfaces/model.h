#ifndef PIPELINE_INTERFACES_MODEL_H_
#define PIPELINE_INTERFACES_MODEL_H_

#include <cstdint>

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
};

struct ModelContext {
  // Classes in the training data and channels of a transformed training
  // sample: used when the model's options leave them at 0.
  int64_t num_classes = 0;
  int64_t input_channels = 0;
};

template <>
struct PluginKind<Model> {
  static constexpr const char* kName = "model";
  using Context = ModelContext;
};

}  // namespace pipeline

#endif  // PIPELINE_INTERFACES_MODEL_H_
