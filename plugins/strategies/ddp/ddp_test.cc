#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <sstream>
#include <thread>

#include "gmock/gmock.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "pipeline/testing/free_port.h"
#include "pipeline/interfaces/strategy.h"
#include "pipeline/layers/batch_norm.h"
#include "pipeline/testing/plugin_test_util.h"
#include "torch/nn/modules/conv.h"
#include "torch/nn/modules/linear.h"
#include "torch/optim/adamw.h"
#include "torch/optim/sgd.h"
#include "torch/types.h"
#include "torch/utils.h"

namespace pipeline {
namespace {

using ::testing::HasSubstr;

using testing::FreePort;

// Two layers and a parameter forward never uses.
class TwoLayers : public Model {
 public:
  TwoLayers() {
    first = register_module("first", torch::nn::Linear(4, 5));
    second = register_module("second", torch::nn::Linear(5, 3));
    unused = register_parameter("unused", torch::ones({2}));
  }
  torch::Tensor forward(const torch::Tensor& x) override {
    return second(torch::tanh(first(x.flatten(1))));
  }
  torch::nn::Linear first{nullptr}, second{nullptr};
  torch::Tensor unused;
};

torch::Tensor CrossEntropy(const torch::Tensor& logits, const torch::Tensor& labels) {
  return torch::nll_loss(torch::log_softmax(logits, 1), labels);
}

StrategyContext RankContext(int rank, int port) {
  StrategyContext context;
  std::map<std::string, std::string> env = {{"RANK", std::to_string(rank)},
                                            {"WORLD_SIZE", "2"},
                                            {"MASTER_ADDR", "127.0.0.1"},
                                            {"MASTER_PORT", std::to_string(port)}};
  context.environment = [env](const std::string& name) {
    auto it = env.find(name);
    return it == env.end() ? std::string() : it->second;
  };
  return context;
}

// A bucket cap of 40 bytes puts almost every parameter in a bucket of its
// own, so the in-order launching across many buckets is exercised.
constexpr char kDdp[] = R"pb(name: "ddp"
                             options {
                               [type.googleapis.com/pipeline.DdpOptions] {
                                 bucket_cap_mb: 0.00004
                                 find_unused_parameters: true
                               }
                             })pb";

// Two ranks on half the batch each, under `ddp_config`, against one process
// on the whole batch: every gradient within rtol/atol of the reference.
// Returns how many values differ from it at all.
int64_t CompareWithTheWholeBatch(const std::string& ddp_config, double rtol, double atol) {
  torch::manual_seed(0);
  const torch::Tensor images = torch::randn({8, 1, 2, 2});
  const torch::Tensor labels = torch::randint(0, 3, {8}, torch::kLong);
  const int port = FreePort();

  std::vector<std::unique_ptr<TwoLayers>> models(2);
  std::vector<std::map<std::string, torch::Tensor>> grads(2);
  std::vector<std::vector<double>> sums(2);
  std::vector<std::string> errors(2);
  auto run_rank = [&](int rank) {
    auto strategy = testing::CreatePlugin<Strategy>(ddp_config, RankContext(rank, port));
    if (!strategy.ok()) {
      errors[rank] = std::string(strategy.status().message());
      return;
    }
    models[rank] = std::make_unique<TwoLayers>();  // rank-dependent random init
    if (auto status = (*strategy)->Prepare(*models[rank], {}); !status.ok()) {
      errors[rank] = std::string(status.message());
      return;
    }
    auto output = (*strategy)->ForwardBackward(*models[rank], images.narrow(0, 4 * rank, 4),
                                               labels.narrow(0, 4 * rank, 4), CrossEntropy);
    if (!output.ok()) {
      errors[rank] = std::string(output.status().message());
      return;
    }
    for (const auto& p : models[rank]->named_parameters()) grads[rank][p.key()] = p.value().grad();
    sums[rank] = {rank + 1.0, 10.0};
    Communicator& communicator = (*strategy)->communicator();
    if (auto status = communicator.AllReduceSum(sums[rank], "the test's sum"); !status.ok()) {
      errors[rank] = std::string(status.message());
      return;
    }
    // Lengths differ between ranks (rank 1's is empty).
    auto gathered = communicator.AllGather(rank == 0 ? "rank zero" : "", "the test's gather");
    if (!gathered.ok()) {
      errors[rank] = std::string(gathered.status().message());
      return;
    }
    std::string broadcast = rank == 1 ? "from rank 1" : "overwritten";
    if (auto status = communicator.Broadcast(broadcast, 1, "the test's broadcast"); !status.ok()) {
      errors[rank] = std::string(status.message());
      return;
    }
    if (*gathered != std::vector<std::string>{"rank zero", ""} || broadcast != "from rank 1") {
      errors[rank] = absl::StrCat("gathered \"", absl::StrJoin(*gathered, "\", \""),
                                  "\", broadcast \"", broadcast, "\"");
      return;
    }
    if (auto status = communicator.Barrier("the test's barrier"); !status.ok()) {
      errors[rank] = std::string(status.message());
    }
  };
  {
    torch::manual_seed(1);  // rank 0 builds first; rank 1 gets other weights
    std::thread rank0(run_rank, 0);
    std::thread rank1(run_rank, 1);
    rank0.join();
    rank1.join();
  }
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");
  if (!errors[0].empty() || !errors[1].empty()) return -1;

  // Both replicas hold rank 0's weights...
  for (const auto& p : models[0]->named_parameters()) {
    EXPECT_TRUE(p.value().equal(models[1]->named_parameters()[p.key()])) << p.key();
  }
  // ...and the gradient of the mean loss over all 8 samples.
  TwoLayers reference;
  {
    torch::NoGradGuard no_grad;
    for (const auto& p : models[0]->named_parameters()) {
      reference.named_parameters()[p.key()].copy_(p.value());
    }
  }
  CrossEntropy(reference.forward(images), labels).backward();
  int64_t differing = 0;
  for (const auto& p : reference.named_parameters()) {
    if (p.key() == "unused") continue;
    EXPECT_TRUE(torch::allclose(grads[0][p.key()], p.value().grad(), rtol, atol)) << p.key();
    EXPECT_TRUE(grads[0][p.key()].equal(grads[1][p.key()])) << p.key();
    differing += grads[0][p.key()].ne(p.value().grad()).sum().item<int64_t>();
  }
  // A parameter with no gradient does not hang the group and gets zeros.
  EXPECT_TRUE(grads[0]["unused"].equal(torch::zeros({2})));
  EXPECT_EQ(sums[0], (std::vector<double>{3.0, 20.0}));
  EXPECT_EQ(sums[1], (std::vector<double>{3.0, 20.0}));
  return differing;
}

TEST(DdpTest, GradientsEqualTheSingleProcessGradientOfTheWholeBatch) {
  EXPECT_GE(CompareWithTheWholeBatch(kDdp, 1e-5, 1e-6), 0);
}

// float16 on the wire: the same average to float16's ~3 digits, and really
// rounded (not a silent no-op).
TEST(DdpTest, Fp16CompressedGradientsAreTheAverageToFloat16Precision) {
  std::string config = kDdp;
  config.replace(config.find("find_unused_parameters"), 0, "gradient_compression: FP16 ");
  EXPECT_GT(CompareWithTheWholeBatch(config, 2e-3, 1e-4), 0);
}

TEST(DdpTest, AccumulatedMicroBatchesAverageLikeOneBigBatch) {
  torch::manual_seed(0);
  const torch::Tensor images = torch::randn({8, 1, 2, 2});
  const torch::Tensor labels = torch::randint(0, 3, {8}, torch::kLong);
  const int port = FreePort();
  std::vector<std::unique_ptr<TwoLayers>> models(2);
  std::vector<std::string> errors(2);
  // Each rank: two micro-batches of 2 samples, the loss of each halved.
  auto half_loss = [](const torch::Tensor& logits, const torch::Tensor& labels) {
    return CrossEntropy(logits, labels) / 2;
  };
  auto run_rank = [&](int rank) {
    auto strategy = testing::CreatePlugin<Strategy>(kDdp, RankContext(rank, port));
    if (!strategy.ok()) {
      errors[rank] = std::string(strategy.status().message());
      return;
    }
    models[rank] = std::make_unique<TwoLayers>();
    absl::Status status = (*strategy)->Prepare(*models[rank], {});
    for (int micro = 0; micro < 2 && status.ok(); ++micro) {
      (*strategy)->SetGradientSynchronization(micro == 1);
      const int64_t start = 4 * rank + 2 * micro;
      status = (*strategy)
                   ->ForwardBackward(*models[rank], images.narrow(0, start, 2),
                                     labels.narrow(0, start, 2), half_loss)
                   .status();
    }
    if (!status.ok()) errors[rank] = std::string(status.message());
  };
  {
    std::thread rank0(run_rank, 0);
    std::thread rank1(run_rank, 1);
    rank0.join();
    rank1.join();
  }
  ASSERT_EQ(errors[0], "");
  ASSERT_EQ(errors[1], "");
  TwoLayers reference;
  {
    torch::NoGradGuard no_grad;
    for (const auto& p : models[0]->named_parameters()) {
      reference.named_parameters()[p.key()].copy_(p.value());
    }
  }
  CrossEntropy(reference.forward(images), labels).backward();
  for (const auto& p : reference.named_parameters()) {
    if (p.key() == "unused") continue;
    const torch::Tensor grad0 = models[0]->named_parameters()[p.key()].grad();
    EXPECT_TRUE(torch::allclose(grad0, p.value().grad(), 1e-5, 1e-6)) << p.key();
    EXPECT_TRUE(grad0.equal(models[1]->named_parameters()[p.key()].grad())) << p.key();
  }
}

// Runs one ForwardBackward of TwoLayers on each of two ranks with the given
// ddp config; returns each rank's error ("" when it succeeded).
std::vector<std::string> RunOneStepOnTwoRanks(const std::string& config) {
  const int port = FreePort();
  std::vector<std::string> errors(2);
  auto run_rank = [&](int rank) {
    auto strategy = testing::CreatePlugin<Strategy>(config, RankContext(rank, port));
    if (!strategy.ok()) {
      errors[rank] = std::string(strategy.status().message());
      return;
    }
    TwoLayers model;
    absl::Status status = (*strategy)->Prepare(model, {});
    if (status.ok()) {
      status = (*strategy)
                   ->ForwardBackward(model, torch::randn({2, 4}), torch::zeros({2}, torch::kLong),
                                     CrossEntropy)
                   .status();
    }
    if (!status.ok()) errors[rank] = std::string(status.message());
  };
  std::thread rank0(run_rank, 0);
  std::thread rank1(run_rank, 1);
  rank0.join();
  rank1.join();
  return errors;
}

TEST(DdpTest, AnUnusedParameterWithoutFindUnusedParametersIsNamedOnEveryRank) {
  const std::vector<std::string> errors = RunOneStepOnTwoRanks(R"pb(name: "ddp")pb");
  for (const std::string& error : errors) {
    EXPECT_THAT(error, HasSubstr("parameters got no gradient in this step: unused. Set "
                                 "find_unused_parameters: true in the ddp options"));
  }
}

TEST(DdpTest, MismatchedWorldSizesAreRefused) {
  const int port = FreePort();
  std::string error;
  std::thread rank0([&] {
    // Rank 0 of 2 waits for its peer; the peer refuses and goes away, so
    // rank 0 stops at its (short) timeout.
    auto strategy = testing::CreatePlugin<Strategy>(
        R"pb(name: "ddp" options { [type.googleapis.com/pipeline.DdpOptions] { timeout_seconds: 3 } })pb",
        RankContext(0, port));
    (void)strategy;
  });
  StrategyContext context = RankContext(1, port);
  context.environment = [port](const std::string& name) -> std::string {
    if (name == "RANK") return "1";
    if (name == "WORLD_SIZE") return "3";
    if (name == "MASTER_ADDR") return "127.0.0.1";
    if (name == "MASTER_PORT") return std::to_string(port);
    return "";
  };
  auto strategy = testing::CreatePlugin<Strategy>(
      R"pb(name: "ddp" options { [type.googleapis.com/pipeline.DdpOptions] { timeout_seconds: 3 } })pb",
      context);
  rank0.join();
  EXPECT_THAT(strategy.status().message(),
              HasSubstr("WORLD_SIZE=3 here but rank 0 has WORLD_SIZE=2"));
}

TEST(DdpTest, MissingRankSaysHowToLaunch) {
  StrategyContext context;
  context.environment = [](const std::string&) { return std::string(); };
  auto strategy = testing::CreatePlugin<Strategy>(R"pb(name: "ddp")pb", context);
  EXPECT_THAT(strategy.status().message(),
              HasSubstr("environment variable RANK is not set; start ddp runs with `train`"));
}

// The CPU build says how to get NCCL; the CUDA build that NCCL goes with
// device "cuda" (the default device is "cpu").
TEST(DdpTest, NcclWithoutCudaSaysWhatToDo) {
  auto strategy = testing::CreatePlugin<Strategy>(
      R"pb(name: "ddp" options { [type.googleapis.com/pipeline.DdpOptions] { backend: NCCL } })pb");
#ifdef USE_C10D_NCCL
  EXPECT_THAT(strategy.status().message(),
              HasSubstr("backend: NCCL goes with device: \"cuda\""));
#else
  EXPECT_THAT(strategy.status().message(),
              HasSubstr("backend: NCCL needs a CUDA build of the runner, and this one is "
                        "CPU-only; use backend: GLOO, or build with --config=cuda"));
#endif
}

// A convolution, BatchNorm, ReLU, average pool and a linear head.
class WithBatchNorm : public Model {
 public:
  WithBatchNorm() {
    conv = register_module("conv",
                           torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 3, 3).padding(1).bias(false)));
    bn = register_module("bn", BatchNorm2d(3));
    fc = register_module("fc", torch::nn::Linear(3, 3));
  }
  torch::Tensor forward(const torch::Tensor& x) override {
    return fc(torch::relu(bn(conv(x))).mean({2, 3}));
  }
  torch::nn::Conv2d conv{nullptr};
  BatchNorm2d bn{nullptr};
  torch::nn::Linear fc{nullptr};
};

