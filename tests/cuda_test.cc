// The GPU paths: `single` on cuda:0, `data_parallel` over every GPU, `ddp`
// over NCCL, FP16 autocast with the loss scaler. Each GPU test checks a CUDA
// run against the CPU (or `single`) reference and skips, with one line
// saying why, where no GPU is visible (the CPU build, or a CUDA build on a
// machine without a GPU). The bad-input tests at the end run everywhere.

#include <map>
#include <memory>
#include <regex>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/data/device_maps.h"
#include "pipeline/interfaces/optimizer.h"
#include "pipeline/interfaces/strategy.h"
#include "pipeline/testing/command.h"
#include "pipeline/testing/free_port.h"
#include "pipeline/testing/model_test_util.h"
#include "pipeline/testing/plugin_test_util.h"
#include "pipeline/trainer/cuda_graph_step.h"
#include "pipeline/util/cuda_devices.h"
#include "pipeline/util/torch_version.h"
#include "torch/nn/modules/conv.h"
#include "torch/nn/modules/linear.h"
#include "torch/optim/sgd.h"
#include "torch/types.h"

namespace pipeline {
namespace {

using ::testing::HasSubstr;

#define SKIP_WITHOUT_GPU(needed)                                                          \
  if (VisibleCudaDevices() < (needed)) {                                                 \
    GTEST_SKIP() << "needs " << (needed) << " CUDA device(s); "                          \
                 << (kCudaBuild ? "this machine shows " : "this is the CPU build, with ") \
                 << VisibleCudaDevices();                                                 \
  }

class ConvNet : public Model {
 public:
  ConvNet() {
    conv = register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 4, 3)));
    fc = register_module("fc", torch::nn::Linear(4 * 6 * 6, 3));
  }
  torch::Tensor forward(const torch::Tensor& x) override {
    return fc(torch::relu(conv(x)).flatten(1));
  }
  torch::nn::Conv2d conv{nullptr};
  torch::nn::Linear fc{nullptr};
};

ModelFactory ConvNetFactory() {
  return []() -> absl::StatusOr<std::unique_ptr<Model>> { return std::make_unique<ConvNet>(); };
}

torch::Tensor CrossEntropy(const torch::Tensor& logits, const torch::Tensor& labels) {
  return torch::nll_loss(torch::log_softmax(logits, 1), labels);
}

std::string SingleOn(const std::string& device) {
  return absl::StrCat(
      "name: \"single\" options { [type.googleapis.com/pipeline.SingleDeviceOptions] { device: \"",
      device, "\" } }");
}

