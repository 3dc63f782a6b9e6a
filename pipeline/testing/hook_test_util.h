#ifndef PIPELINE_TESTING_HOOK_TEST_UTIL_H_
#define PIPELINE_TESTING_HOOK_TEST_UTIL_H_

// A TrainContext for the hook tests: a tiny model, SGD, a cross-entropy
// loss, the config's metrics, and a strategy whose communicator plays one
// rank of a job whose other ranks the test makes up (what they add in each
// all-reduce), so multi-rank decisions run in one process. The progress
// lines and the JSON events go to strings the test reads; the output
// folder is a fresh temporary one.
//
//   HookTestRun run(ParseConfig("checkpoint { every_steps: 2 }"), /*rank=*/0,
//                   /*world_size=*/2);
//   run.communicator().OtherRanksAdd("the stop vote", {1});
//   ASSERT_OK(hook.OnStepEnd(run.context(), StepReport{}));

#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "ATen/ops/cross_entropy_loss.h"
#include "absl/status/status.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "pipeline/config/pipeline.pb.h"
#include "pipeline/interfaces/communicator.h"
#include "pipeline/interfaces/dataset.h"
#include "pipeline/interfaces/loss.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/interfaces/sampler.h"
#include "pipeline/interfaces/strategy.h"
#include "pipeline/testing/tiny_models.h"
#include "pipeline/trainer/metric_set.h"
#include "pipeline/trainer/output_write_errors.h"
#include "pipeline/trainer/progress_printer.h"
#include "pipeline/trainer/run_options.h"
#include "pipeline/trainer/trainer_hook.h"
#include "torch/nn/modules/linear.h"
#include "torch/optim/sgd.h"

namespace pipeline {
namespace testing {

#define HOOK_TEST_ASSERT_OK(expression)                       \
  do {                                                        \
    const absl::Status hook_test_status = (expression);       \
    ASSERT_TRUE(hook_test_status.ok()) << hook_test_status;   \
  } while (0)

// One rank (`rank` of `world_size`) of a made-up job. AllReduceSum adds,
// element-wise, what OtherRanksAdd said the other ranks contribute to the
// collective named `what` (nothing unless told), and every call is
// recorded by name.
class FakeCommunicator : public Communicator {
 public:
  FakeCommunicator(int rank, int world_size) : rank_(rank), world_size_(world_size) {}

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }

  // The other ranks' sum for every later all-reduce named `what`.
  void OtherRanksAdd(const std::string& what, std::vector<double> values) {
    additions_[what] = std::move(values);
  }
  // Every later all-reduce named `what` fails with `status` (a dead peer).
  void FailOn(const std::string& what, absl::Status status) { failures_[what] = status; }

  absl::Status AllReduceSum(std::vector<double>& values, const std::string& what) override {
    calls_.push_back(what);
    if (auto failure = failures_.find(what); failure != failures_.end()) return failure->second;
    auto addition = additions_.find(what);
    if (addition == additions_.end()) return absl::OkStatus();
    if (addition->second.size() != values.size()) {
      ADD_FAILURE() << "all-reduce \"" << what << "\" of " << values.size()
                    << " values, but the test made up " << addition->second.size();
      return absl::InternalError("size mismatch in the fake all-reduce");
    }
    for (size_t i = 0; i < values.size(); ++i) values[i] += addition->second[i];
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<std::string>> AllGather(const std::string& bytes,
                                                     const std::string& what) override {
    calls_.push_back(what);
    return std::vector<std::string>(world_size_, bytes);
  }
  absl::Status Broadcast(std::string&, int, const std::string& what) override {
    calls_.push_back(what);
    return absl::OkStatus();
  }
  absl::Status Barrier(const std::string& what) override {
    calls_.push_back(what);
    return absl::OkStatus();
  }

  // The names of the collectives called so far, in order.
  const std::vector<std::string>& calls() const { return calls_; }

 private:
  const int rank_;
  const int world_size_;
  std::map<std::string, std::vector<double>> additions_;
  std::map<std::string, absl::Status> failures_;
  std::vector<std::string> calls_;
};

class TestCrossEntropy : public Loss {
 public:
  torch::Tensor Compute(const torch::Tensor& logits, const torch::Tensor& targets,
                        at::Reduction::Reduction reduction) const override {
    return at::cross_entropy_loss(logits, targets, {}, reduction);
  }
};

// Runs the model where it is; collectives go to `communicator`.
class FakeStrategy : public Strategy {
 public:
  explicit FakeStrategy(Communicator& communicator) : communicator_(communicator) {}
  absl::Status Prepare(Model&, const ModelFactory&) override { return absl::OkStatus(); }
  absl::StatusOr<StepOutput> ForwardBackward(Model& model, const torch::Tensor& images,
                                             const torch::Tensor& labels,
                                             const LossFunction& loss) override {
    const torch::Tensor logits = model.forward(images);
    const torch::Tensor value = loss(logits, labels);
    value.backward();
    return StepOutput{value.detach(), logits.detach()};
  }
  absl::StatusOr<torch::Tensor> Forward(Model& model, const torch::Tensor& images) override {
    return model.forward(images);
  }
  Communicator& communicator() override { return communicator_; }

