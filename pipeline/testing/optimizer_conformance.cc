#include "pipeline/testing/optimizer_conformance.h"

#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "pipeline/interfaces/optimizer.h"
#include "pipeline/testing/conformance_config.h"
#include "torch/optim/sgd.h"
#include "torch/serialize/input-archive.h"
#include "torch/serialize/output-archive.h"
#include "torch/types.h"

namespace pipeline {
namespace testing {

void PrintTo(const OptimizerConformanceParams& params, std::ostream* out) {
  *out << "optimizer \"" << params.plugin << "\" with options {" << params.options << "}";
}

std::string OptimizerConformanceTestName(
    const ::testing::TestParamInfo<OptimizerConformanceParams>& info) {
  return ConformanceInstanceName(info.index);
}

namespace {

using Tensors = std::vector<torch::Tensor>;

// Steps before the state is saved, and after it is restored.
constexpr int kSteps = 3;
constexpr int kMoreSteps = 3;
// The second param group's learning rate, as a share of the first's.
constexpr double kSecondGroupShare = 0.5;
// A weight decay a group is given of its own.
constexpr double kOwnWeightDecay = 0.0123;

// The parameters, in this order: a layer's weight and bias and a norm's scale.
constexpr const char* kNames[] = {"weight", "bias", "norm"};

Tensors MakeParameters(torch::ScalarType dtype) {
  torch::manual_seed(5);
  const torch::Tensor weight = torch::randn({4, 3}, dtype);
  const torch::Tensor bias = torch::randn({4}, dtype);
  const torch::Tensor norm = 1 + 0.1 * torch::randn({3}, dtype);
  return {weight.requires_grad_(), bias.requires_grad_(), norm.requires_grad_()};
}

// Fresh leaves with the same values and no gradients: what a checkpoint's
// weights become in the model a resumed run builds.
Tensors Copies(const Tensors& tensors) {
  Tensors copies;
  for (const torch::Tensor& t : tensors) copies.push_back(t.detach().clone().requires_grad_());
  return copies;
}

// One gradient per parameter for each of `steps` steps, the same every run.
std::vector<Tensors> GradientSequence(const Tensors& parameters, int steps) {
  torch::manual_seed(100);
  std::vector<Tensors> sequence(steps);
  for (Tensors& gradients : sequence) {
    for (const torch::Tensor& p : parameters) gradients.push_back(torch::randn_like(p));
  }
  return sequence;
}

// Copies, since an optimizer may change a gradient in place.
void SetGradients(const Tensors& parameters, const Tensors& gradients) {
  for (size_t i = 0; i < parameters.size(); ++i) {
    parameters[i].mutable_grad() = gradients[i].clone();
  }
}

void TakeSteps(Optimizer& optimizer, const Tensors& parameters,
               const std::vector<Tensors>& gradients, int from, int to) {
  for (int step = from; step < to; ++step) {
    SetGradients(parameters, gradients[step]);
    optimizer.step();
  }
}

// The names of the parameters that are not bitwise `expected`'s, with how
// far off they are; "" when all are. `names` defaults to kNames.
std::string Differing(const Tensors& actual, const Tensors& expected,
                      const std::vector<std::string>& names = {}) {
  std::vector<std::string> differing;
  for (size_t i = 0; i < expected.size(); ++i) {
    const torch::Tensor a = actual[i].detach();
    const torch::Tensor e = expected[i].detach();
    if (!torch::equal(a, e)) {
      differing.push_back(absl::StrCat(names.empty() ? kNames[i] : names[i], " (by up to ",
                                       (a - e).abs().max().item<double>(), ")"));
    }
  }
  return absl::StrJoin(differing, ", ");
}

absl::StatusOr<std::unique_ptr<Optimizer>> CreateWith(const OptimizerConformanceParams& params,
                                                      const OptimizerContext& context) {
  absl::StatusOr<PluginConfig> config = ConformanceConfig<Optimizer>(params.plugin, params.options);
  if (!config.ok()) return config.status();
  return Registry<Optimizer>::Global().Create(*config, context);
}

absl::StatusOr<std::unique_ptr<Optimizer>> Create(const OptimizerConformanceParams& params,
                                                  const Tensors& parameters) {
  return CreateWith(params, OptimizerContext::OneGroup(parameters));
}

// The plugin's optimizer over the weight, plus a second param group for the
// bias and the norm at kSecondGroupShare of its learning rate, as the core
// asks for them (the way parameters that get other treatment, such as
// biases and norms, are given a group of their own).
absl::StatusOr<std::unique_ptr<Optimizer>> CreateGrouped(const OptimizerConformanceParams& params,
                                                         const Tensors& parameters) {
  OptimizerContext context = OptimizerContext::OneGroup({parameters[0]});
  context.groups.push_back({{parameters[1], parameters[2]}, kSecondGroupShare});
  return CreateWith(params, context);
}

// The optimizer's state as a checkpoint holds it (pipeline/checkpoint):
// Optimizer::save into an archive nested in the checkpoint's, as bytes.
std::string SavedState(const Optimizer& optimizer) {
  torch::serialize::OutputArchive state;
  optimizer.save(state);
  torch::serialize::OutputArchive checkpoint;
  checkpoint.write("optimizer", state);
  std::ostringstream bytes;
  checkpoint.save_to(bytes);
  return bytes.str();
}

// What a resumed run does with it (RestoreOptimizerState).
void Restore(const std::string& bytes, Optimizer& optimizer) {
  std::istringstream in(bytes);
  torch::serialize::InputArchive checkpoint;
  checkpoint.load_from(in);
  torch::serialize::InputArchive state;
  checkpoint.read("optimizer", state);
  optimizer.load(state);
}

// A param group's options as they serialize, by name, for any options type.
using OptionValues = std::map<std::string, c10::IValue>;

OptionValues OptionsOf(const torch::optim::OptimizerParamGroup& group) {
  torch::serialize::OutputArchive out;
  group.options().serialize(out);
  std::ostringstream bytes;
  out.save_to(bytes);
  std::istringstream in(bytes.str());
  torch::serialize::InputArchive archive;
  archive.load_from(in);
  OptionValues values;
  for (const std::string& key : archive.keys()) archive.read(key, values[key]);
  return values;
}

std::string Describe(const OptionValues& values) {
  std::ostringstream out;
  out << "{";
  for (const auto& [name, value] : values) out << " " << name << ": " << value;
  out << " }";
  return out.str();
}

bool AllFinite(const torch::Tensor& t) { return torch::isfinite(t.detach()).all().item<bool>(); }

#define CREATE_OR_RETURN(optimizer, create)                                   \
  absl::StatusOr<std::unique_ptr<Optimizer>> optimizer##_created_ = (create); \
  ASSERT_TRUE(optimizer##_created_.ok()) << optimizer##_created_.status();    \
  Optimizer& optimizer = **optimizer##_created_

TEST_P(OptimizerConformanceTest, AStepWithZeroGradientsKeepsParametersFiniteAndZerosAtZero) {
  Tensors parameters = MakeParameters(torch::kFloat);
  parameters[1] = torch::zeros_like(parameters[1]).requires_grad_();
  CREATE_OR_RETURN(optimizer, CreateGrouped(GetParam(), parameters));
  for (int step = 0; step < kSteps; ++step) {
    for (const torch::Tensor& p : parameters) p.mutable_grad() = torch::zeros_like(p);
    optimizer.step();
  }
  for (size_t i = 0; i < parameters.size(); ++i) {
    EXPECT_TRUE(AllFinite(parameters[i]))
        << kNames[i] << " is not finite after " << kSteps << " steps with zero gradients";
  }
  EXPECT_TRUE(torch::equal(parameters[1].detach(), torch::zeros_like(parameters[1])))
      << "the bias, zero with zero gradients, moved to " << parameters[1]
      << ": neither a gradient nor weight decay moves a zero";
}

TEST_P(OptimizerConformanceTest, SavingAndRestoringTheStateResumesBitwise) {
  const Tensors initial = MakeParameters(torch::kFloat);
  const std::vector<Tensors> gradients = GradientSequence(initial, kSteps + kMoreSteps);

  const Tensors uninterrupted = Copies(initial);
  CREATE_OR_RETURN(reference, CreateGrouped(GetParam(), uninterrupted));
  TakeSteps(reference, uninterrupted, gradients, 0, kSteps + kMoreSteps);
  ASSERT_NE(Differing(uninterrupted, initial), "")
      << "the steps moved nothing: the comparison would show nothing";

  const Tensors saved = Copies(initial);
  CREATE_OR_RETURN(original, CreateGrouped(GetParam(), saved));
  TakeSteps(original, saved, gradients, 0, kSteps);
  const std::string state = SavedState(original);

  const Tensors restored = Copies(saved);
  CREATE_OR_RETURN(resumed, CreateGrouped(GetParam(), restored));
  ASSERT_NO_THROW(Restore(state, resumed)) << "the saved state does not load";
  TakeSteps(original, saved, gradients, kSteps, kSteps + kMoreSteps);
  TakeSteps(resumed, restored, gradients, kSteps, kSteps + kMoreSteps);
  EXPECT_EQ(Differing(restored, uninterrupted), "")
      << "saved after " << kSteps << " steps and restored into a fresh optimizer, " << kMoreSteps
      << " more steps differ from an uninterrupted run";
  EXPECT_EQ(Differing(saved, uninterrupted), "")
      << "saving the state changed how the saved optimizer goes on";
}

TEST_P(OptimizerConformanceTest, EachParamGroupStepsWithItsOwnOptionsAndKeepsThem) {
  const Tensors initial = MakeParameters(torch::kFloat);
  const std::vector<Tensors> gradients = GradientSequence(initial, kSteps);

  const Tensors grouped = Copies(initial);
  CREATE_OR_RETURN(optimizer, CreateGrouped(GetParam(), grouped));
  ASSERT_EQ(optimizer.param_groups().size(), 2u);
  const std::vector<OptionValues> options = {OptionsOf(optimizer.param_groups()[0]),
                                             OptionsOf(optimizer.param_groups()[1])};
  // The same parameters split over two optimizers of their own.
  const Tensors alone = Copies(initial);
  CREATE_OR_RETURN(weight_alone, Create(GetParam(), {alone[0]}));
  CREATE_OR_RETURN(rest_alone, Create(GetParam(), {alone[1], alone[2]}));
  torch::optim::OptimizerOptions& rest_options = rest_alone.param_groups()[0].options();
  rest_options.set_lr(rest_options.get_lr() * kSecondGroupShare);

  for (int step = 0; step < kSteps; ++step) {
    SetGradients(grouped, gradients[step]);
    SetGradients(alone, gradients[step]);
    optimizer.step();
    weight_alone.step();
    rest_alone.step();
  }
  EXPECT_EQ(Differing(grouped, alone), "")
      << "two param groups stepped otherwise than two optimizers of their own";
  for (size_t g = 0; g < options.size(); ++g) {
    const OptionValues after = OptionsOf(optimizer.param_groups()[g]);
    EXPECT_EQ(after, options[g]) << "param group " << g << "'s options were "
                                 << Describe(options[g]) << ", after " << kSteps
                                 << " steps they are " << Describe(after);
  }

  const Tensors restored = Copies(grouped);
  CREATE_OR_RETURN(resumed, CreateGrouped(GetParam(), restored));
  ASSERT_NO_THROW(Restore(SavedState(optimizer), resumed)) << "the saved state does not load";
  ASSERT_EQ(resumed.param_groups().size(), options.size());
  for (size_t g = 0; g < options.size(); ++g) {
    const OptionValues after = OptionsOf(resumed.param_groups()[g]);
    EXPECT_EQ(after, options[g]) << "param group " << g << "'s options were "
                                 << Describe(options[g]) << ", after a restore they are "
                                 << Describe(after);
  }
}

TEST_P(OptimizerConformanceTest, AGroupsOwnWeightDecayChangesThatGroupOnly) {
  const Tensors initial = MakeParameters(torch::kFloat);
  const std::vector<Tensors> gradients = GradientSequence(initial, kSteps);
  // The same steps with and without a weight decay of the weight's group's
  // own, one no plugin takes by default.
  std::vector<Tensors> results;
  for (const bool own_decay : {false, true}) {
    const Tensors parameters = Copies(initial);
    OptimizerContext context = OptimizerContext::OneGroup({parameters[0]});
    if (own_decay) context.groups[0].weight_decay = kOwnWeightDecay;
    context.groups.push_back({{parameters[1], parameters[2]}});
    CREATE_OR_RETURN(optimizer, CreateWith(GetParam(), context));
    TakeSteps(optimizer, parameters, gradients, 0, kSteps);
    results.push_back(parameters);
  }
  EXPECT_NE(Differing({results[1][0]}, {results[0][0]}, {"weight"}), "")
      << "the weight's group was given weight_decay " << kOwnWeightDecay
      << " and stepped as with the optimizer's own";
  EXPECT_EQ(Differing({results[1][1], results[1][2]}, {results[0][1], results[0][2]},
                      {"bias", "norm"}),
            "")
      << "another group's weight decay changed how the bias and norm group steps";
}

TEST_P(OptimizerConformanceTest, ZeroGradLeavesGradientsAsTorchsOwnOptimizerDoes) {
  const Tensors initial = MakeParameters(torch::kFloat);
  const std::vector<Tensors> gradients = GradientSequence(initial, 2);
  const Tensors parameters = Copies(initial);
  CREATE_OR_RETURN(optimizer, CreateGrouped(GetParam(), parameters));
  const Tensors expected = Copies(initial);
  torch::optim::SGD sgd(expected, torch::optim::SGDOptions(0.1));
  // After a step, so that the optimizer has state to keep.
  TakeSteps(optimizer, parameters, gradients, 0, 2);
  TakeSteps(sgd, expected, gradients, 0, 2);
  optimizer.zero_grad();
  sgd.zero_grad();
  for (size_t i = 0; i < parameters.size(); ++i) {
    const torch::Tensor& grad = parameters[i].grad();
    const torch::Tensor& torch_grad = expected[i].grad();
    ASSERT_EQ(grad.defined(), torch_grad.defined())
        << kNames[i] << "'s gradient is " << (grad.defined() ? "defined" : "undefined")
        << " after zero_grad; torch's own optimizer leaves it "
        << (torch_grad.defined() ? "defined" : "undefined");
    if (grad.defined()) {
      EXPECT_TRUE(torch::equal(grad, torch_grad))
          << kNames[i] << "'s gradient after zero_grad is " << grad << ", torch's own optimizer's "
          << torch_grad;
    }
  }
}

TEST_P(OptimizerConformanceTest, AParameterWithoutAGradientIsLeftAlone) {
  const Tensors initial = MakeParameters(torch::kFloat);
  const std::vector<Tensors> gradients = GradientSequence(initial, kSteps);
  // The bias gets no gradient (an unused layer's); the others step as they
  // would in an optimizer without it.
  const Tensors parameters = Copies(initial);
  CREATE_OR_RETURN(optimizer, Create(GetParam(), parameters));
  const Tensors others = Copies({initial[0], initial[2]});
  CREATE_OR_RETURN(without_bias, Create(GetParam(), others));
  for (int step = 0; step < kSteps; ++step) {
    const Tensors& g = gradients[step];
    SetGradients({parameters[0], parameters[2]}, {g[0], g[2]});
    SetGradients(others, {g[0], g[2]});
    ASSERT_NO_THROW(optimizer.step()) << "a parameter without a gradient made the step throw";
    without_bias.step();
  }
  EXPECT_FALSE(parameters[1].grad().defined());
  EXPECT_EQ(Differing({parameters[1]}, {initial[1]}, {"bias"}), "")
      << "a parameter without a gradient moved";
  EXPECT_EQ(Differing({parameters[0], parameters[2]}, others, {"weight", "norm"}), "")
      << "a parameter without a gradient changed how the others step";
}

TEST_P(OptimizerConformanceTest, ALearningRateSetBeforeAStepIsTheOneItUses) {
  // Double precision: the half-rate step is compared with half the full
  // one, and the difference of two parameter values is only as precise as
  // the values are.
  const Tensors initial = MakeParameters(torch::kDouble);
  const std::vector<Tensors> gradients = GradientSequence(initial, kSteps + 1);
  const std::vector<double> factors = {1.0, 0.5, 0.0};
  std::vector<Tensors> before, after;
  for (double factor : factors) {
    const Tensors parameters = Copies(initial);
    CREATE_OR_RETURN(optimizer, CreateGrouped(GetParam(), parameters));
    std::vector<double> base_lr;
    for (const auto& group : optimizer.param_groups()) base_lr.push_back(group.options().get_lr());
    TakeSteps(optimizer, parameters, gradients, 0, kSteps);
    before.push_back(Copies(parameters));
    // As the trainer applies its schedule.
    for (size_t g = 0; g < base_lr.size(); ++g) {
      optimizer.param_groups()[g].options().set_lr(base_lr[g] * factor);
    }
    TakeSteps(optimizer, parameters, gradients, kSteps, kSteps + 1);
    after.push_back(parameters);
  }
  ASSERT_EQ(Differing(before[1], before[0]), "") << "the same steps gave other parameters";
  ASSERT_EQ(Differing(before[2], before[0]), "") << "the same steps gave other parameters";
  ASSERT_NE(Differing(after[0], before[0]), "") << "a step at the full learning rate moved nothing";

  EXPECT_EQ(Differing(after[2], before[2]), "")
      << "a step after the learning rate was set to 0 moved parameters";
  for (size_t i = 0; i < initial.size(); ++i) {
    const torch::Tensor full = (after[0][i] - before[0][i]).detach();
    const torch::Tensor half = (after[1][i] - before[1][i]).detach();
    EXPECT_TRUE(torch::allclose(half, 0.5 * full, 1e-6, 1e-12))
        << kNames[i] << ": at half the learning rate the step moved it by\n"
        << half << "\nat the full rate by\n"
        << full;
  }
}

}  // namespace

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OptimizerConformanceTest);

}  // namespace testing
}  // namespace pipeline
