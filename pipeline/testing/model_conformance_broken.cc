// Models that each break one rule of the model conformance suite,
// instantiated with it; conformance_self_test checks that exactly the broken
// rules' tests fail. Each is a small classifier with one thing done wrong;
// small_classifier, done right, is there to show the torchvision checks
// pass where nothing is wrong.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/empty.pb.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/testing/model_conformance.h"
#include "pipeline/testing/model_conformance_broken.pb.h"
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

// conv -> BatchNorm -> ReLU -> global average pool -> dropout -> fc,
// keeping every rule; the broken ones override one step or change one thing
// at construction. tools/fixtures/conformance_small_classifier.py writes its
// torchvision-style fixtures (pipeline/testing/testdata) from the same
// network in PyTorch.
class SmallClassifier : public Model {
 public:
  explicit SmallClassifier(const ModelContext& context, double dropout = 0)
      : SmallClassifier(context, Layout{}, dropout) {}

  torch::Tensor forward(const torch::Tensor& images) override {
    const torch::Tensor features = Normalize(Convolve(Input(images))).relu();
    return Logits(fc_(torch::dropout(features.mean({2, 3}), dropout_, is_training())));
  }

  std::vector<std::string> head_prefixes() const override { return {head_ + "."}; }

 protected:
  // What a broken one changes at construction.
  struct Layout {
    std::string head = "fc";
    bool head_bias = true;
    double batch_norm_eps = 1e-5;

    static Layout HeadNamed(const std::string& name) {
      Layout layout;
      layout.head = name;
      return layout;
    }
    static Layout WithoutHeadBias() {
      Layout layout;
      layout.head_bias = false;
      return layout;
    }
    static Layout BatchNormEps(double eps) {
      Layout layout;
      layout.batch_norm_eps = eps;
      return layout;
    }
  };

  SmallClassifier(const ModelContext& context, const Layout& layout, double dropout = 0)
      : in_channels_(context.input_channels), head_(layout.head), dropout_(dropout) {
    conv_ = register_module(
        "conv", torch::nn::Conv2d(
                    torch::nn::Conv2dOptions(in_channels_, kWidth, 3).padding(1).bias(false)));
    bn_ = register_module(
        "bn",
        torch::nn::BatchNorm2d(torch::nn::BatchNorm2dOptions(kWidth).eps(layout.batch_norm_eps)));
    fc_ = register_module(
        head_, torch::nn::Linear(
                   torch::nn::LinearOptions(kWidth, context.num_classes).bias(layout.head_bias)));
  }

  virtual torch::Tensor Input(const torch::Tensor& images) { return images; }
  virtual torch::Tensor Convolve(const torch::Tensor& x) { return conv_(x); }
  virtual torch::Tensor Normalize(const torch::Tensor& x) { return bn_(x); }
  virtual torch::Tensor Logits(const torch::Tensor& logits) { return logits; }

  const int64_t in_channels_;
  const std::string head_;
  const double dropout_;
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

// Calls its head "classifier", where torchvision's has "fc": the state_dict
// keys differ from torchvision's.
class MisnamedHead : public SmallClassifier {
 public:
  explicit MisnamedHead(const ModelContext& context)
      : SmallClassifier(context, Layout::HeadNamed("classifier")) {}
};

// Keeps its head's bias in a buffer: the same state_dict as torchvision's,
// but fewer parameters, and a bias that never trains.
class BiasAsBuffer : public SmallClassifier {
 public:
  explicit BiasAsBuffer(const ModelContext& context)
      : SmallClassifier(context, Layout::WithoutHeadBias()) {
    bias_ = fc_->register_buffer("bias", torch::zeros({context.num_classes}));
  }

 protected:
  torch::Tensor Logits(const torch::Tensor& logits) override { return logits + bias_; }

