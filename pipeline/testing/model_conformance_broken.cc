// Models that each break one rule of the model conformance suite,
// instantiated with it; conformance_self_test checks that exactly the broken
// rules' tests fail. Each is a small classifier with one thing done wrong.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/empty.pb.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/testing/model_conformance.h"
#include "torch/nn/modules/batchnorm.h"
#include "torch/nn/modules/conv.h"
#include "torch/nn/modules/linear.h"
#include "torch/types.h"
#include "torch/utils.h"

namespace pipeline {
namespace testing {
namespace {

using google::protobuf::Empty;

constexpr int64_t kWidth = 4;

// conv -> BatchNorm -> ReLU -> global average pool -> fc, keeping every
// rule; the broken ones override one step.
class SmallClassifier : public Model {
 public:
  explicit SmallClassifier(const ModelContext& context) : in_channels_(context.input_channels) {
    conv_ = register_module(
        "conv", torch::nn::Conv2d(
                    torch::nn::Conv2dOptions(in_channels_, kWidth, 3).padding(1).bias(false)));
    bn_ = register_module("bn", torch::nn::BatchNorm2d(kWidth));
    fc_ = register_module("fc", torch::nn::Linear(kWidth, context.num_classes));
  }

  torch::Tensor forward(const torch::Tensor& images) override {
    const torch::Tensor features = Normalize(Convolve(Input(images))).relu();
    return Logits(fc_(features.mean({2, 3})));
  }

  std::vector<std::string> head_prefixes() const override { return {"fc."}; }

 protected:
  virtual torch::Tensor Input(const torch::Tensor& images) { return images; }
  virtual torch::Tensor Convolve(const torch::Tensor& x) { return conv_(x); }
  virtual torch::Tensor Normalize(const torch::Tensor& x) { return bn_(x); }
  virtual torch::Tensor Logits(const torch::Tensor& logits) { return logits; }

  const int64_t in_channels_;
  torch::nn::Conv2d conv_{nullptr};
  torch::nn::BatchNorm2d bn_{nullptr};
  torch::nn::Linear fc_{nullptr};
};

// squeeze()s the logits: a batch of one gives a vector, not a row.
class SqueezesLogits : public SmallClassifier {
 public:
  using SmallClassifier::SmallClassifier;

 protected:
  torch::Tensor Logits(const torch::Tensor& logits) override { return logits.squeeze(); }
};

// Jitters the logits in eval mode too: the same images give other logits,
// if only in the last bits.
class JittersInEval : public SmallClassifier {
 public:
  using SmallClassifier::SmallClassifier;

 protected:
  torch::Tensor Logits(const torch::Tensor& logits) override {
    return logits + 1e-7 * torch::randn_like(logits);
  }
};

// Normalises with the batch's statistics in eval mode too.
class BatchStatisticsInEval : public SmallClassifier {
 public:
  using SmallClassifier::SmallClassifier;

 protected:
  torch::Tensor Normalize(const torch::Tensor& x) override {
    return torch::batch_norm(x, bn_->weight, bn_->bias, /*running_mean=*/{}, /*running_var=*/{},
                             /*training=*/true, /*momentum=*/0.1, /*eps=*/1e-5,
                             /*cudnn_enabled=*/false);
  }
};

// Holds a parameter that forward() never uses.
class UnusedParameter : public SmallClassifier {
 public:
  explicit UnusedParameter(const ModelContext& context) : SmallClassifier(context) {
    register_parameter("temperature", torch::ones({1}));
  }
};

// Names a head it does not have.
class HeadNamesNothing : public SmallClassifier {
 public:
  using SmallClassifier::SmallClassifier;
  std::vector<std::string> head_prefixes() const override { return {"classifier."}; }
};

// Numbers its constructions in a buffer's name.
class CountedBufferName : public SmallClassifier {
 public:
  explicit CountedBufferName(const ModelContext& context) : SmallClassifier(context) {
    static std::atomic<int> constructions{0};
    register_buffer(absl::StrCat("built_", constructions++), torch::zeros({1}));
  }
};

// Starts its head's bias from a count of constructions, not from torch's
// seeded generator.
class UnseededInit : public SmallClassifier {
 public:
  explicit UnseededInit(const ModelContext& context) : SmallClassifier(context) {
    static std::atomic<int> constructions{0};
    torch::NoGradGuard no_grad;
    fc_->bias.fill_(0.01 * constructions++);
  }
};

// Reads the convolution's output memory as if it were contiguous, which a
// channels_last output is not.
class ReadsMemoryAsContiguous : public SmallClassifier {
 public:
  using SmallClassifier::SmallClassifier;

 protected:
  torch::Tensor Convolve(const torch::Tensor& x) override {
    const torch::Tensor y = conv_(x);
    const int64_t height = y.size(2), width = y.size(3);
    return y.as_strided(y.sizes(), {y.size(1) * height * width, height * width, width, 1});
  }
};

// Averages whatever channels it is given into the ones it was built for.
class TakesAnyChannels : public SmallClassifier {
 public:
  using SmallClassifier::SmallClassifier;

 protected:
  torch::Tensor Input(const torch::Tensor& images) override {
    if (images.size(1) == in_channels_) return images;
    return images.mean(1, /*keepdim=*/true).expand({-1, in_channels_, -1, -1});
  }
};

template <typename T>
void RegisterModel(const char* name) {
  static const PluginRegistration<Model, Empty> registration(
      name, "broken on purpose",
      [](const Empty&, const ModelContext& context) -> absl::StatusOr<std::unique_ptr<Model>> {
        return std::make_unique<T>(context);
      });
}

const bool kRegistered = [] {
  RegisterModel<SqueezesLogits>("broken_model_squeezes_logits");
  RegisterModel<JittersInEval>("broken_model_jitters_in_eval");
  RegisterModel<BatchStatisticsInEval>("broken_model_batch_statistics_in_eval");
  RegisterModel<UnusedParameter>("broken_model_unused_parameter");
  RegisterModel<HeadNamesNothing>("broken_model_head_names_nothing");
  RegisterModel<CountedBufferName>("broken_model_counted_buffer_name");
  RegisterModel<UnseededInit>("broken_model_unseeded_init");
  RegisterModel<ReadsMemoryAsContiguous>("broken_model_reads_memory_as_contiguous");
  RegisterModel<TakesAnyChannels>("broken_model_takes_any_channels");
  return true;
}();

// 8x8 images: small, and more than one value per channel for the batch
// statistics of a single image (broken_model_batch_statistics_in_eval).
#define BROKEN_MODEL(name)                                                          \
  INSTANTIATE_TEST_SUITE_P(name, ModelConformanceTest,                              \
                           ::testing::Values(ModelConformanceParams{#name, "", 8}), \
                           ModelConformanceTestName)

BROKEN_MODEL(broken_model_squeezes_logits);
BROKEN_MODEL(broken_model_jitters_in_eval);
BROKEN_MODEL(broken_model_batch_statistics_in_eval);
BROKEN_MODEL(broken_model_unused_parameter);
BROKEN_MODEL(broken_model_head_names_nothing);
BROKEN_MODEL(broken_model_counted_buffer_name);
BROKEN_MODEL(broken_model_unseeded_init);
BROKEN_MODEL(broken_model_reads_memory_as_contiguous);
BROKEN_MODEL(broken_model_takes_any_channels);

}  // namespace
}  // namespace testing
}  // namespace pipeline