 private:
  Communicator& communicator_;
};

// `size` samples of 2x2x1 float images for TinyModel, sample i labelled
// i % 3; the samples in `bad` fail to load, naming a file.
class TinyDataset : public Dataset {
 public:
  explicit TinyDataset(int64_t size, std::set<int64_t> bad = {})
      : size_(size), bad_(std::move(bad)) {}
  int64_t size() const override { return size_; }
  absl::StatusOr<Sample> Get(int64_t index) const override {
    if (bad_.count(index)) {
      return absl::DataLossError("truncated file image_" + std::to_string(index) + ".png");
    }
    Sample sample;
    sample.image.height = sample.image.width = 2;
    sample.image.channels = 1;
    for (int k = 0; k < 4; ++k) sample.image.f32.push_back(Pixel(index, k));
    sample.label = index % 3;
    return sample;
  }
  const std::vector<std::string>& class_names() const override { return classes_; }

  // The model's input for sample `index`, as the loader assembles it.
  static torch::Tensor Input(int64_t index) {
    std::vector<float> pixels;
    for (int k = 0; k < 4; ++k) pixels.push_back(Pixel(index, k));
    return torch::tensor(pixels).view({1, 1, 2, 2});
  }

 private:
  static float Pixel(int64_t index, int k) {
    return static_cast<float>(((index * 7 + k * 3) % 11) / 10.0);
  }

