#include "pipeline/testing/strategy_conformance.h"

#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "pipeline/interfaces/communicator.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/interfaces/strategy.h"
#include "pipeline/testing/conformance_config.h"
#include "pipeline/testing/free_port.h"
#include "pipeline/testing/model_test_util.h"
#include "pipeline/util/status_macros.h"
#include "torch/nn/modules/linear.h"
#include "torch/optim/sgd.h"
#include "torch/types.h"
#include "torch/utils.h"

namespace pipeline {
namespace testing {

void PrintTo(const StrategyConformanceParams& params, std::ostream* out) {
  *out << "strategy \"" << params.plugin << "\" as " << params.processes
       << (params.processes == 1 ? " process" : " processes") << " with options {"
       << params.options << "}";
}

std::string StrategyConformanceTestName(
    const ::testing::TestParamInfo<StrategyConformanceParams>& info) {
  return ConformanceInstanceName(info.index);
}

namespace {

constexpr int64_t kBatch = 8;
constexpr int64_t kClasses = 3;
constexpr double kLearningRate = 0.5;
// "within 1e-5": gradients averaged in another order differ in the last bits.
constexpr double kRtol = 1e-5;
constexpr double kAtol = 1e-5;

// 3x2x2 images, two layers.
class ConformanceModel : public Model {
 public:
  ConformanceModel() {
    first = register_module("first", torch::nn::Linear(12, 6));
    second = register_module("second", torch::nn::Linear(6, kClasses));
  }
  torch::Tensor forward(const torch::Tensor& x) override {
    return second(torch::tanh(first(x.flatten(1))));
  }
  torch::nn::Linear first{nullptr}, second{nullptr};
};

ModelFactory Factory() {
  return []() -> absl::StatusOr<std::unique_ptr<Model>> {
    return std::make_unique<ConformanceModel>();
  };
}

std::unique_ptr<ConformanceModel> CopyOf(const ConformanceModel& weights) {
  auto model = std::make_unique<ConformanceModel>();
  CopyParameters(weights, *model);
  return model;
}

torch::Tensor CrossEntropy(const torch::Tensor& logits, const torch::Tensor& labels) {
  return torch::nll_loss(torch::log_softmax(logits, 1), labels);
}

using Parameters = std::map<std::string, torch::Tensor>;

Parameters ParametersOf(const torch::nn::Module& model) {
  Parameters parameters;
  for (const auto& p : model.named_parameters()) {
    parameters[p.key()] = p.value().detach().cpu().clone();
  }
  return parameters;
}

// "" when every parameter of `actual` is within tolerance of `expected`.
std::string Mismatch(const Parameters& actual, const Parameters& expected) {
  std::vector<std::string> differing;
  for (const auto& [name, value] : expected) {
    auto it = actual.find(name);
    if (it == actual.end()) {
      differing.push_back(name + " (missing)");
    } else if (!torch::allclose(it->second, value, kRtol, kAtol)) {
      differing.push_back(absl::StrCat(
          name, " (by up to ", (it->second - value).abs().max().item<double>(), ")"));
    }
  }
  return absl::StrJoin(differing, ", ");
}

struct Data {
  torch::Tensor images;
  torch::Tensor labels;
};

Data MakeData(int64_t batch, uint64_t seed) {
  torch::manual_seed(seed);
  return {torch::randn({batch, 3, 2, 2}), torch::randint(0, kClasses, {batch}, torch::kLong)};
}

// Rank `rank`'s contiguous share of `rows` rows starting at `start`.
Data Share(const Data& data, int64_t start, int64_t rows, int rank, int processes) {
  const int64_t each = rows / processes;
  return {data.images.narrow(0, start + rank * each, each),
          data.labels.narrow(0, start + rank * each, each)};
}

absl::StatusOr<std::unique_ptr<Strategy>> CreateStrategy(const std::string& plugin,
                                                         const std::string& options,
                                                         StrategyContext context = {}) {
  absl::StatusOr<PluginConfig> config = ConformanceConfig<Strategy>(plugin, options);
  if (!config.ok()) return config.status();
  return Registry<Strategy>::Global().Create(*config, context);
}

StrategyContext RankContext(int rank, int processes, int port) {
  StrategyContext context;
  context.seed = 3;
  std::map<std::string, std::string> environment = {
      {"RANK", std::to_string(rank)},
      {"WORLD_SIZE", std::to_string(processes)},
      {"LOCAL_RANK", std::to_string(rank)},
      {"LOCAL_WORLD_SIZE", std::to_string(processes)},
      {"MASTER_ADDR", "127.0.0.1"},
      {"MASTER_PORT", std::to_string(port)}};
  context.environment = [environment](const std::string& name) {
    auto it = environment.find(name);
    return it == environment.end() ? std::string() : it->second;
  };
  return context;
}

// Runs `body(rank, strategy)` for every rank of the plugin under test, each
// in its own thread with its own strategy instance (a distributed strategy
// meets its peers while it is built). Returns each rank's error, "" for
// none.
template <typename Body>
std::vector<std::string> OnEveryRank(const StrategyConformanceParams& params, Body body) {
  const int port = FreePort();
  std::vector<std::string> errors(params.processes);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < params.processes; ++rank) {
    threads.emplace_back([&, rank] {
      absl::StatusOr<std::unique_ptr<Strategy>> strategy =
          CreateStrategy(params.plugin, params.options, RankContext(rank, params.processes, port));
      absl::Status status = strategy.status();
      if (status.ok()) status = body(rank, **strategy);
      if (!status.ok()) errors[rank] = status.ToString();
    });
  }
  for (std::thread& thread : threads) thread.join();
  return errors;
}

void ExpectNoErrors(const std::vector<std::string>& errors) {
  for (size_t rank = 0; rank < errors.size(); ++rank) {
    EXPECT_EQ(errors[rank], "") << "rank " << rank;
  }
}

absl::Status Check(bool ok, const std::string& what) {
  return ok ? absl::OkStatus() : absl::InternalError(what);
}

// What `single` (and plain LibTorch, which it must equal) leaves after one
// step of `loss` over `batches` accumulated, from `initial`.
struct Reference {
  Parameters parameters;
  std::vector<StepOutput> outputs;
};

absl::StatusOr<Reference> SingleReference(const ConformanceModel& initial,
                                          const std::vector<Data>& batches,
                                          const LossFunction& loss) {
  absl::StatusOr<std::unique_ptr<Strategy>> single = CreateStrategy("single", "");
  if (!single.ok()) return single.status();
  std::unique_ptr<ConformanceModel> model = CopyOf(initial);
  RETURN_IF_ERROR((*single)->Prepare(*model, Factory()));
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(kLearningRate));
  optimizer.zero_grad();
  Reference reference;
  for (const Data& batch : batches) {
    absl::StatusOr<StepOutput> output =
        (*single)->ForwardBackward(*model, batch.images, batch.labels, loss);
    if (!output.ok()) return output.status();
    reference.outputs.push_back(*output);
  }
  RETURN_IF_ERROR((*single)->Step(optimizer));
  reference.parameters = ParametersOf(*model);
  return reference;
}

Parameters PlainLibTorch(const ConformanceModel& initial, const std::vector<Data>& batches,
                         const LossFunction& loss) {
  std::unique_ptr<ConformanceModel> model = CopyOf(initial);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(kLearningRate));
  optimizer.zero_grad();
  for (const Data& batch : batches) loss(model->forward(batch.images), batch.labels).backward();
  optimizer.step();
  return ParametersOf(*model);
}

