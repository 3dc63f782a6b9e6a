#include "plugins/strategies/ddp/gradient_reducer.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/testing/free_port.h"
#include "pipeline/util/torch_status.h"
#include "plugins/strategies/ddp/loopback_ranks.h"
#include "torch/types.h"

namespace pipeline {
namespace {

using testing::ConnectLoopbackRank;
using testing::FreePort;
using testing::LoopbackRank;
using testing::RunOnThreads;
using Buckets = std::vector<std::vector<size_t>>;

// A rank's reducer and what it runs over.
struct ReducingRank {
  LoopbackRank connected;
  std::unique_ptr<GroupCommunicator> communicator;
  std::unique_ptr<GradientReducer> reducer;
};

absl::StatusOr<ReducingRank> ConnectReducingRank(int rank, int world_size, int port,
                                                 const DdpOptions& options) {
  absl::StatusOr<LoopbackRank> connected = ConnectLoopbackRank(rank, world_size, port);
  if (!connected.ok()) return connected.status();
  ReducingRank reducing;
  reducing.connected = *std::move(connected);
  reducing.communicator =
      std::make_unique<GroupCommunicator>(*reducing.connected.collectives, torch::kCPU);
  reducing.reducer = std::make_unique<GradientReducer>(options, *reducing.connected.collectives,
                                                       *reducing.communicator);
  return reducing;
}

DdpOptions WithBucketCap(float megabytes) {
  DdpOptions options;
  options.set_bucket_cap_mb(megabytes);
  return options;
}

// Float parameters of `sizes` elements, named "p0", "p1", ...
std::vector<at::Tensor> Parameters(const std::vector<int64_t>& sizes) {
  std::vector<at::Tensor> parameters;
  for (int64_t size : sizes) parameters.push_back(torch::zeros({size}).requires_grad_());
  return parameters;
}
std::vector<std::string> NamesOf(const std::vector<at::Tensor>& parameters) {
  std::vector<std::string> names;
  for (size_t i = 0; i < parameters.size(); ++i) names.push_back(absl::StrCat("p", i));
  return names;
}

// The buckets a reducer of one rank makes of parameters of `sizes`.
Buckets BucketsOf(const std::vector<int64_t>& sizes, const DdpOptions& options) {
  absl::StatusOr<ReducingRank> rank = ConnectReducingRank(0, 1, FreePort(), options);
  EXPECT_TRUE(rank.ok()) << rank.status();
  if (!rank.ok()) return {};
  const std::vector<at::Tensor> parameters = Parameters(sizes);
  rank->reducer->Prepare(parameters, NamesOf(parameters));
  return rank->reducer->BucketParameters();
}

// bucket_cap_mb 0.001: 1048 bytes, two parameters of 100 floats (400
// bytes each). Reverse order; one larger than the cap has a bucket alone.
TEST(GradientReducerTest, BucketsTakeTheParametersInReverseUpToTheCap) {
  EXPECT_EQ(BucketsOf({100, 100, 1000, 100, 100}, WithBucketCap(0.001f)),
            (Buckets{{4, 3}, {2}, {1, 0}}));
}

// The default cap is 25 MB, but the first bucket closes at 1 MiB, so its
// all-reduce starts early in backward: two parameters of 400 kB fit it,
// three do not; the second bucket takes the rest.
TEST(GradientReducerTest, TheFirstBucketHoldsAtMostOneMebibyte) {
  EXPECT_EQ(BucketsOf({100000, 100000, 100000, 100000, 100000}, DdpOptions()),
            (Buckets{{4, 3}, {2, 1, 0}}));
}

// Each .grad becomes its parameter's part of its bucket's storage, shaped
// and strided like the parameter, keeping the value it had (none: zeros).
TEST(GradientReducerTest, GradientsBecomeViewsOfTheirBucketKeepingTheirValues) {
  absl::StatusOr<ReducingRank> rank = ConnectReducingRank(0, 1, FreePort(), WithBucketCap(0.001f));
  ASSERT_TRUE(rank.ok()) << rank.status();
  // 48, 48 and 1040 bytes under a cap of 1048: buckets {2}, {1, 0}.
  // Parameter 1 is transposed.
  std::vector<at::Tensor> parameters = {torch::zeros({3, 4}).requires_grad_(),
                                        torch::zeros({4, 3}).t().requires_grad_(),
                                        torch::zeros({260}).requires_grad_()};
  const at::Tensor grad1 = torch::arange(12, torch::kFloat).reshape({3, 4});
  parameters[1].mutable_grad() = grad1.clone();
  parameters[2].mutable_grad() = torch::full({260}, 7.0f);
  rank->reducer->Prepare(parameters, NamesOf(parameters));
  ASSERT_EQ(rank->reducer->BucketParameters(), (Buckets{{2}, {1, 0}}));

  EXPECT_TRUE(parameters[0].grad().equal(torch::zeros({3, 4})));
  EXPECT_TRUE(parameters[1].grad().equal(grad1));
  EXPECT_TRUE(parameters[2].grad().equal(torch::full({260}, 7.0f)));
  for (const at::Tensor& p : parameters) {
    EXPECT_EQ(p.grad().sizes(), p.sizes());
    EXPECT_EQ(p.grad().strides(), p.strides());
  }
  EXPECT_TRUE(parameters[0].grad().is_alias_of(parameters[1].grad()));
  EXPECT_FALSE(parameters[0].grad().is_alias_of(parameters[2].grad()));
  // Backward accumulates into the bucket (here without synchronisation,
  // as between the micro-batches of gradient accumulation).
  rank->reducer->set_synchronize(false);
  (parameters[0] * 2).sum().backward();
  EXPECT_TRUE(parameters[0].grad().equal(torch::full({3, 4}, 2.0f)));
  EXPECT_TRUE(parameters[0].grad().is_alias_of(parameters[1].grad()));
}

// Two ranks, a parameter per bucket: after one backward pass each, every
// .grad on both ranks is the mean of the two ranks' gradients.
std::vector<std::vector<at::Tensor>> AverageOnTwoRanks(const DdpOptions& options,
                                                       std::vector<at::Tensor>* expected) {
  const std::vector<int64_t> sizes = {3, 4, 5};
  torch::manual_seed(0);
  std::vector<std::vector<at::Tensor>> weights(2);
  for (auto& rank_weights : weights) {
    for (int64_t size : sizes) rank_weights.push_back(torch::randn({size}));
  }
  expected->clear();
  for (size_t i = 0; i < sizes.size(); ++i) {
    expected->push_back((weights[0][i] + weights[1][i]) / 2);
  }
  std::vector<std::vector<at::Tensor>> grads(2);
  const int port = FreePort();
  EXPECT_EQ(RunOnThreads(2,
                         [&](int r) -> absl::Status {
                           absl::StatusOr<ReducingRank> rank =
                               ConnectReducingRank(r, 2, port, options);
                           if (!rank.ok()) return rank.status();
                           std::vector<at::Tensor> parameters = Parameters(sizes);
                           return CallTorch("test", [&] {
                             rank->reducer->Prepare(parameters, NamesOf(parameters));
                             at::Tensor loss = torch::zeros({});
                             for (size_t i = 0; i < sizes.size(); ++i) {
                               loss = loss + (parameters[i] * weights[r][i]).sum();
                             }
                             rank->reducer->BeginBackward(loss);
                             loss.backward();
                             rank->reducer->Finish();
                             for (const at::Tensor& p : parameters) grads[r].push_back(p.grad());
                           });
                         }),
            (std::vector<std::string>{"", ""}));
  return grads;
}

TEST(GradientReducerTest, EveryRanksGradientsAreTheAverage) {
  std::vector<at::Tensor> expected;
  const auto grads = AverageOnTwoRanks(WithBucketCap(0.00001f), &expected);
  ASSERT_EQ(grads[0].size(), expected.size());
  ASSERT_EQ(grads[1].size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_TRUE(torch::allclose(grads[0][i], expected[i], 1e-6, 1e-7)) << i;
    EXPECT_TRUE(grads[1][i].equal(grads[0][i])) << i;
  }
}

// float16 on the wire: the average to float16's ~3 digits, and really
// rounded to float16 values (not a silent no-op).
TEST(GradientReducerTest, Fp16CompressionAveragesToFloat16Precision) {
  DdpOptions options = WithBucketCap(0.00001f);
  options.set_gradient_compression(DdpOptions::FP16);
  std::vector<at::Tensor> expected;
  const auto grads = AverageOnTwoRanks(options, &expected);
  ASSERT_EQ(grads[0].size(), expected.size());
  int64_t rounded = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_TRUE(torch::allclose(grads[0][i], expected[i], 2e-3, 1e-4)) << i;
    EXPECT_TRUE(grads[1][i].equal(grads[0][i])) << i;
    EXPECT_TRUE(grads[0][i].equal(grads[0][i].to(torch::kHalf).to(torch::kFloat))) << i;
    rounded += grads[0][i].ne(expected[i]).sum().item<int64_t>();
  }
  EXPECT_GT(rounded, 0);
}

// x * p[order[0]] * p[order[1]] * p[order[2]]: backward reaches the last
// factor's parameter first.
at::Tensor Chain(const std::vector<at::Tensor>& parameters, const std::vector<size_t>& order) {
  at::Tensor product = torch::ones({4});
  for (size_t k : order) product = product * parameters[k];
  return product.sum();
}

// After the first synchronised step the buckets follow the order rank 0's
// gradients became ready in, on every rank (rank 1's came in the opposite
// order); not with find_unused_parameters.
TEST(GradientReducerTest, BucketsAreRebuiltInRank0sReadyOrder) {
  for (const bool find_unused : {false, true}) {
    DdpOptions options = WithBucketCap(0.00001f);
    options.set_find_unused_parameters(find_unused);
    std::vector<Buckets> buckets(2);
    std::vector<std::vector<at::Tensor>> grads(2);
    const int port = FreePort();
    EXPECT_EQ(RunOnThreads(2,
                           [&](int r) -> absl::Status {
                             absl::StatusOr<ReducingRank> rank =
                                 ConnectReducingRank(r, 2, port, options);
                             if (!rank.ok()) return rank.status();
                             std::vector<at::Tensor> parameters = {
                                 torch::full({4}, 1.0f).requires_grad_(),
                                 torch::full({4}, 2.0f).requires_grad_(),
                                 torch::full({4}, 3.0f).requires_grad_()};
                             return CallTorch("test", [&] {
                               rank->reducer->Prepare(parameters, NamesOf(parameters));
                               const at::Tensor loss =
                                   Chain(parameters, r == 0 ? std::vector<size_t>{2, 1, 0}
                                                            : std::vector<size_t>{0, 1, 2});
                               rank->reducer->BeginBackward(loss);
                               loss.backward();
                               rank->reducer->Finish();
                               buckets[r] = rank->reducer->BucketParameters();
                               for (const at::Tensor& p : parameters) grads[r].push_back(p.grad());
                             });
                           }),
              (std::vector<std::string>{"", ""}))
        << find_unused;
    const Buckets expected = find_unused ? Buckets{{2}, {1}, {0}} : Buckets{{0}, {1}, {2}};
    EXPECT_EQ(buckets[0], expected) << find_unused;
    EXPECT_EQ(buckets[1], expected) << find_unused;
    // The gradient of p0 * p1 * p2 (each rank's the same), kept through
    // the rebuilding.
    ASSERT_EQ(grads[0].size(), 3u);
    EXPECT_TRUE(grads[0][0].equal(torch::full({4}, 6.0f))) << find_unused;
    EXPECT_TRUE(grads[0][1].equal(torch::full({4}, 3.0f))) << find_unused;
    EXPECT_TRUE(grads[0][2].equal(torch::full({4}, 2.0f))) << find_unused;
  }
}

}  // namespace
}  // namespace pipeline