 private:
  torch::Tensor bias_;
};

// BatchNorm with eps 1e-3, where torch's default is 1e-5: torchvision's
// state_dict, other logits.
class OtherBatchNormEps : public SmallClassifier {
 public:
  explicit OtherBatchNormEps(const ModelContext& context)
      : SmallClassifier(context, Layout::BatchNormEps(1e-3)) {}
};

// Creates its head's bias not requiring grad: freeze_backbone leaves less
// than the head trainable.
class FrozenHeadBias : public SmallClassifier {
 public:
  explicit FrozenHeadBias(const ModelContext& context) : SmallClassifier(context) {
    fc_->bias.set_requires_grad(false);
  }
};

// Scales the logits by a parameter clamped to at most 1, starting at 2: its
// gradient is always a defined zero, so no step ever moves it.
class ZeroGradientScale : public SmallClassifier {
 public:
  explicit ZeroGradientScale(const ModelContext& context) : SmallClassifier(context) {
    scale_ = register_parameter("scale", torch::full({1}, 2.0));
  }

 protected:
  torch::Tensor Logits(const torch::Tensor& logits) override {
    return logits * scale_.clamp_max(1);
  }

 private:
  torch::Tensor scale_;
};

// Declares a depth order (for layer_decay) that it does not have.
class ClaimsADepthOrder : public SmallClassifier {
 public:
  using SmallClassifier::SmallClassifier;
};

template <typename T>
void RegisterModel(const char* name) {
  static const PluginRegistration<Model, Empty> registration(
      name, "broken on purpose",
      [](const Empty&, const ModelContext& context) -> absl::StatusOr<std::unique_ptr<Model>> {
        return std::make_unique<T>(context);
      });
}

absl::StatusOr<std::unique_ptr<Model>> CreateSmallClassifier(const SmallClassifierOptions& options,
                                                             const ModelContext& context) {
  return std::make_unique<SmallClassifier>(context, options.dropout());
}

absl::Status ValidateSmallClassifierOptions(const SmallClassifierOptions& options) {
  if (!(options.dropout() >= 0 && options.dropout() <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("dropout: ", options.dropout(), " is not a probability from 0 to 1"));
  }
  return absl::OkStatus();
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
  RegisterModel<MisnamedHead>("broken_model_misnamed_head");
  RegisterModel<BiasAsBuffer>("broken_model_bias_as_buffer");
  RegisterModel<OtherBatchNormEps>("broken_model_other_batch_norm_eps");
  RegisterModel<FrozenHeadBias>("broken_model_frozen_head_bias");
  RegisterModel<ZeroGradientScale>("broken_model_zero_gradient_scale");
  RegisterModel<ClaimsADepthOrder>("broken_model_claims_a_depth_order");
  // The same small classifier, with its dropout checked or not.
  static const PluginRegistration<Model, SmallClassifierOptions> small_classifier(
      "small_classifier", "keeps every rule", CreateSmallClassifier,
      ValidateSmallClassifierOptions);
  static const PluginRegistration<Model, SmallClassifierOptions> accepts_any_dropout(
      "broken_model_accepts_any_dropout", "broken on purpose", CreateSmallClassifier);
  return true;
}();
// After the registration above, which the traits need.
PIPELINE_PLUGIN_TRAITS(Model, "broken_model_claims_a_depth_order",
                       ModelTraits{.has_depth_order = true});

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
BROKEN_MODEL(broken_model_frozen_head_bias);
BROKEN_MODEL(broken_model_zero_gradient_scale);
BROKEN_MODEL(broken_model_accepts_any_dropout);
BROKEN_MODEL(broken_model_claims_a_depth_order);

// Checked against the fixtures of the PyTorch SmallClassifier, which
// stands in for a torchvision constructor; small_classifier shows they pass.
// `parity`: whether its logits are compared too (broken_model_misnamed_head's
// keys differ, and so would the deterministic weights drawn from them;
// broken_model_bias_as_buffer's bias is a buffer, which the rule leaves as
// built).
#define BROKEN_MODEL_WITH_FIXTURES(name, parity)                                      \
  INSTANTIATE_TEST_SUITE_P(                                                           \
      name, ModelConformanceTest,                                                     \
      ::testing::Values(ModelConformanceParams{#name, "", 8, "small_classifier",      \
                                               "pipeline/testing/testdata", parity}), \
      ModelConformanceTestName)

BROKEN_MODEL_WITH_FIXTURES(small_classifier, true);
BROKEN_MODEL_WITH_FIXTURES(broken_model_misnamed_head, false);
BROKEN_MODEL_WITH_FIXTURES(broken_model_bias_as_buffer, false);
BROKEN_MODEL_WITH_FIXTURES(broken_model_other_batch_norm_eps, true);

}  // namespace
}  // namespace testing
}  // namespace pipeline