absl::Status CheckOutput(const StepOutput& output, int64_t rows) {
  RETURN_IF_ERROR(Check(output.loss.defined() && output.loss.numel() == 1,
                        "StepOutput.loss is not a scalar"));
  RETURN_IF_ERROR(Check(output.loss.device().is_cpu() && !output.loss.requires_grad(),
                        "StepOutput.loss is not detached on the CPU"));
  RETURN_IF_ERROR(Check(output.logits.defined() && output.logits.dim() == 2 &&
                            output.logits.size(0) == rows && output.logits.size(1) == kClasses,
                        absl::StrCat("StepOutput.logits are not ", rows, " x ", kClasses)));
  RETURN_IF_ERROR(Check(output.logits.device().is_cpu() && !output.logits.requires_grad(),
                        "StepOutput.logits are not detached on the CPU"));
  return Check(std::isfinite(output.communication_wait_seconds) &&
                   output.communication_wait_seconds >= 0,
               absl::StrCat("StepOutput.communication_wait_seconds is ",
                            output.communication_wait_seconds));
}

absl::Status CheckParametersOn(const Model& model, const Strategy& strategy) {
  for (const auto& p : model.named_parameters()) {
    if (p.value().device() != strategy.device()) {
      return absl::InternalError(absl::StrCat("after Prepare, parameter ", p.key(), " is on ",
                                              p.value().device().str(), ", device() says ",
                                              strategy.device().str()));
    }
  }
  return absl::OkStatus();
}