using State = std::map<std::string, torch::Tensor>;

State StateOf(torch::nn::Module& model) {
  State state;
  for (const auto& p : model.named_parameters()) state[p.key()] = p.value().detach().clone();
  for (const auto& b : model.named_buffers()) state[b.key()] = b.value().clone();
  return state;
}

constexpr int kSteps = 3;

// The largest difference between two states' tensors.
double MaxDifference(const State& a, const State& b) {
  double largest = 0;
  for (const auto& [key, value] : a) {
    largest = std::max(
        largest, (value.to(torch::kDouble) - b.at(key).to(torch::kDouble)).abs().max().item<double>());
  }
  return largest;
}

using MakeOptimizer =
    std::function<std::unique_ptr<Optimizer>(const std::vector<torch::Tensor>& parameters)>;

// An optimizer state key as text: LibTorch 1.13 keys by the TensorImpl's
// address printed, 2.x by the pointer.
[[maybe_unused]] std::string Printed(const std::string& key) { return key; }
[[maybe_unused]] std::string Printed(const void* key) {
  std::ostringstream text;
  text << key;
  return text.str();
}

// The optimizer's state tensors by parameter name ("fc.weight/exp_avg"):
// SGD's momentum buffers or AdamW's moments and step counts.
State OptimizerStateOf(Optimizer& optimizer, torch::nn::Module& model) {
  std::map<std::string, torch::optim::OptimizerParamState*> entries;
  for (const auto& [key, entry] : optimizer.state()) entries[Printed(key)] = entry.get();
  State state;
  for (const auto& p : model.named_parameters()) {
    const auto found = entries.find(Printed(static_cast<const void*>(p.value().unsafeGetTensorImpl())));
    if (found == entries.end()) continue;
    if (auto* sgd = dynamic_cast<torch::optim::SGDParamState*>(found->second)) {
      state[p.key() + "/momentum_buffer"] = sgd->momentum_buffer().clone();
    } else if (auto* adamw = dynamic_cast<torch::optim::AdamWParamState*>(found->second)) {
      state[p.key() + "/exp_avg"] = adamw->exp_avg().clone();
      state[p.key() + "/exp_avg_sq"] = adamw->exp_avg_sq().clone();
      state[p.key() + "/step"] = torch::tensor(static_cast<double>(adamw->step()));
    }
  }
  return state;
}

