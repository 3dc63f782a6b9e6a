#ifndef PLUGINS_STRATEGIES_DDP_GROUP_COMMUNICATOR_H_
#define PLUGINS_STRATEGIES_DDP_GROUP_COMMUNICATOR_H_

// A ddp rank's collectives over its c10d group: the trainer's (votes,
// metrics, agreement checks), sync_batch_norm's and the gradient buckets',
// all entered through one CollectiveRunner, so each is numbered and named in
// the peer records and a dead, stopped or deadlocked peer is named the same
// way whichever collective it left waiting.

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pipeline/interfaces/communicator.h"
#include "pipeline/layers/batch_norm.h"
#include "pipeline/util/c10d_compat.h"
#include "plugins/strategies/ddp/peer_progress.h"
#include "torch/types.h"

namespace pipeline {

class CollectiveRunner {
 public:
  using Launch = std::function<c10::intrusive_ptr<c10d::Work>()>;

  // `progress` outlives the runner; each wait gives up after
  // `timeout_seconds`.
  CollectiveRunner(c10::intrusive_ptr<CollectiveGroup> group, PeerProgress& progress,
                   int timeout_seconds)
      : group_(std::move(group)), progress_(progress), timeout_seconds_(timeout_seconds) {}

  int rank() const { return group_->getRank(); }
  int world_size() const { return group_->getSize(); }
  CollectiveGroup& group() { return *group_; }

  // Starts the collective `launch` returns, as `collective` in the peer
  // records, without waiting for it.
  c10::intrusive_ptr<c10d::Work> Start(const std::string& collective, const Launch& launch);

  // Waits for `work`, the collective this rank entered last. Throws on a
  // failure or timeout, naming the collective and the ranks that never
  // came.
  void Wait(c10d::Work& work, const std::string& collective);

  // Start, then Wait.
  void Run(const std::string& collective, const Launch& launch);

  // Replaces `tensors` on every rank with rank `root`'s: one broadcast for
  // the tensors of each dtype.
  void BroadcastCoalesced(std::vector<at::Tensor>& tensors, const std::string& collective,
                          int root = 0);

 private:
  c10::intrusive_ptr<CollectiveGroup> group_;
  PeerProgress& progress_;
  int timeout_seconds_;
};

// The trainer's collectives. NCCL reduces only device tensors: every tensor
// goes to `device` and back.
class GroupCommunicator : public Communicator {
 public:
  // `collectives` outlives the communicator.
  GroupCommunicator(CollectiveRunner& collectives, torch::Device device)
      : collectives_(collectives), device_(device) {}

  int rank() const override { return collectives_.rank(); }
  int world_size() const override { return collectives_.world_size(); }
  absl::Status AllReduceSum(std::vector<double>& values, const std::string& what) override;
  absl::StatusOr<std::vector<std::string>> AllGather(const std::string& bytes,
                                                     const std::string& what) override;
  absl::Status Broadcast(std::string& bytes, int root, const std::string& what) override;
  absl::Status Barrier(const std::string& what) override;

 private:
  std::vector<std::vector<at::Tensor>> GatherTensors(const at::Tensor& local,
                                                     const std::string& what);
  std::vector<int64_t> Gather(const at::Tensor& one_long, const std::string& what);

  CollectiveRunner& collectives_;
  torch::Device device_;
};

// sync_batch_norm's collectives, on the tensors' own device.
class GroupBatchNormReplicas : public BatchNormReplicas {
 public:
  // `collectives` outlives the replicas' last forward or backward pass.
  explicit GroupBatchNormReplicas(CollectiveRunner& collectives) : collectives_(collectives) {}

  torch::Tensor AllGather(const torch::Tensor& local, const std::string& what) override;
  void AllReduceSum(torch::Tensor& values, const std::string& what) override;

 private:
  CollectiveRunner& collectives_;
};

}  // namespace pipeline

#endif  // PLUGINS_STRATEGIES_DDP_GROUP_COMMUNICATOR_H_