class StrategyConformance {
 public:
  explicit StrategyConformance(const StrategyConformanceParams& params) : params_(params) {
    torch::manual_seed(17);
    initial_ = std::make_unique<ConformanceModel>();
  }
  const ConformanceModel& initial() const { return *initial_; }
  const StrategyConformanceParams& params() const { return params_; }

 private:
  StrategyConformanceParams params_;
  std::unique_ptr<ConformanceModel> initial_;
};

TEST_P(StrategyConformanceTest, OneStepOnTheWholeBatchLeavesSinglesParameters) {
  const StrategyConformanceParams params = GetParam();
  ASSERT_GE(params.processes, 1);
  ASSERT_EQ(kBatch % params.processes, 0) << "the batch of " << kBatch << " must split evenly";
  StrategyConformance setup(params);
  const Data data = MakeData(kBatch, 1);
  absl::StatusOr<Reference> single = SingleReference(setup.initial(), {data}, CrossEntropy);
  ASSERT_TRUE(single.ok()) << single.status();
  // The reference is right: single is plain LibTorch.
  ASSERT_EQ(Mismatch(single->parameters, PlainLibTorch(setup.initial(), {data}, CrossEntropy)),
            "")
      << "single differs from plain LibTorch";
  // The step is not a no-op (the comparison is not between untouched models).
  ASSERT_NE(Mismatch(single->parameters, ParametersOf(setup.initial())), "");

  std::vector<Parameters> parameters(params.processes);
  std::vector<StepOutput> outputs(params.processes);
  ExpectNoErrors(OnEveryRank(params, [&](int rank, Strategy& strategy) -> absl::Status {
    std::unique_ptr<ConformanceModel> model = CopyOf(setup.initial());
    RETURN_IF_ERROR(strategy.Prepare(*model, Factory()));
    RETURN_IF_ERROR(CheckParametersOn(*model, strategy));
    torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(kLearningRate));
    optimizer.zero_grad();
    const Data share = Share(data, 0, kBatch, rank, params.processes);
    absl::StatusOr<StepOutput> output =
        strategy.ForwardBackward(*model, share.images, share.labels, CrossEntropy);
    if (!output.ok()) return output.status();
    RETURN_IF_ERROR(CheckOutput(*output, kBatch / params.processes));
    outputs[rank] = *output;
    RETURN_IF_ERROR(strategy.Step(optimizer));
    parameters[rank] = ParametersOf(*model);
    return absl::OkStatus();
  }));
  if (HasFailure()) return;
  const int64_t each = kBatch / params.processes;
  for (int rank = 0; rank < params.processes; ++rank) {
    EXPECT_EQ(Mismatch(parameters[rank], single->parameters), "")
        << "rank " << rank << ": these parameters differ from single's after one step";
    const torch::Tensor expected_logits = single->outputs[0].logits.narrow(0, rank * each, each);
    EXPECT_TRUE(torch::allclose(outputs[rank].logits, expected_logits, kRtol, 1e-6))
        << "rank " << rank << ": the logits differ from single's for the same samples";
    if (params.processes == 1) {
      EXPECT_NEAR(outputs[rank].loss.item<double>(), single->outputs[0].loss.item<double>(),
                  1e-5)
          << "the loss differs from single's";
    }
  }
}