struct OptimizedRun {
  State weights;                     // rank 0's, after the steps
  std::vector<int64_t> own_entries;  // per rank: optimizer state entries after the steps
  State gathered;  // rank 0's optimizer state after GatherOptimizerState
};

// kSteps steps through Strategy::Step on two ranks, each on its half of
// the batch; then every rank gathers the optimizer state for rank 0.
OptimizedRun StepOnTwoRanks(const std::string& config, const MakeOptimizer& make_optimizer,
                            const torch::Tensor& images, const torch::Tensor& labels) {
  const int port = FreePort();
  std::vector<std::unique_ptr<WithBatchNorm>> models;
  torch::manual_seed(3);
  for (int rank = 0; rank < 2; ++rank) models.push_back(std::make_unique<WithBatchNorm>());
  OptimizedRun run;
  run.own_entries.resize(2);
  std::vector<std::string> errors(2);
  auto run_rank = [&](int rank) {
    auto strategy = testing::CreatePlugin<Strategy>(config, RankContext(rank, port));
    absl::Status status = strategy.status();
    if (status.ok()) status = (*strategy)->Prepare(*models[rank], {});
    std::unique_ptr<Optimizer> optimizer = make_optimizer(models[rank]->parameters());
    for (int step = 0; step < kSteps && status.ok(); ++step) {
      optimizer->zero_grad();
      status = (*strategy)
                   ->ForwardBackward(*models[rank], images[step].narrow(0, 4 * rank, 4),
                                     labels[step].narrow(0, 4 * rank, 4), CrossEntropy)
                   .status();
      if (status.ok()) status = (*strategy)->Step(*optimizer);
    }
    run.own_entries[rank] = static_cast<int64_t>(optimizer->state().size());
    if (status.ok()) status = (*strategy)->GatherOptimizerState(*optimizer);
    if (rank == 0) run.gathered = OptimizerStateOf(*optimizer, *models[0]);
    if (!status.ok()) errors[rank] = std::string(status.message());
  };
  std::thread rank0(run_rank, 0);
  std::thread rank1(run_rank, 1);
  rank0.join();
  rank1.join();
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");
  run.weights = StateOf(*models[0]);
  return run;
}

