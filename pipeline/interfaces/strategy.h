#ifndef PIPELINE_INTERFACES_STRATEGY_H_
#define PIPELINE_INTERFACES_STRATEGY_H_

#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "google/protobuf/message.h"
#include "pipeline/interfaces/communicator.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/interfaces/optimizer.h"
#include "pipeline/registry/registry.h"

namespace pipeline {

using LossFunction =
    std::function<torch::Tensor(const torch::Tensor& logits, const torch::Tensor& labels)>;

// The loss a strategy back-propagates after `model`'s training forward pass
// gave `logits`: loss(logits, labels), plus weight * loss(aux, labels) for
// each of the auxiliary classifiers that pass used (Model::auxiliary_logits;
// most models have none). Strategies call it with the model object that ran
// the pass (a data_parallel replica, say), whose auxiliary logits belong to
// that chunk of the batch; `loss` is the trainer's, linear in its result
// (averaging over accumulated batches, loss scaling), so each auxiliary term
// is scaled as the main one.
torch::Tensor TrainingLoss(const Model& model, const torch::Tensor& logits,
                           const torch::Tensor& labels, const LossFunction& loss);

// loss.backward() with autocast switched off while it runs, as
// torch.autocast's recipe has it: the backward ops run in the types the
// forward pass chose. (On the CPU backward runs on the calling thread, under
// its autocast, which would cast gradients again: 2.6% of a bf16 ResNet18
// step, docs/performance.md.) Strategies back-propagate with it.
void Backward(const torch::Tensor& loss);

// Builds another model exactly like the one being trained (same plugin, same
// options, fresh weights); strategies that keep several replicas in one
// process build them with it.
using ModelFactory = std::function<absl::StatusOr<std::unique_ptr<Model>>()>;

struct StepOutput {
  torch::Tensor loss;    // scalar, detached, on the CPU
  torch::Tensor logits;  // N x classes, detached, on the CPU
  // Seconds this process was blocked on gradient communication in this
  // call: what overlapping it with backward did not hide (the step
  // profiler shows it). 0 for strategies that do not communicate.
  double communication_wait_seconds = 0;
};

// How a model is run: on one device, replicated over devices in this process,
// or replicated over processes. The trainer is the same for all of them.
class Strategy {
 public:
  virtual ~Strategy() = default;

  // Called once before training: moves the model where it runs, builds and
  // synchronises replicas.
  virtual absl::Status Prepare(Model& model, const ModelFactory& make_replica) = 0;

  // Forward and backward of one batch. Afterwards each parameter's grad holds
  // the gradient the optimizer should apply (for several replicas, their
  // average).
  virtual absl::StatusOr<StepOutput> ForwardBackward(Model& model, const torch::Tensor& images,
                                                     const torch::Tensor& labels,
                                                     const LossFunction& loss) = 0;

  // For CUDA graphs (trainer.cuda_graphs): ForwardBackward with `images`
  // and `labels` on device() and the loss and logits left there, detached,
  // so that nothing waits on the host and the pass can be captured. Only
  // strategies whose CanCaptureCudaGraphs is OK implement it.
  virtual absl::StatusOr<StepOutput> ForwardBackwardOnDevice(Model& model,
                                                             const torch::Tensor& images,
                                                             const torch::Tensor& labels,
                                                             const LossFunction& loss) {
    return absl::UnimplementedError("this strategy has no step a CUDA graph can capture");
  }
  // OK when one CUDA graph can capture ForwardBackwardOnDevice; otherwise
  // why not, as a clause ("runs replicas on several devices ...").
  virtual absl::Status CanCaptureCudaGraphs() const {
    return absl::UnimplementedError("has no step a CUDA graph can capture");
  }

  // Gradient accumulation: while disabled, ForwardBackward only adds this
  // batch's gradients to each parameter's grad, without communicating; the
  // next ForwardBackward with it enabled averages the accumulated sums across
  // replicas (PyTorch DDP's no_sync). Single-replica strategies ignore it.
  virtual void SetGradientSynchronization(bool enabled) {}

  // Inference on one batch (the caller holds no-grad and eval mode); logits
  // come back on the CPU.
  virtual absl::StatusOr<torch::Tensor> Forward(Model& model, const torch::Tensor& images) = 0;

  // Applies the gradients ForwardBackward left: the optimizer's step by
  // default. A strategy that shards the optimizer state (ZeRO) steps its
  // own shard and gathers the parameters here.
  virtual absl::Status Step(Optimizer& optimizer);

  // Every rank calls it at the same point before rank 0 writes a
  // checkpoint. A strategy that shards the optimizer state gives rank 0's
  // optimizer the whole of it here, so checkpoints hold all of it and a run
  // resumes with any world size.
  virtual absl::Status GatherOptimizerState(Optimizer& optimizer) { return absl::OkStatus(); }

  // Collectives over this job's processes (trivial in one process).
  virtual Communicator& communicator() { return local_communicator_; }

  // Where the model runs (its first device, for several); batches are
  // assembled in pinned memory when it is a CUDA device (data.pin_memory).
  virtual torch::Device device() const { return torch::kCPU; }

  int rank() { return communicator().rank(); }
  int world_size() { return communicator().world_size(); }
  // Only this process prints progress and writes checkpoints.
  bool is_primary() { return rank() == 0; }

 private:
  LocalCommunicator local_communicator_;
};

// The environment variable `name`, or "" when it is not set.
inline std::string GetEnvironmentVariable(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  return value == nullptr ? "" : value;
}

struct StrategyContext {
  uint64_t seed = 0;
  // Where distributed strategies read RANK, WORLD_SIZE, MASTER_ADDR, ...;
  // tests give each simulated process its own.
  std::function<std::string(const std::string&)> environment = GetEnvironmentVariable;
};

// What a launcher needs to know of a strategy before any process starts
// (train starts the processes itself when a strategy asks for several).
// Each function reads the strategy's options; unset ones mean 1 and 0.
struct StrategyTraits {
  // Worker processes to start on this machine.
  std::function<int(const google::protobuf::Message& options)> processes_per_node;
  // How many times the launcher restarts a failed group of workers.
  std::function<int(const google::protobuf::Message& options)> max_restarts;
};

template <>
struct PluginKind<Strategy> {
  static constexpr const char* kName = "strategy";
  using Context = StrategyContext;
  using Traits = StrategyTraits;
};

}  // namespace pipeline

#endif  // PIPELINE_INTERFACES_STRATEGY_H_
