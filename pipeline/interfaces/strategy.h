#ifndef PIPELINE_INTERFACES_STRATEGY_H_
#define PIPELINE_INTERFACES_STRATEGY_H_

#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/registry/registry.h"

namespace pipeline {

using LossFunction =
    std::function<torch::Tensor(const torch::Tensor& logits, const torch::Tensor& labels)>;

// Builds another model exactly like the one being trained (same plugin, same
// options, fresh weights); strategies that keep several replicas in one
// process build them with it.
using ModelFactory = std::function<absl::StatusOr<std::unique_ptr<Model>>()>;

struct StepOutput {
  torch::Tensor loss;    // scalar, detached, on the CPU
  torch::Tensor logits;  // N x classes, detached, on the CPU
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

  // Gradient accumulation: while disabled, ForwardBackward only adds this
  // batch's gradients to each parameter's grad, without communicating; the
  // next ForwardBackward with it enabled averages the accumulated sums across
  // replicas (PyTorch DDP's no_sync). Single-replica strategies ignore it.
  virtual void SetGradientSynchronization(bool enabled) {}

  // Inference on one batch (the caller holds no-grad and eval mode); logits
  // come back on the CPU.
  virtual absl::StatusOr<torch::Tensor> Forward(Model& model, const torch::Tensor& images) = 0;

  // Adds `values` element-wise across every process, in place. Metrics are
  // summed this way so rank 0 reports the figures for the whole data set.
  virtual absl::Status SumAcrossProcesses(std::vector<double>& values) { return absl::OkStatus(); }

  // Seconds this process spent blocked on gradient communication since the
  // last call: what overlapping it with backward did not hide. 0 for
  // strategies that do not communicate.
  virtual double TakeCommunicationWaitSeconds() { return 0; }

  // Whether batches are copied from the host to a CUDA device; the loader
  // then assembles them in pinned memory (data.pin_memory).
  virtual bool CopiesBatchesToCuda() const { return false; }

  virtual int rank() const { return 0; }
  virtual int world_size() const { return 1; }
  // Only this process prints progress and writes checkpoints.
  bool is_primary() const { return rank() == 0; }
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

template <>
struct PluginKind<Strategy> {
  static constexpr const char* kName = "strategy";
  using Context = StrategyContext;
};

}  // namespace pipeline

#endif  // PIPELINE_INTERFACES_STRATEGY_H_
