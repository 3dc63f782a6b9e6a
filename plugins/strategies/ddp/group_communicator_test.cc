#include "plugins/strategies/ddp/group_communicator.h"

#include <future>
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

using ::testing::HasSubstr;
using testing::ConnectLoopbackRank;
using testing::FreePort;
using testing::LoopbackRank;
using testing::RunOnThreads;

// Tensors of two dtypes, one of them not contiguous and one a parameter,
// each rank's of other values.
std::vector<at::Tensor> TensorsOf(int rank) {
  const double base = 10.0 * (rank + 1);
  return {torch::arange(6, torch::kFloat).reshape({2, 3}).t() + base,
          torch::arange(4, torch::kLong) + static_cast<int64_t>(base),
          (torch::ones({3}) * base).requires_grad_()};
}

TEST(GroupCommunicatorTest, BroadcastCoalescedGivesEveryRankTheRootsTensors) {
  const int port = FreePort();
  std::vector<std::vector<at::Tensor>> tensors = {TensorsOf(0), TensorsOf(1)};
  const std::vector<at::Tensor> expected = TensorsOf(1);
  EXPECT_EQ(RunOnThreads(2,
                         [&](int rank) -> absl::Status {
                           absl::StatusOr<LoopbackRank> connected =
                               ConnectLoopbackRank(rank, 2, port);
                           if (!connected.ok()) return connected.status();
                           return CallTorch("test", [&] {
                             connected->collectives->BroadcastCoalesced(
                                 tensors[rank], "the test's broadcast", /*root=*/1);
                           });
                         }),
            (std::vector<std::string>{"", ""}));
  for (int rank = 0; rank < 2; ++rank) {
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_TRUE(tensors[rank][i].equal(expected[i])) << "rank " << rank << ", tensor " << i;
    }
    EXPECT_FALSE(tensors[rank][0].is_contiguous());
  }
}

// sync_batch_norm's collectives: every rank's statistics stacked in rank
// order, and sums written back into the caller's tensor, also when it is
// not contiguous.
TEST(GroupCommunicatorTest, BatchNormReplicasGatherInRankOrderAndSumInPlace) {
  const int port = FreePort();
  std::vector<at::Tensor> gathered(2);
  std::vector<at::Tensor> sums = {torch::tensor({{1.0f, 2.0f}, {3.0f, 4.0f}}).t(),
                                  torch::tensor({{10.0f, 20.0f}, {30.0f, 40.0f}}).t()};
  const at::Tensor expected_sum = sums[0] + sums[1];
  EXPECT_EQ(RunOnThreads(2,
                         [&](int rank) -> absl::Status {
                           absl::StatusOr<LoopbackRank> connected =
                               ConnectLoopbackRank(rank, 2, port);
                           if (!connected.ok()) return connected.status();
                           GroupBatchNormReplicas replicas(*connected->collectives);
                           return CallTorch("test", [&] {
                             gathered[rank] = replicas.AllGather(
                                 torch::full({3}, static_cast<float>(rank + 1)), "the mean");
                             replicas.AllReduceSum(sums[rank], "the sums");
                           });
                         }),
            (std::vector<std::string>{"", ""}));
  const at::Tensor stacked = torch::stack({torch::full({3}, 1.0f), torch::full({3}, 2.0f)});
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_TRUE(gathered[rank].equal(stacked)) << rank;
    EXPECT_TRUE(sums[rank].equal(expected_sum)) << rank;
    EXPECT_FALSE(sums[rank].is_contiguous());
  }
}

// Rank 1 takes part in the first barrier, not in the second: rank 0's
// error names the collective, the timeout, and where rank 1 is.
TEST(GroupCommunicatorTest, ACollectiveThatTimesOutNamesTheRankThatNeverCame) {
  const int port = FreePort();
  std::promise<void> rank0_done;
  std::shared_future<void> done = rank0_done.get_future().share();
  std::string error;
  EXPECT_EQ(RunOnThreads(2,
                         [&](int rank) -> absl::Status {
                           absl::StatusOr<LoopbackRank> connected = ConnectLoopbackRank(
                               rank, 2, port, /*collective_timeout_seconds=*/1);
                           if (!connected.ok()) return connected.status();
                           GroupCommunicator communicator(*connected->collectives, torch::kCPU);
                           absl::Status first = communicator.Barrier("the first barrier");
                           if (rank == 1) {
                             done.wait();  // rank 0's group waits for this one's
                             return first;
                           }
                           error = std::string(
                               communicator.Barrier("the second barrier").message());
                           rank0_done.set_value();
                           return first;
                         }),
            (std::vector<std::string>{"", ""}));
  EXPECT_THAT(error, HasSubstr("ddp: the second barrier: "));
  EXPECT_THAT(error, HasSubstr("(waited up to timeout_seconds: 1); this is collective number 2 "
                               "of this rank, and rank 1 has not reached it: its last was number "
                               "1, the first barrier"));
}

}  // namespace
}  // namespace pipeline
