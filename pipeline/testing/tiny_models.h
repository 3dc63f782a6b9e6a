#ifndef PIPELINE_TESTING_TINY_MODELS_H_
#define PIPELINE_TESTING_TINY_MODELS_H_

// The small models tests build where what matters is the code around a
// model (checkpoints, weights files, hooks), not the model: parameters named
// as torchvision names them, few enough to compare by hand.

#include <cstdint>
#include <string>
#include <vector>

#include "pipeline/interfaces/model.h"
#include "torch/nn/functional/pooling.h"
#include "torch/nn/modules/batchnorm.h"
#include "torch/nn/modules/conv.h"
#include "torch/nn/modules/linear.h"

namespace pipeline {
namespace testing {

// One layer "fc": each sample flattened to `in_features` values ->
// `classes` logits. The default takes 2x2 one-channel images to 3 logits.
class TinyModel : public Model {
 public:
  explicit TinyModel(int64_t in_features = 4, int64_t classes = 3) {
    fc = register_module("fc", torch::nn::Linear(in_features, classes));
  }
  torch::Tensor forward(const torch::Tensor& images) override {
    return fc->forward(images.flatten(1));
  }
  torch::nn::Linear fc{nullptr};
};

// TinyModel with an auxiliary classifier "aux" beside "fc", as GoogLeNet
// and Inception v3 carry theirs: in training, forward() also runs "aux" on
// the same features and auxiliary_logits() gives its logits with
// `loss_weight`; in eval mode "aux" does not run. aux_forwards counts how
// often it ran.
class TinyAuxiliaryModel : public Model {
 public:
  explicit TinyAuxiliaryModel(double loss_weight, int64_t in_features = 4, int64_t classes = 3)
      : loss_weight_(loss_weight) {
    fc = register_module("fc", torch::nn::Linear(in_features, classes));
    aux = register_module("aux", torch::nn::Linear(in_features, classes));
  }
  torch::Tensor forward(const torch::Tensor& images) override {
    const torch::Tensor features = images.flatten(1);
    auxiliary_.clear();
    if (is_training()) {
      ++aux_forwards;
      auxiliary_.push_back({aux->forward(features), loss_weight_});
    }
    return fc->forward(features);
  }
  std::vector<AuxiliaryLogits> auxiliary_logits() const override { return auxiliary_; }
  std::vector<std::string> head_prefixes() const override { return {"fc.", "aux."}; }

  torch::nn::Linear fc{nullptr};
  torch::nn::Linear aux{nullptr};
  int aux_forwards = 0;

 private:
  const double loss_weight_;
  std::vector<AuxiliaryLogits> auxiliary_;
};

// A backbone (a 3x3 convolution "conv" and a BatchNorm "bn") and a head
// "fc", as a torchvision classifier is laid out: what pretrained weights,
// head replacement and freezing act on.
class TinyConvNet : public Model {
 public:
  TinyConvNet(int64_t classes, int64_t in_channels = 1, int64_t width = 4) {
    conv_ = register_module(
        "conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(in_channels, width, 3)));
    bn_ = register_module("bn", torch::nn::BatchNorm2d(width));
    fc_ = register_module("fc", torch::nn::Linear(width, classes));
  }
  torch::Tensor forward(const torch::Tensor& images) override {
    namespace F = torch::nn::functional;
    const torch::Tensor features = bn_(conv_(images)).relu();
    return fc_(F::adaptive_avg_pool2d(features, F::AdaptiveAvgPool2dFuncOptions({1, 1}))
                   .flatten(1));
  }
  std::vector<std::string> head_prefixes() const override { return {"fc."}; }

 private:
  torch::nn::Conv2d conv_{nullptr};
  torch::nn::BatchNorm2d bn_{nullptr};
  torch::nn::Linear fc_{nullptr};
};

}  // namespace testing
}  // namespace pipeline

#endif  // PIPELINE_TESTING_TINY_MODELS_H_
