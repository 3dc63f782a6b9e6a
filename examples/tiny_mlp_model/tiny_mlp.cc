// model `tiny_mlp`, built as a plugin library outside train: average-pool the
// image to pool_size x pool_size, flatten, one hidden ReLU layer, a linear
// head. Small enough to train in seconds; its point is the build and the
// loading, not the accuracy.
//
//   bazel build //examples/tiny_mlp_model //tools:train
//   bazel-bin/tools/train
//       --plugin_library=bazel-bin/examples/tiny_mlp_model/libtiny_mlp_model.so
//       --config=examples/tiny_mlp_model/tiny_mlp.textproto
//
//   model {
//     name: "tiny_mlp"
//     options { [type.googleapis.com/example.TinyMlpOptions] { hidden_units: 32 } }
//   }

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ATen/ops/adaptive_avg_pool2d.h"
#include "ATen/ops/relu.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "examples/tiny_mlp_model/tiny_mlp.pb.h"
#include "pipeline/interfaces/model.h"
#include "torch/nn/modules/linear.h"

namespace example {
namespace {

using pipeline::Model;
using pipeline::ModelContext;

class TinyMlp : public Model {
 public:
  TinyMlp(int64_t channels, int64_t pool_size, int64_t hidden, int64_t classes)
      : pool_size_(pool_size) {
    hidden_ = register_module(
        "hidden", torch::nn::Linear(channels * pool_size * pool_size, hidden));
    fc_ = register_module("fc", torch::nn::Linear(hidden, classes));
  }

  torch::Tensor forward(const torch::Tensor& images) override {
    torch::Tensor x = at::adaptive_avg_pool2d(images, {pool_size_, pool_size_}).flatten(1);
    return fc_->forward(at::relu(hidden_->forward(x)));
  }

  std::vector<std::string> head_prefixes() const override { return {"fc."}; }

 private:
  int64_t pool_size_;
  torch::nn::Linear hidden_{nullptr};
  torch::nn::Linear fc_{nullptr};
};

absl::Status ValidateTinyMlpOptions(const TinyMlpOptions& options) {
  if (options.pool_size() < 1 || options.pool_size() > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("pool_size: ", options.pool_size(), "; must be 1..64"));
  }
  if (options.hidden_units() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("hidden_units: ", options.hidden_units(), "; must be at least 1"));
  }
  if (options.num_classes() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_classes: ", options.num_classes(), "; must be 0 (from the data) or more"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Model>> CreateTinyMlp(const TinyMlpOptions& options,
                                                     const ModelContext& context) {
  const int64_t classes = options.num_classes() > 0 ? options.num_classes() : context.num_classes;
  if (classes < 1 || context.input_channels < 1) {
    return absl::InvalidArgumentError(
        "needs the number of classes and input channels (num_classes, or training data)");
  }
  return std::make_unique<TinyMlp>(context.input_channels, options.pool_size(),
                                   options.hidden_units(), classes);
}

PIPELINE_REGISTER_PLUGIN(Model, "tiny_mlp", TinyMlpOptions,
                         "Average-pooled pixels into a one-hidden-layer MLP (a plugin library)",
                         CreateTinyMlp, ValidateTinyMlpOptions);

}  // namespace
}  // namespace example