// Four SGD-momentum steps of `strategy` against `single` on the CPU, on the
// same batches from the same weights; parameters within `tolerance`.
void ExpectSameTrainingAsCpu(Strategy& strategy, double tolerance) {
  torch::manual_seed(0);
  ConvNet model, reference;
  testing::CopyParameters(model, reference);
  auto cpu = testing::CreatePlugin<Strategy>(SingleOn("cpu"));
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  ASSERT_TRUE(strategy.Prepare(model, ConvNetFactory()).ok());
  ASSERT_TRUE((*cpu)->Prepare(reference, {}).ok());
  torch::optim::SGD optimizer(model.parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  torch::optim::SGD reference_optimizer(reference.parameters(),
                                        torch::optim::SGDOptions(0.1).momentum(0.9));
  for (int step = 0; step < 4; ++step) {
    const torch::Tensor images = torch::randn({8, 1, 8, 8});
    const torch::Tensor labels = torch::randint(0, 3, {8}, torch::kLong);
    optimizer.zero_grad();
    reference_optimizer.zero_grad();
    auto ours = strategy.ForwardBackward(model, images, labels, CrossEntropy);
    auto theirs = (*cpu)->ForwardBackward(reference, images, labels, CrossEntropy);
    ASSERT_TRUE(ours.ok()) << ours.status();
    ASSERT_TRUE(theirs.ok()) << theirs.status();
    EXPECT_NEAR(ours->loss.item<double>(), theirs->loss.item<double>(), tolerance) << step;
    optimizer.step();
    reference_optimizer.step();
  }
  auto expected = reference.named_parameters();
  for (const auto& p : model.named_parameters()) {
    EXPECT_TRUE(p.value().is_cuda()) << p.key();
    EXPECT_TRUE(torch::allclose(p.value().cpu(), expected[p.key()], tolerance, tolerance))
        << p.key();
  }
}

TEST(CudaTest, SingleOnCuda0TrainsAsTheCpu) {
  SKIP_WITHOUT_GPU(1);
  auto strategy = testing::CreatePlugin<Strategy>(SingleOn("cuda:0"));
  ASSERT_TRUE(strategy.ok()) << strategy.status();
  EXPECT_TRUE((*strategy)->device().is_cuda());
  ExpectSameTrainingAsCpu(**strategy, 1e-4);
}

TEST(CudaTest, DataParallelOnEveryGpuTrainsAsSingleOnTheWholeBatch) {
  SKIP_WITHOUT_GPU(1);
  auto strategy = testing::CreatePlugin<Strategy>(
      R"pb(name: "data_parallel"
           options {
             [type.googleapis.com/pipeline.DataParallelOptions] { device: "cuda" replicas: 0 }
           })pb");
  ASSERT_TRUE(strategy.ok()) << strategy.status();
  ExpectSameTrainingAsCpu(**strategy, 1e-4);
}

// NCCL refuses two ranks on one GPU, so this is world size 1 on cuda:0: the
// process group still forms and every gradient goes through its allreduce.
TEST(CudaTest, DdpOverNcclTrainsAsTheCpu) {
  SKIP_WITHOUT_GPU(1);
  StrategyContext context;
  const std::map<std::string, std::string> env = {
      {"RANK", "0"}, {"WORLD_SIZE", "1"}, {"LOCAL_RANK", "0"},
      {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", std::to_string(testing::FreePort())}};
  context.environment = [env](const std::string& name) {
    auto it = env.find(name);
    return it == env.end() ? std::string() : it->second;
  };
  auto strategy = testing::CreatePlugin<Strategy>(
      R"pb(name: "ddp"
           options {
             [type.googleapis.com/pipeline.DdpOptions] { backend: NCCL device: "cuda" }
           })pb",
      context);
  ASSERT_TRUE(strategy.ok()) << strategy.status();
  ExpectSameTrainingAsCpu(**strategy, 1e-4);
}

testing::CommandResult RunTrain(const std::string& arguments) {
  return testing::RunCommand("tools/train --config=configs/single.textproto "
                             "--set='model={name: \"small_cnn\"}' --set=output_dir=" +
                             ::testing::TempDir() + "/run " + arguments);
}

double SummaryValue(const std::string& output, const std::string& key) {
  std::smatch match;
  const std::regex pattern("\"event\":\"summary\".*\"" + key + "\":([0-9.eE+-]+)");
  if (!std::regex_search(output, match, pattern)) return -1;
  return std::stod(match[1]);
}

// Float16 with the loss scaler on the default data: one epoch of the small
// CNN on cuda:0 learns as float32 on the CPU does (on an H100: 75.48% and
// train loss 1.1123 against the CPU's 75.53% and 1.1112; the scaler skipped
// one step, its first).
TEST(CudaTest, Fp16AutocastWithTheLossScalerLearnsAsFloat32OnTheCpu) {
  SKIP_WITHOUT_GPU(1);
  const testing::CommandResult fp16 = RunTrain(
      "--set='strategy={" + SingleOn("cuda:0") +
      "}' --set=trainer.precision=FP16_AUTOCAST --set=trainer.epochs=1 --set=output_dir=" +
      ::testing::TempDir() + "/fp16");
  const testing::CommandResult fp32 = RunTrain(
      "--set=trainer.epochs=1 --set=output_dir=" + ::testing::TempDir() + "/fp32_cpu");
  ASSERT_EQ(fp16.exit_code, 0) << fp16.output;
  ASSERT_EQ(fp32.exit_code, 0) << fp32.output;
  EXPECT_GT(SummaryValue(fp32.output, "val_acc"), 0.7) << fp32.output;
  EXPECT_NEAR(SummaryValue(fp16.output, "val_acc"), SummaryValue(fp32.output, "val_acc"), 0.01)
      << fp16.output;
  EXPECT_NEAR(SummaryValue(fp16.output, "train_loss"), SummaryValue(fp32.output, "train_loss"),
              0.02)
      << fp16.output;
}

// A step whose forward reads a value back to the host: it cannot be
// captured.
class HostReadingNet : public ConvNet {
 public:
  torch::Tensor forward(const torch::Tensor& x) override {
    const torch::Tensor logits = ConvNet::forward(x);
    if (logits.abs().max().item<double>() > 1e9) return logits * 0;
    return logits;
  }
};

// Eight steps through CudaGraphStep against the plain step on copies of the
// same weights and batches (the last one smaller, so it runs eagerly);
// parameters within `tolerance`. Returns what the graph step said.
std::string ExpectGraphStepsTrainAsEagerOnes(ConvNet& model, bool expect_captured) {
  auto strategy = testing::CreatePlugin<Strategy>(SingleOn("cuda:0"));
  EXPECT_TRUE(strategy.ok()) << strategy.status();
  ConvNet reference;
  testing::CopyParameters(model, reference);
  EXPECT_TRUE((*strategy)->Prepare(model, {}).ok());
  EXPECT_TRUE((*strategy)->Prepare(reference, {}).ok());
  torch::optim::SGD optimizer(model.parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  torch::optim::SGD reference_optimizer(reference.parameters(),
                                        torch::optim::SGDOptions(0.1).momentum(0.9));
  std::string said;
  CudaGraphStep graph_step([&](const std::string& line) { said += line; });
  torch::manual_seed(1);
  for (int step = 0; step < 8; ++step) {
    const int64_t batch = step == 7 ? 5 : 8;
    const torch::Tensor images = torch::randn({batch, 1, 8, 8});
    const torch::Tensor labels = torch::randint(0, 3, {batch}, torch::kLong);
    optimizer.zero_grad();
    reference_optimizer.zero_grad();
    auto ours = graph_step.ForwardBackward(**strategy, model, images, labels, CrossEntropy);
    auto theirs = (*strategy)->ForwardBackward(reference, images, labels, CrossEntropy);
    EXPECT_TRUE(ours.ok()) << ours.status();
    EXPECT_TRUE(theirs.ok()) << theirs.status();
    if (!ours.ok() || !theirs.ok()) return said;
    EXPECT_NEAR(ours->loss.item<double>(), theirs->loss.item<double>(), 1e-5) << step;
    EXPECT_TRUE(torch::allclose(ours->logits, theirs->logits, 1e-5, 1e-5)) << step;
    optimizer.step();
    reference_optimizer.step();
  }
  EXPECT_EQ(graph_step.captured(), expect_captured);
  auto expected = reference.named_parameters();
  for (const auto& p : model.named_parameters()) {
    EXPECT_TRUE(torch::allclose(p.value(), expected[p.key()], 1e-5, 1e-5)) << p.key();
  }
  return said;
}

TEST(CudaTest, CudaGraphsTrainAsTheEagerStep) {
  SKIP_WITHOUT_GPU(1);
  ConvNet model;
  EXPECT_EQ(ExpectGraphStepsTrainAsEagerOnes(model, /*expect_captured=*/true), "");
}

TEST(CudaTest, AStepThatCannotBeCapturedTrainsOnEagerlyAndSaysWhy) {
  SKIP_WITHOUT_GPU(1);
  HostReadingNet model;
  const std::string said = ExpectGraphStepsTrainAsEagerOnes(model, /*expect_captured=*/false);
  EXPECT_THAT(said, HasSubstr("trainer.cuda_graphs: the training step could not be captured"));
  EXPECT_THAT(said, HasSubstr("training goes on without CUDA graphs"));
}

// The multi-tensor and fused steps on the device against the loop, from the
// same weights and gradients.
TEST(CudaTest, ForeachAndFusedOptimizerStepsMatchTheLoop) {
  SKIP_WITHOUT_GPU(1);
  for (const char* plugin : {"sgd", "adam", "adamw"}) {
    for (const char* implementation : {"FOREACH", "FUSED"}) {
      if (std::string(plugin) == "sgd" && std::string(implementation) == "FUSED") continue;
      SCOPED_TRACE(absl::StrCat(plugin, " ", implementation));
      torch::manual_seed(3);
      std::vector<torch::Tensor> loop_params, multi_params;
      for (int64_t size : {12, 5, 300}) {
        torch::Tensor p = torch::randn({size}, torch::kCUDA);
        loop_params.push_back(p.clone().set_requires_grad(true));
        multi_params.push_back(p.clone().set_requires_grad(true));
      }
      const std::string type = std::string(plugin) == "sgd"    ? "SgdOptions"
                               : std::string(plugin) == "adam" ? "AdamOptions"
                                                               : "AdamWOptions";
      auto config = [&](const std::string& how) {
        return absl::StrCat("name: \"", plugin, "\" options { [type.googleapis.com/pipeline.",
                            type, "] { lr: 0.01 weight_decay: 0.01 implementation: ", how,
                            " } }");
      };
      auto loop = testing::CreatePlugin<Optimizer>(config("FOR_LOOP"),
                                                   OptimizerContext::OneGroup(loop_params));
      auto multi = testing::CreatePlugin<Optimizer>(config(implementation),
                                                    OptimizerContext::OneGroup(multi_params));
      ASSERT_TRUE(loop.ok()) << loop.status();
      ASSERT_TRUE(multi.ok()) << multi.status();
      for (int step = 0; step < 5; ++step) {
        for (size_t i = 0; i < loop_params.size(); ++i) {
          const torch::Tensor grad = torch::randn_like(loop_params[i]);
          loop_params[i].mutable_grad() = grad.clone();
          multi_params[i].mutable_grad() = grad.clone();
        }
        (*loop)->step();
        (*multi)->step();
      }
      for (size_t i = 0; i < loop_params.size(); ++i) {
        EXPECT_TRUE(torch::allclose(loop_params[i], multi_params[i], 1e-5, 1e-6)) << i;
      }
    }
  }
}

// uint8 batches normalized on the GPU against the same maps on the CPU.
TEST(CudaTest, ChannelMapsOnTheGpuMatchTheCpu) {
  SKIP_WITHOUT_GPU(1);
  const torch::Tensor images = torch::randint(0, 256, {4, 3, 9, 7}, torch::kByte);
  const std::vector<ChannelMap> maps = {
      ChannelMap{.multiply = {1.0f / 255}, .takes_uint8 = true, .takes_float = false},
      ChannelMap{.subtract = {0.485f, 0.456f, 0.406f}, .divide = {0.229f, 0.224f, 0.225f}}};
  const torch::Tensor on_gpu = ApplyChannelMaps(images.cuda(), maps);
  EXPECT_TRUE(on_gpu.is_cuda());
  EXPECT_TRUE(torch::allclose(on_gpu.cpu(), ApplyChannelMaps(images, maps), 1e-6, 1e-6));
}

// ---- Bad input, on every machine ----

// The CPU build says it is CPU-only; a CUDA build, that the default
// config's strategy runs on the CPU.
TEST(CudaConfigTest, CudaGraphsWhereTheyCannotRunAreAConfigError) {
  const testing::CommandResult result =
      RunTrain("--set=trainer.cuda_graphs=true --set=trainer.max_steps=1 --dry_run");
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_THAT(result.output,
              HasSubstr(kCudaBuild ? "trainer.cuda_graphs: true needs the model on a CUDA device"
                                   : "trainer.cuda_graphs: true needs a CUDA build of the "
                                     "runner, and this one is CPU-only"));
}

TEST(CudaConfigTest, Fp16AutocastOnTheCpuIsAConfigError) {
  const testing::CommandResult result =
      RunTrain("--set=trainer.precision=FP16_AUTOCAST --set=trainer.max_steps=1 --dry_run");
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("trainer.precision: FP16_AUTOCAST runs on CUDA devices "
                                       "only, and strategy \"single\" runs on the CPU"));
}

// The CPU build says it is CPU-only; a CUDA build says what it sees.
TEST(CudaConfigTest, ACudaDeviceThatIsNotThereIsAConfigError) {
  const int visible = VisibleCudaDevices();
  const std::string device = absl::StrCat("cuda:", visible);
  const testing::CommandResult result =
      RunTrain("--set='strategy={" + SingleOn(device) + "}' --dry_run");
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("device: \"" + device + "\""));
  if (!kCudaBuild) {
    EXPECT_THAT(result.output, HasSubstr("needs a CUDA build of the runner, and this one is "
                                         "CPU-only"));
  } else if (visible == 0) {
    EXPECT_THAT(result.output, HasSubstr("no CUDA device is visible"));
  } else {
    EXPECT_THAT(result.output, HasSubstr(absl::StrCat("but only ", visible, " CUDA device")));
  }
}

TEST(CudaConfigTest, NcclOnTheCpuIsAConfigError) {
  const testing::CommandResult result = RunTrain(
      "--set='strategy={name: \"ddp\" options { [type.googleapis.com/pipeline.DdpOptions] { "
      "backend: NCCL device: \"cpu\" } }}' --dry_run");
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("NCCL"));
  EXPECT_THAT(result.output, HasSubstr(kCudaBuild ? "backend: NCCL goes with device: \"cuda\""
                                                  : "CPU-only"));
}

}  // namespace
}  // namespace pipeline
