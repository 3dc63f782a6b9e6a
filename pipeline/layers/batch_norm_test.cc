#include "pipeline/layers/batch_norm.h"

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "torch/torch.h"

namespace pipeline {
namespace {

using ::testing::HasSubstr;

// Replicas as threads of this process: each collective waits until every
// replica has put its tensor in, then every replica reads them all.
class Exchange {
 public:
  explicit Exchange(int world_size) : slots_(world_size) {}

  std::vector<torch::Tensor> Share(int rank, const torch::Tensor& tensor) {
    std::unique_lock<std::mutex> lock(mutex_);
    const int64_t round = round_;
    slots_[rank] = tensor.clone();
    if (++arrived_ == static_cast<int>(slots_.size())) {
      shared_ = slots_;
      arrived_ = 0;
      ++round_;
      changed_.notify_all();
    } else {
      changed_.wait(lock, [&] { return round_ != round; });
    }
    ++calls_;
    return shared_;
  }
  int64_t calls() {
    std::lock_guard<std::mutex> lock(mutex_);
    return calls_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<torch::Tensor> slots_, shared_;
  int arrived_ = 0;
  int64_t round_ = 0, calls_ = 0;
};

class ThreadReplicas : public BatchNormReplicas {
 public:
  ThreadReplicas(Exchange& exchange, int rank) : exchange_(exchange), rank_(rank) {}
  torch::Tensor AllGather(const torch::Tensor& local, const std::string&) override {
    return torch::stack(exchange_.Share(rank_, local));
  }
  void AllReduceSum(torch::Tensor& values, const std::string&) override {
    values.copy_(torch::stack(exchange_.Share(rank_, values)).sum(0));
  }