// Two ranks of 4 images with sync_batch_norm train as one process on all 8
// with ordinary BatchNorm (the same weights, running statistics and count
// after kSteps of SGD with momentum); without it they do not.
TEST(DdpTest, SyncBatchNormTrainsLikeOneProcessOnTheWholeBatch) {
  torch::manual_seed(0);
  const torch::Tensor images = torch::randn({kSteps, 8, 1, 4, 4}) * 2 + 0.5;
  const torch::Tensor labels = torch::randint(0, 3, {kSteps, 8}, torch::kLong);
  torch::manual_seed(3);
  WithBatchNorm reference;
  torch::optim::SGD sgd(reference.parameters(), torch::optim::SGDOptions(0.5).momentum(0.9));
  for (int step = 0; step < kSteps; ++step) {
    sgd.zero_grad();
    CrossEntropy(reference.forward(images[step]), labels[step]).backward();
    sgd.step();
  }
  const State expected = StateOf(reference);

  const MakeOptimizer make_sgd = [](const std::vector<torch::Tensor>& parameters) {
    return std::make_unique<torch::optim::SGD>(parameters,
                                               torch::optim::SGDOptions(0.5).momentum(0.9));
  };
  const State synchronised = StepOnTwoRanks(R"pb(name: "ddp"
      options { [type.googleapis.com/pipeline.DdpOptions] { sync_batch_norm: true } })pb",
                                            make_sgd, images, labels)
                                 .weights;
  EXPECT_LT(MaxDifference(synchronised, expected), 1e-5);
  EXPECT_EQ(synchronised.at("bn.num_batches_tracked").item<int64_t>(), kSteps);
  // Per-rank statistics train another model: the comparison can tell.
  EXPECT_GT(
      MaxDifference(StepOnTwoRanks(R"pb(name: "ddp")pb", make_sgd, images, labels).weights, expected),
      1e-3);
}

