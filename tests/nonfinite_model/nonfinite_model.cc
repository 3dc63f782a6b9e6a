// model `nonfinite`, a plugin library for tests of faults: average-pooled
// pixels into a linear head, plus a parameter `poison` (one zero) that the
// chosen training passes route through sqrt. sqrt(0) * 0 adds nothing to the
// logits, so the loss stays finite, but its gradient there is 0 * inf = NaN:
// a real non-finite gradient at a known step, for the trainer's check. It
// can also make one rank's pass hang forever, for ddp's timeout.
//
//   model {
//     name: "nonfinite"
//     options { [type.googleapis.com/pipeline_test.NonFiniteModelOptions] { nan_gradient_at: 3 } }
//   }

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ATen/ops/adaptive_avg_pool2d.h"
#include "ATen/ops/zeros.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pipeline/interfaces/model.h"
#include "tests/nonfinite_model/nonfinite_model.pb.h"
#include "torch/nn/modules/linear.h"

namespace pipeline_test {
namespace {

using pipeline::Model;
using pipeline::ModelContext;

class NonFiniteModel : public Model {
 public:
  NonFiniteModel(const NonFiniteModelOptions& options, int64_t channels, int64_t classes)
      : nan_gradient_at_(options.nan_gradient_at().begin(), options.nan_gradient_at().end()) {
    const char* rank_variable = std::getenv("RANK");
    const int rank = rank_variable == nullptr ? 0 : std::atoi(rank_variable);
    if (rank == options.nan_loss_rank()) {
      nan_loss_at_.assign(options.nan_loss_at().begin(), options.nan_loss_at().end());
    }
    if (rank == options.hang_rank()) hang_at_ = options.hang_at();
    fc_ = register_module("fc", torch::nn::Linear(channels * 4 * 4, classes));
    poison_ = register_parameter("poison", at::zeros({1}));
  }

  torch::Tensor forward(const torch::Tensor& images) override {
    torch::Tensor logits = fc_->forward(at::adaptive_avg_pool2d(images, {4, 4}).flatten(1));
    if (!is_training()) return logits;
    ++passes_;
    while (passes_ == hang_at_) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto chosen = [this](const std::vector<int>& passes) {
      return std::find(passes.begin(), passes.end(), passes_) != passes.end();
    };
    // Every pass uses `poison`, so it always has a gradient (ddp wants one).
    logits = logits + (chosen(nan_gradient_at_) ? poison_.sqrt() : poison_) * 0;
    if (chosen(nan_loss_at_)) logits = logits * std::numeric_limits<float>::quiet_NaN();
    return logits;
  }

  std::vector<std::string> head_prefixes() const override { return {"fc."}; }

 private:
  std::vector<int> nan_gradient_at_;
  std::vector<int> nan_loss_at_;
  int hang_at_ = 0;  // 0: never
  int passes_ = 0;
  torch::nn::Linear fc_{nullptr};
  torch::Tensor poison_;
};

absl::StatusOr<std::unique_ptr<Model>> CreateNonFiniteModel(const NonFiniteModelOptions& options,
                                                            const ModelContext& context) {
  if (context.num_classes < 1 || context.input_channels < 1) {
    return absl::InvalidArgumentError("needs the training data's classes and channels");
  }
  return std::make_unique<NonFiniteModel>(options, context.input_channels, context.num_classes);
}

PIPELINE_REGISTER_PLUGIN(Model, "nonfinite", NonFiniteModelOptions,
                         "A linear classifier with NaN gradients or losses on chosen passes "
                         "(tests only)",
                         CreateNonFiniteModel);

}  // namespace
}  // namespace pipeline_test