 private:
  Exchange& exchange_;
  int rank_;
};

struct Pass {
  torch::Tensor output, input_grad, weight_grad, bias_grad, running_mean, running_var;
};

// Forward and backward of `layer` on `input` with the loss sum(y * w).
template <typename Layer>
Pass ForwardBackward(Layer& layer, const torch::Tensor& input, const torch::Tensor& w,
         const std::function<torch::Tensor(const torch::Tensor&)>& forward) {
  torch::Tensor x = input.clone().requires_grad_(true);
  torch::Tensor y = forward(x);
  (y.to(torch::kFloat) * w).sum().backward();
  return {y.detach(), x.grad(), layer.weight.grad(), layer.bias.grad(), layer.running_mean.clone(),
          layer.running_var.clone()};
}

// Two replicas on half the batch each, synchronised, against one plain
// BatchNorm2d on the whole batch: the same outputs, input gradients,
// running statistics, and (summed over the replicas) weight gradients.
void ExpectSameAsTheWholeBatch(torch::Tensor input, double tolerance) {
  torch::manual_seed(1);
  const torch::Tensor w = torch::randn(input.sizes());
  torch::nn::BatchNorm2d whole(torch::nn::BatchNorm2dOptions(3).momentum(0.3));
  const Pass reference =
      ForwardBackward(*whole, input, w, [&](const torch::Tensor& x) { return whole->forward(x); });

  const int64_t half = input.size(0) / 2;
  Exchange exchange(2);
  std::vector<Pass> passes(2);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 2; ++rank) {
    threads.emplace_back([&, rank] {
      BatchNorm2d layer(torch::nn::BatchNorm2dOptions(3).momentum(0.3));
      EXPECT_EQ(*SynchronizeBatchNorm(*layer, std::make_shared<ThreadReplicas>(exchange, rank)),
                1);
      passes[rank] = ForwardBackward(*layer, input.narrow(0, half * rank, half), w.narrow(0, half * rank, half),
                         [&](const torch::Tensor& x) { return layer->forward(x); });
    });
  }
  for (std::thread& t : threads) t.join();
  const auto close = [&](const torch::Tensor& a, const torch::Tensor& b) {
    return torch::allclose(a.to(torch::kFloat), b.to(torch::kFloat), tolerance, tolerance);
  };
  EXPECT_TRUE(close(torch::cat({passes[0].output, passes[1].output}), reference.output));
  EXPECT_TRUE(close(torch::cat({passes[0].input_grad, passes[1].input_grad}), reference.input_grad));
  EXPECT_TRUE(close(passes[0].weight_grad + passes[1].weight_grad, reference.weight_grad));
  EXPECT_TRUE(close(passes[0].bias_grad + passes[1].bias_grad, reference.bias_grad));
  for (const Pass& pass : passes) {
    EXPECT_TRUE(close(pass.running_mean, reference.running_mean));
    EXPECT_TRUE(close(pass.running_var, reference.running_var));
  }
}

TEST(SyncBatchNormTest, TwoReplicasMatchOneLayerOnTheWholeBatch) {
  torch::manual_seed(0);
  ExpectSameAsTheWholeBatch(torch::randn({8, 3, 5, 4}) * 3 + 1, 1e-5);
}

TEST(SyncBatchNormTest, ChannelsLastInputMatchesToo) {
  torch::manual_seed(0);
  ExpectSameAsTheWholeBatch(
      (torch::randn({6, 3, 4, 4}) * 2).contiguous(torch::MemoryFormat::ChannelsLast), 1e-5);
}

TEST(SyncBatchNormTest, UnsynchronisedItIsLibTorchsLayer) {
  torch::manual_seed(0);
  const torch::Tensor input = torch::randn({4, 3, 2, 2});
  const torch::Tensor w = torch::randn(input.sizes());
  torch::nn::BatchNorm2d plain(3);
  BatchNorm2d ours(3);
  const Pass a = ForwardBackward(*plain, input, w, [&](const torch::Tensor& x) { return plain->forward(x); });
  const Pass b = ForwardBackward(*ours, input, w, [&](const torch::Tensor& x) { return ours->forward(x); });
  EXPECT_TRUE(torch::equal(a.output, b.output));
  EXPECT_TRUE(torch::equal(a.input_grad, b.input_grad));
  EXPECT_TRUE(torch::equal(a.running_var, b.running_var));
  EXPECT_EQ(ours->named_parameters().keys(), plain->named_parameters().keys());
  EXPECT_EQ(ours->named_buffers().keys(), plain->named_buffers().keys());
}

// Evaluation uses the running statistics and so needs no collective: a
// replica evaluating alone must not wait for the others.
TEST(SyncBatchNormTest, EvaluationCallsNoCollective) {
  Exchange exchange(2);
  BatchNorm2d layer(3);
  ASSERT_TRUE(SynchronizeBatchNorm(*layer, std::make_shared<ThreadReplicas>(exchange, 0)).ok());
  layer->eval();
  torch::nn::BatchNorm2d plain(3);
  plain->eval();
  const torch::Tensor input = torch::randn({2, 3, 2, 2});
  EXPECT_TRUE(torch::equal(layer->forward(input), plain->forward(input)));
  EXPECT_EQ(exchange.calls(), 0);
}

class Mixed : public torch::nn::Module {
 public:
  Mixed() {
    register_module("ours", BatchNorm2d(2));
    register_module("block", torch::nn::Sequential(BatchNorm2d(2), torch::nn::BatchNorm1d(2)));
  }
};

TEST(SyncBatchNormTest, ALayerThatCannotSynchroniseIsNamed) {
  Exchange exchange(1);
  Mixed model;
  const absl::StatusOr<int> result =
      SynchronizeBatchNorm(model, std::make_shared<ThreadReplicas>(exchange, 0));
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.status().message(), HasSubstr("`block.1` (torch::nn::BatchNorm1dImpl)"));
  EXPECT_THAT(result.status().message(), HasSubstr("pipeline::BatchNorm2d"));
}

TEST(SyncBatchNormTest, AModelWithoutBatchNormHasNoneToSynchronise) {
  Exchange exchange(1);
  torch::nn::Linear linear(2, 2);
  EXPECT_EQ(*SynchronizeBatchNorm(*linear, std::make_shared<ThreadReplicas>(exchange, 0)), 0);
}

}  // namespace
}  // namespace pipeline
