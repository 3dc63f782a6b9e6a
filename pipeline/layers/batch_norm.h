#ifndef PIPELINE_LAYERS_BATCH_NORM_H_
#define PIPELINE_LAYERS_BATCH_NORM_H_

#include <memory>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "torch/nn/module.h"
#include "torch/nn/cloneable.h"
#include "torch/nn/options/batchnorm.h"
#include "torch/nn/pimpl.h"

namespace pipeline {

// The replicas that train one model together (the ranks of a ddp job), as
// synchronised BatchNorm needs them: collectives on small tensors of
// per-channel figures, called inside forward and backward in the same order
// on every replica. Errors throw (the strategy's step turns them into a
// status naming the collective).
class BatchNormReplicas {
 public:
  virtual ~BatchNormReplicas() = default;
  // Every replica's `local` (the same shape everywhere), stacked: world
  // size x local's shape, on local's device.
  virtual torch::Tensor AllGather(const torch::Tensor& local, const std::string& what) = 0;
  // Adds `values` element-wise across the replicas, in place.
  virtual void AllReduceSum(torch::Tensor& values, const std::string& what) = 0;
};

// torch::nn::BatchNorm2d, the layer model plugins build, with one addition:
// once synchronised (SynchronizeBatchNorm), training-mode forward passes
// normalise with the mean and variance of the whole global batch, every
// replica's images together, and the backward pass reduces the matching
// sums, as PyTorch's nn.SyncBatchNorm. Options, parameters, buffers,
// state_dict keys and arithmetic are torch::nn::BatchNorm2d's;
// unsynchronised it computes exactly what that layer does. (Its own class,
// not a subclass: LibTorch does not export what a subclass's vtable needs.)
class BatchNorm2dImpl : public torch::nn::Cloneable<BatchNorm2dImpl> {
 public:
  explicit BatchNorm2dImpl(const torch::nn::BatchNormOptions& options);
  explicit BatchNorm2dImpl(int64_t num_features)
      : BatchNorm2dImpl(torch::nn::BatchNormOptions(num_features)) {}

  torch::Tensor forward(const torch::Tensor& input);

  // nullptr returns to per-replica statistics.
  void SynchronizeAcross(std::shared_ptr<BatchNormReplicas> replicas) {
    replicas_ = std::move(replicas);
  }
  bool synchronized() const { return replicas_ != nullptr; }

  void reset() override;
  void pretty_print(std::ostream& stream) const override;

  torch::nn::BatchNormOptions options;
  torch::Tensor weight, bias;  // undefined unless options.affine()
  // Undefined unless options.track_running_stats().
  torch::Tensor running_mean, running_var, num_batches_tracked;

 private:
  // The momentum of this training-mode pass's running-statistics update,
  // after counting it (0 when the statistics are not tracked).
  double CountBatch();
  torch::Tensor SynchronizedForward(const torch::Tensor& input);

  std::shared_ptr<BatchNormReplicas> replicas_;
};
TORCH_MODULE(BatchNorm2d);

// Makes every pipeline::BatchNorm2d of `model` synchronise across
// `replicas` (like nn.SyncBatchNorm.convert_sync_batchnorm) and returns how
// many there are. A BatchNorm layer of another type (a plain
// torch::nn::BatchNorm1d/2d/3d) cannot take part: that is an error naming
// it, rather than a model that silently normalises per replica.
absl::StatusOr<int> SynchronizeBatchNorm(torch::nn::Module& model,
                                         std::shared_ptr<BatchNormReplicas> replicas);

}  // namespace pipeline

#endif  // PIPELINE_LAYERS_BATCH_NORM_H_
