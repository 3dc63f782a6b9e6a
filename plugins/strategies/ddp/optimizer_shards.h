#ifndef PLUGINS_STRATEGIES_DDP_OPTIMIZER_SHARDS_H_
#define PLUGINS_STRATEGIES_DDP_OPTIMIZER_SHARDS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "pipeline/interfaces/communicator.h"
#include "pipeline/interfaces/optimizer.h"

namespace pipeline {

// ZeRO stage 1, as torch.distributed.optim.ZeroRedundancyOptimizer: the
// optimizer's parameters are split between the ranks (largest first, each
// to the rank with the fewest elements so far); each rank keeps the state
// (momentum, Adam's moments) of its own shard only and steps only those
// parameters, whose new values their owner then broadcasts to the others.
// Every parameter's update is computed as the whole optimizer computes it,
// from the same averaged gradient, so the weights are the same as without.
class OptimizerShards {
 public:
  // Sends `tensors` (parameters of one shard) from rank `root` to every
  // rank, in place.
  using Broadcast = std::function<void(std::vector<at::Tensor>& tensors, int root)>;

  OptimizerShards(int rank, int world_size) : rank_(rank), world_size_(world_size) {}

  // One optimizer step of this rank's shard, then the broadcasts that give
  // every rank every shard's new values. Throws what LibTorch throws.
  void Step(Optimizer& optimizer, const Broadcast& broadcast);

  // Gives rank 0's optimizer the state of every shard (every rank calls it,
  // before rank 0 writes a checkpoint, so that holds the whole state and a
  // run resumes with any world size). Rank 0's next Step drops the other
  // shards' state again.
  absl::Status GatherState(Optimizer& optimizer, Communicator& communicator);

  // Bytes of the state this rank's optimizer holds, serialized.
  static int64_t StateBytes(const Optimizer& optimizer);

  // The rank that owns each parameter, in the order of the optimizer's
  // groups (after the first Step or GatherState).
  const std::vector<int>& owners() const { return owners_; }

 private:
  void Partition(const Optimizer& optimizer);
  void DropOtherShardsState(Optimizer& optimizer) const;
  std::string SerializeOwnState(const Optimizer& optimizer) const;
  void AddState(Optimizer& optimizer, const std::string& bytes) const;

  int rank_;
  int world_size_;
  std::vector<at::Tensor> parameters_;  // the optimizer's, in group order
  std::vector<int> owners_;             // of parameters_
};

}  // namespace pipeline

#endif  // PLUGINS_STRATEGIES_DDP_OPTIMIZER_SHARDS_H_