TEST_P(StrategyConformanceTest, AccumulatingMicroBatchesEqualsOneStepOnTheirConcatenation) {
  const StrategyConformanceParams params = GetParam();
  constexpr int kMicroBatches = 3;
  constexpr int64_t kMicro = 4;
  ASSERT_EQ(kMicro % params.processes, 0) << "a micro-batch of " << kMicro
                                           << " must split evenly";
  StrategyConformance setup(params);
  const Data data = MakeData(kMicroBatches * kMicro, 2);
  absl::StatusOr<Reference> single = SingleReference(setup.initial(), {data}, CrossEntropy);
  ASSERT_TRUE(single.ok()) << single.status();
  // Equal micro-batches: the mean over all is the mean of the micro means.
  const LossFunction micro_loss = [](const torch::Tensor& logits, const torch::Tensor& labels) {
    return CrossEntropy(logits, labels) / kMicroBatches;
  };

  std::vector<Parameters> parameters(params.processes);
  ExpectNoErrors(OnEveryRank(params, [&](int rank, Strategy& strategy) -> absl::Status {
    std::unique_ptr<ConformanceModel> model = CopyOf(setup.initial());
    RETURN_IF_ERROR(strategy.Prepare(*model, Factory()));
    torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(kLearningRate));
    optimizer.zero_grad();
    for (int micro = 0; micro < kMicroBatches; ++micro) {
      strategy.SetGradientSynchronization(micro == kMicroBatches - 1);
      const Data share = Share(data, micro * kMicro, kMicro, rank, params.processes);
      absl::StatusOr<StepOutput> output =
          strategy.ForwardBackward(*model, share.images, share.labels, micro_loss);
      if (!output.ok()) return output.status();
      RETURN_IF_ERROR(CheckOutput(*output, kMicro / params.processes));
    }
    RETURN_IF_ERROR(strategy.Step(optimizer));
    parameters[rank] = ParametersOf(*model);
    return absl::OkStatus();
  }));
  if (HasFailure()) return;
  for (int rank = 0; rank < params.processes; ++rank) {
    EXPECT_EQ(Mismatch(parameters[rank], single->parameters), "")
        << "rank " << rank << ": after " << kMicroBatches
        << " accumulated micro-batches these parameters differ from single's after one step "
           "on their concatenation";
  }
}

TEST_P(StrategyConformanceTest, ForwardGivesSinglesLogits) {
  const StrategyConformanceParams params = GetParam();
  StrategyConformance setup(params);
  const Data data = MakeData(kBatch, 3);
  torch::Tensor expected;
  {
    absl::StatusOr<std::unique_ptr<Strategy>> single = CreateStrategy("single", "");
    ASSERT_TRUE(single.ok()) << single.status();
    std::unique_ptr<ConformanceModel> model = CopyOf(setup.initial());
    ASSERT_TRUE((*single)->Prepare(*model, Factory()).ok());
    model->eval();
    torch::NoGradGuard no_grad;
    absl::StatusOr<torch::Tensor> logits = (*single)->Forward(*model, data.images);
    ASSERT_TRUE(logits.ok()) << logits.status();
    expected = *logits;
    ASSERT_TRUE(torch::allclose(expected, CopyOf(setup.initial())->forward(data.images), 1e-6,
                                1e-7))
        << "single's Forward is not the model's forward";
  }
  std::vector<torch::Tensor> logits(params.processes);
  ExpectNoErrors(OnEveryRank(params, [&](int rank, Strategy& strategy) -> absl::Status {
    std::unique_ptr<ConformanceModel> model = CopyOf(setup.initial());
    RETURN_IF_ERROR(strategy.Prepare(*model, Factory()));
    model->eval();
    torch::NoGradGuard no_grad;
    absl::StatusOr<torch::Tensor> forward = strategy.Forward(*model, data.images);
    if (!forward.ok()) return forward.status();
    logits[rank] = *forward;
    return absl::OkStatus();
  }));
  if (HasFailure()) return;
  for (int rank = 0; rank < params.processes; ++rank) {
    ASSERT_TRUE(logits[rank].device().is_cpu()) << "rank " << rank << ": not on the CPU";
    ASSERT_EQ(logits[rank].sizes(), expected.sizes()) << "rank " << rank;
    EXPECT_TRUE(torch::allclose(logits[rank], expected, kRtol, 1e-6))
        << "rank " << rank << ": Forward's logits differ from single's";
  }
}

