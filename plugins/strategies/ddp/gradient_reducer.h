#ifndef PLUGINS_STRATEGIES_DDP_GRADIENT_REDUCER_H_
#define PLUGINS_STRATEGIES_DDP_GRADIENT_REDUCER_H_

// ddp's gradient averaging, as PyTorch's Reducer (Li et al., "PyTorch
// Distributed", VLDB 2020). Gradients are averaged in buckets (at first
// the parameters in reverse registration order, about the order backward
// produces them; after the first step the order they really became ready
// in). Each parameter's .grad is a view of its part of its bucket, so
// autograd accumulates straight into the bucket; a hook on each
// parameter's gradient accumulator counts it ready, and when a bucket is
// complete its all-reduce is launched asynchronously, so communication
// overlaps the rest of the backward pass. Buckets are launched strictly in
// index order on every rank, so the collectives match. With
// find_unused_parameters, parameters the forward pass's graph does not
// reach are marked ready before backward starts, so their buckets still
// launch during it; without, a parameter that got no gradient is found
// after backward (its bucket launched with zeros so no rank hangs) and the
// step fails with its name.

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "pipeline/interfaces/communicator.h"
#include "plugins/strategies/ddp/ddp.pb.h"
#include "plugins/strategies/ddp/group_communicator.h"
#include "torch/csrc/autograd/function.h"
#include "torch/types.h"

namespace pipeline {

class GradientReducer {
 public:
  // Takes bucket_cap_mb, gradient_compression and find_unused_parameters
  // from `options`. The buckets' all-reduces go through `collectives`, rank
  // 0's bucket order through `communicator`; both outlive the reducer.
  GradientReducer(const DdpOptions& options, CollectiveRunner& collectives,
                  Communicator& communicator)
      : options_(options), collectives_(collectives), communicator_(communicator) {}
  // The hooks on the gradient accumulators point at it.
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  // Takes over the gradients of `parameters` (`names` name them in
  // errors), the same on every rank: buckets them, makes each .grad a view
  // of its bucket (keeping its value) and hooks each gradient accumulator.
  // Throws what LibTorch throws.
  void Prepare(std::vector<at::Tensor> parameters, std::vector<std::string> names);

  // Gradient accumulation (no_sync): while off, backward passes only add
  // into each .grad, and nothing is communicated.
  void set_synchronize(bool enabled) { synchronize_ = enabled; }

  // Called between the forward pass that computed `loss` and its
  // backward pass.
  void BeginBackward(const at::Tensor& loss);

  // Called after the backward pass: every .grad is then the average over
  // the ranks of what it accumulated since the last synchronised pass.
  // Returns the seconds spent waiting for the all-reduces. Throws, on every
  // rank alike, naming the parameters that got no gradient; throws what a
  // collective throws.
  double Finish();

  // Each bucket's parameters (indices into Prepare's), in launch order.
  std::vector<std::vector<size_t>> BucketParameters() const;

 private:
  // A run of parameters whose gradients travel in one all-reduce.
  struct Bucket {
    std::vector<size_t> parameters;  // indices into parameters_
    std::vector<int64_t> offsets;    // element offset of each in `flat`
    at::Tensor flat;
    // What travels when gradient_compression is FP16: flat / world size,
    // as float16.
    at::Tensor compressed;
    size_t ready = 0;
    c10::intrusive_ptr<c10d::Work> work;
  };

  void BuildBuckets(const std::vector<size_t>& order);
  at::Tensor MakeSlot(size_t i) const;
  void UseSlotAsGradient(size_t i);
  void OnGradientReady(size_t i);
  void MarkUnusedReady(const at::Tensor& loss);
  void RebuildBucketsInReadyOrder();
  void LaunchReadyBuckets();
  void Launch(Bucket& bucket);
  double AverageBuckets();
  std::string BucketName(size_t b) const;
  bool compressed() const { return options_.gradient_compression() == DdpOptions::FP16; }

  const DdpOptions options_;
  CollectiveRunner& collectives_;
  Communicator& communicator_;
  std::vector<at::Tensor> parameters_;
  std::vector<std::string> names_;  // of parameters_, for errors
  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_;
  std::vector<size_t> position_in_bucket_;
  // Each parameter's part of its bucket (MakeSlot), made once per build:
  // UseSlotAsGradient runs for every parameter in every step.
  std::vector<at::Tensor> slots_;
  size_t next_to_launch_ = 0;
  bool synchronize_ = true;
  std::vector<bool> received_;  // which parameters' hooks ran in this pass
  // Until the buckets are rebuilt: the order gradients became ready in.
  std::vector<size_t> ready_order_;
  bool buckets_rebuilt_ = false;
  // Each parameter's, holding the post-hook that reports its gradient.
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;
  std::mutex mutex_;
};

}  // namespace pipeline

#endif  // PLUGINS_STRATEGIES_DDP_GRADIENT_REDUCER_H_
