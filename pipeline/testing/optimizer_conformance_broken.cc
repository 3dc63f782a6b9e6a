// Optimizers that each break one rule of the optimizer conformance suite,
// instantiated with it; conformance_self_test checks that exactly the broken
// rules' tests fail. Each is torch's SGD with one thing done wrong.

#include <memory>
#include <utility>
#include <vector>

#include "google/protobuf/empty.pb.h"
#include "pipeline/interfaces/optimizer.h"
#include "pipeline/testing/optimizer_conformance.h"
#include "torch/optim/sgd.h"
#include "torch/types.h"

namespace pipeline {
namespace testing {
namespace {

using google::protobuf::Empty;
using torch::optim::SGD;

torch::optim::SGDOptions BrokenSgdOptions() { return torch::optim::SGDOptions(0.1).momentum(0.9); }

// Steps along the gradient's direction only, dividing by its norm without
// a guard: a zero gradient gives NaN.
class NormalizesGradients : public SGD {
 public:
  explicit NormalizesGradients(const OptimizerContext& context)
      : SGD(TorchParamGroups(context, BrokenSgdOptions()), BrokenSgdOptions()) {}
  torch::Tensor step(LossClosure closure = nullptr) override {
    {
      torch::NoGradGuard no_grad;
      for (auto& group : param_groups()) {
        for (auto& p : group.params()) {
          if (p.grad().defined()) p.mutable_grad().div_(p.grad().norm());
        }
      }
    }
    return SGD::step(closure);
  }
};

// Saves its param groups but not its momentum buffers.
class DropsMomentumOnSave : public SGD {
 public:
  explicit DropsMomentumOnSave(const OptimizerContext& context)
      : SGD(TorchParamGroups(context, BrokenSgdOptions()), BrokenSgdOptions()) {}
  void save(torch::serialize::OutputArchive& archive) const override {
    SGD stateless(param_groups(), static_cast<const torch::optim::SGDOptions&>(defaults()));
    stateless.save(archive);
  }
};

// Every param group steps with the first group's options.
class OneOptionsForAllGroups : public SGD {
 public:
  explicit OneOptionsForAllGroups(const OptimizerContext& context)
      : SGD(TorchParamGroups(context, BrokenSgdOptions()), BrokenSgdOptions()) {}
  torch::Tensor step(LossClosure closure = nullptr) override {
    for (size_t g = 1; g < param_groups().size(); ++g) {
      param_groups()[g].set_options(param_groups()[0].options().clone());
    }
    return SGD::step(closure);
  }
};

// Steps with the learning rates its groups had at its first step, whatever
// they were set to since (its options still say what was set).
class IgnoresLearningRateChanges : public SGD {
 public:
  explicit IgnoresLearningRateChanges(const OptimizerContext& context)
      : SGD(TorchParamGroups(context, BrokenSgdOptions()), BrokenSgdOptions()) {}
  torch::Tensor step(LossClosure closure = nullptr) override {
    std::vector<double> set;
    for (size_t g = 0; g < param_groups().size(); ++g) {
      torch::optim::OptimizerOptions& options = param_groups()[g].options();
      if (g == first_lr_.size()) first_lr_.push_back(options.get_lr());
      set.push_back(options.get_lr());
      options.set_lr(first_lr_[g]);
    }
    torch::Tensor loss = SGD::step(closure);
    for (size_t g = 0; g < set.size(); ++g) param_groups()[g].options().set_lr(set[g]);
    return loss;
  }

 private:
  std::vector<double> first_lr_;
};

// Decays every parameter, those without a gradient too.
class DecaysParametersWithoutGradients : public SGD {
 public:
  explicit DecaysParametersWithoutGradients(const OptimizerContext& context)
      : SGD(TorchParamGroups(context, BrokenSgdOptions()), BrokenSgdOptions()) {}
  torch::Tensor step(LossClosure closure = nullptr) override {
    {
      torch::NoGradGuard no_grad;
      for (auto& group : param_groups()) {
        for (auto& p : group.params()) p.mul_(1 - group.options().get_lr() * 0.01);
      }
    }
    return SGD::step(closure);
  }
};

// Gives every group the optimizer's own weight decay, whatever the core
// asked for.
class IgnoresGroupWeightDecay : public SGD {
 public:
  explicit IgnoresGroupWeightDecay(const OptimizerContext& context)
      : SGD(WithoutWeightDecays(context), BrokenSgdOptions()) {}

 private:
  static std::vector<torch::optim::OptimizerParamGroup> WithoutWeightDecays(
      OptimizerContext context) {
    for (OptimizerParameterGroup& group : context.groups) group.weight_decay.reset();
    return TorchParamGroups(context, BrokenSgdOptions());
  }
};

template <typename T>
void RegisterOptimizer(const char* name) {
  static const PluginRegistration<Optimizer, Empty> registration(
      name, "broken on purpose",
      [](const Empty&,
         const OptimizerContext& context) -> absl::StatusOr<std::unique_ptr<Optimizer>> {
        return std::make_unique<T>(context);
      });
}

const bool kRegistered = [] {
  RegisterOptimizer<NormalizesGradients>("broken_optimizer_normalizes_gradients");
  RegisterOptimizer<DropsMomentumOnSave>("broken_optimizer_drops_momentum_on_save");
  RegisterOptimizer<OneOptionsForAllGroups>("broken_optimizer_one_options_for_all_groups");
  RegisterOptimizer<IgnoresLearningRateChanges>("broken_optimizer_ignores_lr_changes");
  RegisterOptimizer<DecaysParametersWithoutGradients>("broken_optimizer_decays_gradless");
  RegisterOptimizer<IgnoresGroupWeightDecay>("broken_optimizer_ignores_group_weight_decay");
  return true;
}();

#define BROKEN_OPTIMIZER(name)                                                       \
  INSTANTIATE_TEST_SUITE_P(name, OptimizerConformanceTest,                           \
                           ::testing::Values(OptimizerConformanceParams{#name, ""}), \
                           OptimizerConformanceTestName)

BROKEN_OPTIMIZER(broken_optimizer_normalizes_gradients);
BROKEN_OPTIMIZER(broken_optimizer_drops_momentum_on_save);
BROKEN_OPTIMIZER(broken_optimizer_one_options_for_all_groups);
BROKEN_OPTIMIZER(broken_optimizer_ignores_lr_changes);
BROKEN_OPTIMIZER(broken_optimizer_decays_gradless);
BROKEN_OPTIMIZER(broken_optimizer_ignores_group_weight_decay);

}  // namespace
}  // namespace testing
}  // namespace pipeline