// gradient_as_bucket_view: every gradient lives in its bucket's storage
// (this model's 5 parameters fit the first bucket), through zero_grad and
// the rebuilding of the buckets after the first step.
TEST(DdpTest, GradientsLiveInTheirBucket) {
  const int port = FreePort();
  std::vector<std::string> errors(2);
  std::vector<int> shared(2, 0);
  auto run_rank = [&](int rank) {
    auto strategy = testing::CreatePlugin<Strategy>(R"pb(name: "ddp")pb", RankContext(rank, port));
    WithBatchNorm model;
    absl::Status status = strategy.status();
    if (status.ok()) status = (*strategy)->Prepare(model, {});
    torch::optim::SGD sgd(model.parameters(), torch::optim::SGDOptions(0.1));
    for (int step = 0; step < 3 && status.ok(); ++step) {
      sgd.zero_grad();
      status = (*strategy)
                   ->ForwardBackward(model, torch::randn({4, 1, 4, 4}),
                                     torch::randint(0, 3, {4}, torch::kLong), CrossEntropy)
                   .status();
      if (status.ok()) sgd.step();
    }
    const std::vector<torch::Tensor> parameters = model.parameters();
    for (const torch::Tensor& p : parameters) {
      shared[rank] += p.grad().defined() && p.grad().is_alias_of(parameters[0].grad());
    }
    if (!status.ok()) errors[rank] = std::string(status.message());
  };
  std::thread rank0(run_rank, 0);
  std::thread rank1(run_rank, 1);
  rank0.join();
  rank1.join();
  EXPECT_EQ(errors, (std::vector<std::string>{"", ""}));
  EXPECT_EQ(shared, (std::vector<int>{5, 5}));
}