  const int64_t size_;
  const std::set<int64_t> bad_;
  const std::vector<std::string> classes_ = {"a", "b", "c"};
};

// Every sample, in order.
class InOrderSampler : public Sampler {
 public:
  std::vector<int64_t> EpochIndices(int64_t dataset_size, int64_t) const override {
    std::vector<int64_t> indices(dataset_size);
    for (int64_t i = 0; i < dataset_size; ++i) indices[i] = i;
    return indices;
  }
};

inline PipelineConfig ParseConfig(const std::string& text) {
  PipelineConfig config;
  if (!google::protobuf::TextFormat::ParseFromString(text, &config)) {
    ADD_FAILURE() << "cannot parse the test config: " << text;
  }
  return config;
}

// A fresh folder under the test's temporary folder.
inline std::string MakeTempDir() {
  std::string pattern = ::testing::TempDir();
  if (!pattern.empty() && pattern.back() != '/') pattern += '/';
  pattern += "hook_test_XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp " << pattern;
  return pattern;
}

inline std::string ReadFileText(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// The non-empty lines of `text`.
inline std::vector<std::string> Lines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

inline MetricSet MetricsOf(const PipelineConfig& config, const std::vector<std::string>& classes) {
  absl::StatusOr<MetricSet> metrics = MetricSet::Create(config, classes);
  if (metrics.ok()) return *std::move(metrics);
  ADD_FAILURE() << metrics.status();
  return *MetricSet::Create(PipelineConfig(), classes);  // the loss only
}

// The parts of a run and a TrainContext around them, for rank `rank` of
// `world_size` (rank 0 is the primary: it gets the events stream). The
// config's output_dir is set to a fresh temporary folder, removed again at
// the end. Position: epoch 0 of 2, 4 steps each.
class HookTestRun {
 public:
  explicit HookTestRun(PipelineConfig config, int rank = 0, int world_size = 1)
      : dir_(MakeTempDir()),
        communicator_(rank, world_size),
        run_(MakeRun(WithOutputDir(std::move(config), dir_), communicator_)),
        progress_(&log_),
        write_errors_(run_.config.checkpoint().on_write_error(), dir_,
                      [this](const std::string& line) { progress_.Line(line); },
                      rank == 0 ? &events_ : nullptr),
        context_{
            .run = run_,
            .options = options_,
            .output_dir = std::filesystem::path(dir_),
            .primary = rank == 0,
            .progress = progress_,
            .events = rank == 0 ? &events_ : nullptr,
            .write_errors = write_errors_,
        } {
    options_.stop_signal = &stop_signal_;
    options_.log = &other_rank_log_;
    context_.position = {/*epoch=*/0, /*step=*/0, /*epoch_step=*/0, /*steps_per_epoch=*/4,
                         /*total_steps=*/8, /*epochs=*/2, /*learning_rate=*/0.1};
    context_.epoch_sums = metrics().EmptySums();
  }
  ~HookTestRun() {
    std::error_code error;
    std::filesystem::remove_all(dir_, error);
  }
  HookTestRun(const HookTestRun&) = delete;
  HookTestRun& operator=(const HookTestRun&) = delete;

  TrainContext& context() { return context_; }
  TrainPosition& position() { return context_.position; }
  const PipelineConfig& config() const { return run_.config; }
  const std::filesystem::path dir() const { return dir_; }
  FakeCommunicator& communicator() { return communicator_; }
  TinyModel& model() { return static_cast<TinyModel&>(*run_.model); }
  torch::optim::SGD& optimizer() { return static_cast<torch::optim::SGD&>(*run_.optimizer); }
  const MetricSet& metrics() const { return *run_.metrics; }
  const Loss& loss() const { return *run_.loss; }
  Strategy& strategy() { return *run_.strategy; }
  std::atomic<int>& stop_signal() { return stop_signal_; }
  // Trains under loss scaling (trainer.grad_scaler) from here on.
  GradScaler& UseScaler(const GradScalerConfig& config) { return run_.scaler.emplace(config); }
  // The progress lines so far.
  std::string log() const { return log_.str(); }
  // What a rank other than 0 writes to RunOptions::log.
  std::string other_rank_log() const { return other_rank_log_.str(); }
  // The JSON events so far (rank 0).
  std::string events() const { return events_.str(); }

  // One batch of `n` images (4 values each) with labels 0, 1, 2, 0, ...
  static torch::Tensor Images(int64_t n) {
    return torch::arange(n * 4, torch::kFloat).div(n * 4).view({n, 1, 2, 2});
  }
  static torch::Tensor Labels(int64_t n) { return torch::arange(n, torch::kLong).remainder(3); }

  // Forward and backward of Images(n), leaving the parameters' gradients.
  void Backward(int64_t n = 4) {
    optimizer().zero_grad();
    at::cross_entropy_loss(model().forward(Images(n)), Labels(n)).backward();
  }

 private:
  static PipelineConfig WithOutputDir(PipelineConfig config, const std::string& dir) {
    config.set_output_dir(dir);
    return config;
  }

  // A tiny model, SGD at 0.1, cross-entropy and the config's metrics over
  // three classes, run where they are by a strategy whose collectives go to
  // `communicator`.
  static TrainRun MakeRun(PipelineConfig config, FakeCommunicator& communicator) {
    TrainRun run;
    run.config = std::move(config);
    run.classes = {"a", "b", "c"};
    run.strategy = std::make_unique<FakeStrategy>(communicator);
    run.model = std::make_unique<TinyModel>();
    run.optimizer = std::make_unique<torch::optim::SGD>(run.model->parameters(),
                                                        torch::optim::SGDOptions(0.1));
    run.loss = std::make_unique<TestCrossEntropy>();
    run.metrics.emplace(MetricsOf(run.config, run.classes));
    return run;
  }

  const std::string dir_;
  std::atomic<int> stop_signal_{0};
  std::ostringstream other_rank_log_;
  RunOptions options_;
  FakeCommunicator communicator_;
  TrainRun run_;
  std::ostringstream log_;
  std::ostringstream events_;
  ProgressPrinter progress_;
  OutputWriteErrors write_errors_;
  TrainContext context_;
};

}  // namespace testing
}  // namespace pipeline

#endif  // PIPELINE_TESTING_HOOK_TEST_UTIL_H_