TEST_P(StrategyConformanceTest, CommunicatorCollectivesGiveTheRightResultsOnEveryRank) {
  const StrategyConformanceParams params = GetParam();
  const int n = params.processes;
  std::vector<std::vector<std::string>> wrong(n);
  ExpectNoErrors(OnEveryRank(params, [&](int rank, Strategy& strategy) -> absl::Status {
    Communicator& communicator = strategy.communicator();
    std::vector<std::string>& problems = wrong[rank];
    auto expect = [&](bool ok, const std::string& what) {
      if (!ok) problems.push_back(what);
    };
    expect(communicator.rank() == rank, absl::StrCat("rank() is ", communicator.rank()));
    expect(communicator.world_size() == n,
           absl::StrCat("world_size() is ", communicator.world_size()));
    expect(strategy.rank() == rank && strategy.world_size() == n &&
               strategy.is_primary() == (rank == 0),
           "the strategy's rank(), world_size() or is_primary() disagree with its communicator");
    // Twice: every rank calls the same collectives in the same order.
    for (int round = 0; round < 2; ++round) {
      const std::string in_round = absl::StrCat(" (round ", round, ")");
      // Counts up to 2^53 stay exact in double.
      const double big = 4503599627370496.0;  // 2^52
      std::vector<double> values = {rank + 1.0, 10.0, 0.25, -1.0 * rank, big + rank};
      RETURN_IF_ERROR(communicator.AllReduceSum(values, "the conformance sum"));
      const std::vector<double> sums = {n * (n + 1) / 2.0, 10.0 * n, 0.25 * n,
                                        -n * (n - 1) / 2.0, big * n + n * (n - 1) / 2.0};
      expect(values == sums, absl::StrCat("AllReduceSum gave [", absl::StrJoin(values, ", "),
                                          "], not [", absl::StrJoin(sums, ", "), "]", in_round));

      // Lengths differ (rank 0's is empty); bytes, not C strings.
      auto bytes_of = [round](int r) {
        std::string bytes(3 * r, static_cast<char>('a' + r));
        if (r % 2 == 1) bytes += std::string("\0\xff", 2);
        return bytes + (round == 1 && r > 0 ? "!" : "");
      };
      absl::StatusOr<std::vector<std::string>> gathered =
          communicator.AllGather(bytes_of(rank), "the conformance gather");
      if (!gathered.ok()) return gathered.status();
      std::vector<std::string> all;
      for (int r = 0; r < n; ++r) all.push_back(bytes_of(r));
      expect(*gathered == all, absl::StrCat("AllGather gave ", gathered->size(),
                                            " strings that differ from each rank's", in_round));

      for (int root : {n - 1, 0}) {
        // The root's is shorter than the others'.
        std::string bytes = rank == root ? absl::StrCat("from ", root)
                                         : std::string(40 + rank, 'x');
        RETURN_IF_ERROR(communicator.Broadcast(bytes, root, "the conformance broadcast"));
        expect(bytes == absl::StrCat("from ", root),
               absl::StrCat("Broadcast from rank ", root, " gave \"", bytes, "\"", in_round));
      }
      RETURN_IF_ERROR(communicator.Barrier("the conformance barrier"));
    }
    return absl::OkStatus();
  }));
  for (int rank = 0; rank < n; ++rank) {
    EXPECT_TRUE(wrong[rank].empty()) << "rank " << rank << ": "
                                     << absl::StrJoin(wrong[rank], "; ");
  }
}

}  // namespace

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(StrategyConformanceTest);

}  // namespace testing
}  // namespace pipeline