TEST(DdpTest, SyncBatchNormOnAModelWithoutBatchNormWarns) {
  ::testing::internal::CaptureStderr();
  const std::vector<std::string> errors = RunOneStepOnTwoRanks(R"pb(name: "ddp"
      options { [type.googleapis.com/pipeline.DdpOptions] {
        sync_batch_norm: true find_unused_parameters: true } })pb");
  const std::string printed = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(errors, (std::vector<std::string>{"", ""}));
  EXPECT_THAT(printed, HasSubstr("warning: ddp: sync_batch_norm is set, but the model has no "
                                 "BatchNorm layer to synchronise"));
}

// ZeRO-1 against the whole optimizer on every rank: the same weights and,
// gathered for a checkpoint, the same state; between steps each rank holds
// only its shard's state.
void ExpectShardedLikeWhole(const MakeOptimizer& make_optimizer) {
  torch::manual_seed(0);
  const torch::Tensor images = torch::randn({kSteps, 8, 1, 4, 4});
  const torch::Tensor labels = torch::randint(0, 3, {kSteps, 8}, torch::kLong);
  const OptimizedRun whole = StepOnTwoRanks(R"pb(name: "ddp")pb", make_optimizer, images, labels);
  const OptimizedRun sharded = StepOnTwoRanks(R"pb(name: "ddp"
      options { [type.googleapis.com/pipeline.DdpOptions] { shard_optimizer_state: true } })pb",
                                              make_optimizer, images, labels);
  EXPECT_LT(MaxDifference(sharded.weights, whole.weights), 1e-6);
  ASSERT_EQ(whole.gathered.size(), sharded.gathered.size());
  EXPECT_GT(whole.gathered.size(), 0u);
  EXPECT_LT(MaxDifference(sharded.gathered, whole.gathered), 1e-6);
  // conv.weight, bn.weight, bn.bias, fc.weight, fc.bias: 5 in all.
  EXPECT_EQ(whole.own_entries, (std::vector<int64_t>{5, 5}));
  EXPECT_EQ(sharded.own_entries[0] + sharded.own_entries[1], 5);
  EXPECT_GT(sharded.own_entries[0], 0);
  EXPECT_GT(sharded.own_entries[1], 0);
}

TEST(DdpTest, ShardedSgdWithMomentumStepsLikeTheWholeOptimizer) {
  ExpectShardedLikeWhole([](const std::vector<torch::Tensor>& parameters) {
    return std::make_unique<torch::optim::SGD>(
        parameters, torch::optim::SGDOptions(0.5).momentum(0.9).weight_decay(1e-3));
  });
}

TEST(DdpTest, ShardedAdamWStepsLikeTheWholeOptimizer) {
  ExpectShardedLikeWhole([](const std::vector<torch::Tensor>& parameters) {
    return std::make_unique<torch::optim::AdamW>(parameters,
                                                 torch::optim::AdamWOptions(0.01).weight_decay(0.05));
  });
}

TEST(DdpTest, RankBeyondWorldSizeIsRejected) {
  StrategyContext context = RankContext(2, FreePort());
  auto strategy = testing::CreatePlugin<Strategy>(R"pb(name: "ddp")pb", context);
  EXPECT_THAT(strategy.status().message(),
              HasSubstr("RANK=2 WORLD_SIZE=2: the rank must be below the world size"));
}

}  // namespace
}  // namespace pipeline
