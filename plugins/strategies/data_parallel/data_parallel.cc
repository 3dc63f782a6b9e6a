// strategy `data_parallel`: the semantics of PyTorch's nn.DataParallel in one
// process. The model is replicated; each batch is split into one chunk per
// replica; the replicas run forward and backward at the same time, each on
// its own thread; their gradients are summed into the trained model (replica
// 0) before the optimizer step. Each chunk's loss is weighted by its share of
// the batch, so the sum is the gradient of the whole batch's mean loss: the
// same step single-device training takes on the whole batch (for models
// without batch statistics; BatchNorm normalises each chunk by itself, and
// its running statistics come from replica 0, as in nn.DataParallel).
//
// On the CPU the replicas share their parameters' storage with replica 0
// (each keeps its own gradients), so the optimizer's update reaches every
// replica without a copy; buffers are copied from replica 0 before each step.
// On CUDA (a CUDA build) replica i lives on cuda:i and parameters are copied
// to it before each step, as nn.DataParallel broadcasts them.
//
//   strategy {
//     name: "data_parallel"
//     options { [type.googleapis.com/pipeline.DataParallelOptions] { replicas: 2 } }
//   }

#include <algorithm>
#include <memory>
#include <vector>

#include "ATen/Parallel.h"
#include "ATen/autocast_mode.h"
#include "absl/strings/str_cat.h"
#include "pipeline/interfaces/strategy.h"
#include "pipeline/util/autocast_compat.h"
#include "pipeline/util/cuda_devices.h"
#include "pipeline/util/status_macros.h"
#include "pipeline/util/torch_status.h"
#include "plugins/strategies/data_parallel/data_parallel.pb.h"
#include "plugins/strategies/data_parallel/replica_threads.h"
#include "torch/csrc/autograd/grad_mode.h"
#include "torch/cuda.h"
#include "torch/types.h"

namespace pipeline {
namespace {

// The caller's autocast settings (CPU and CUDA), carried to a replica
// thread.
struct AutocastState {
  bool cpu_enabled = AutocastEnabled(at::kCPU);
  at::ScalarType cpu_dtype = AutocastDtype(at::kCPU);
  bool cuda_enabled = AutocastEnabled(at::kCUDA);
  at::ScalarType cuda_dtype = AutocastDtype(at::kCUDA);
};

// On a replica thread for one task. The cast cache (bf16 copies of the
// weights) is per thread as well, and must not outlive the step: the
// optimizer changes the weights after it.
class ReplicaAutocast {
 public:
  explicit ReplicaAutocast(const AutocastState& state) : state_(state) {
    if (state_.cpu_enabled) {
      SetAutocastDtype(at::kCPU, state_.cpu_dtype);
      SetAutocastEnabled(at::kCPU, true);
    }
    if (state_.cuda_enabled) {
      SetAutocastDtype(at::kCUDA, state_.cuda_dtype);
      SetAutocastEnabled(at::kCUDA, true);
    }
  }
  ~ReplicaAutocast() {
    if (state_.cpu_enabled) SetAutocastEnabled(at::kCPU, false);
    if (state_.cuda_enabled) SetAutocastEnabled(at::kCUDA, false);
    if (state_.cpu_enabled || state_.cuda_enabled) at::autocast::clear_cache();
  }

 private:
  const AutocastState state_;
};

// How many samples of a batch of `n` each of `replicas` replicas gets: as
// even as possible, earlier replicas taking the remainder; replicas beyond
// the batch size get none.
std::vector<int64_t> ChunkSizes(int64_t n, int replicas) {
  std::vector<int64_t> sizes;
  for (int i = 0; i < replicas; ++i) {
    const int64_t size = n / replicas + (i < n % replicas ? 1 : 0);
    if (size > 0) sizes.push_back(size);
  }
  return sizes;
}

class DataParallelStrategy : public Strategy {
 public:
  explicit DataParallelStrategy(std::vector<torch::Device> devices)
      : devices_(std::move(devices)) {}

  absl::Status Prepare(Model& model, const ModelFactory& make_replica) override {
    if (!make_replica) {
      return absl::InvalidArgumentError("data_parallel: no way to build model replicas given");
    }
    replicas_.clear();
    replicas_.push_back(&model);
    RETURN_IF_ERROR(CallTorch("data_parallel: moving the model to " + devices_[0].str(),
                              [&] { model.to(devices_[0]); }));
    for (size_t i = 1; i < devices_.size(); ++i) {
      ASSIGN_OR_RETURN(std::unique_ptr<Model> replica, make_replica());
      RETURN_IF_ERROR(CallTorch(absl::StrCat("data_parallel: building replica ", i, " on ",
                                             devices_[i].str()),
                                [&] { replica->to(devices_[i]); }));
      const auto ours = replica->parameters();
      const auto theirs = model.parameters();
      const auto our_buffers = replica->buffers();
      const auto their_buffers = model.buffers();
      if (ours.size() != theirs.size() || our_buffers.size() != their_buffers.size()) {
        return absl::InternalError(
            "data_parallel: a replica built from the same config has different parameters");
      }
      owned_.push_back(std::move(replica));
      replicas_.push_back(owned_.back().get());
    }
    // Replicas beyond the first run on their own threads; each thread's
    // intra-op parallelism gets an equal share of the process's threads, so
    // the replicas together use what one model would.
    if (devices_[0].is_cpu()) {
      const int share = std::max(1, at::get_num_threads() / static_cast<int>(devices_.size()));
      at::set_num_threads(share);
    }
    threads_ = std::make_unique<ReplicaThreads>(static_cast<int>(devices_.size()),
                                                [] { at::init_num_threads(); });
    return CallTorch("data_parallel: synchronising replicas", [&] { SyncReplicas(); });
  }

  absl::StatusOr<StepOutput> ForwardBackward(Model& model, const torch::Tensor& images,
                                             const torch::Tensor& labels,
                                             const LossFunction& loss_function) override {
    return CallTorch("data_parallel: training step", [&] {
      SyncReplicas();
      const int64_t n = images.size(0);
      const std::vector<int64_t> sizes = ChunkSizes(n, static_cast<int>(replicas_.size()));
      const std::vector<torch::Tensor> image_chunks = images.split_with_sizes(sizes);
      const std::vector<torch::Tensor> label_chunks = labels.split_with_sizes(sizes);
      std::vector<torch::Tensor> losses(sizes.size()), logits(sizes.size());
      std::vector<std::function<void()>> tasks;
      // Autocast is per thread, too.
      const AutocastState autocast;
      for (size_t i = 0; i < sizes.size(); ++i) {
        tasks.push_back([&, i] {
          ReplicaAutocast replica_autocast(autocast);
          const torch::Device& device = devices_[i];
          torch::Tensor out = replicas_[i]->forward(image_chunks[i].to(device, true));
          torch::Tensor loss = TrainingLoss(*replicas_[i], out, label_chunks[i].to(device, true),
                                            loss_function) *
                               (static_cast<double>(sizes[i]) / static_cast<double>(n));
          Backward(loss);
          losses[i] = loss.detach().cpu();
          logits[i] = out.detach().cpu();
        });
      }
      threads_->Run(tasks);
      ReduceGradients(sizes.size());
      torch::Tensor loss = losses[0];
      for (size_t i = 1; i < losses.size(); ++i) loss = loss + losses[i];
      return StepOutput{loss, torch::cat(logits)};
    });
  }

  torch::Device device() const override { return devices_[0]; }

  absl::Status CanCaptureCudaGraphs() const override {
    return absl::UnimplementedError(
        "runs its replicas from several threads on several devices, which one CUDA graph "
        "does not capture");
  }

  absl::StatusOr<torch::Tensor> Forward(Model& model, const torch::Tensor& images) override {
    return CallTorch("data_parallel: inference", [&] {
      SyncReplicas();
      const std::vector<int64_t> sizes =
          ChunkSizes(images.size(0), static_cast<int>(replicas_.size()));
      const std::vector<torch::Tensor> chunks = images.split_with_sizes(sizes);
      std::vector<torch::Tensor> logits(sizes.size());
      // Grad and inference modes are per thread; the replicas run in the
      // caller's.
      const bool grad = torch::GradMode::is_enabled();
      const bool inference = c10::InferenceMode::is_enabled();
      const AutocastState autocast;
      std::vector<std::function<void()>> tasks;
      for (size_t i = 0; i < sizes.size(); ++i) {
        tasks.push_back([&, i] {
          ReplicaAutocast replica_autocast(autocast);
          c10::InferenceMode inference_mode(inference);
          torch::AutoGradMode grad_mode(grad);
          logits[i] = replicas_[i]->forward(chunks[i].to(devices_[i])).cpu();
        });
      }
      threads_->Run(tasks);
      return torch::cat(logits);
    });
  }

 private:
  // Brings every replica to replica 0's weights, buffers, training mode and
  // trainable set.
  void SyncReplicas() {
    Model& primary = *replicas_[0];
    const std::vector<torch::Tensor> parameters = primary.parameters();
    const std::vector<torch::Tensor> buffers = primary.buffers();
    torch::NoGradGuard no_grad;
    for (size_t r = 1; r < replicas_.size(); ++r) {
      Model& replica = *replicas_[r];
      replica.train(primary.is_training());
      std::vector<torch::Tensor> ours = replica.parameters();
      for (size_t k = 0; k < ours.size(); ++k) {
        torch::Tensor& p = ours[k];
        if (p.requires_grad() != parameters[k].requires_grad()) {
          p.requires_grad_(parameters[k].requires_grad());
        }
        if (p.device() == parameters[k].device()) {
          // Shared storage: nothing to copy unless replica 0's tensor was
          // replaced (a load that assigned new tensors).
          if (p.data_ptr() != parameters[k].data_ptr()) {
            p.set_data(parameters[k].detach());
          }
        } else {
          p.copy_(parameters[k], /*non_blocking=*/true);
        }
      }
      std::vector<torch::Tensor> our_buffers = replica.buffers();
      for (size_t k = 0; k < our_buffers.size(); ++k) {
        our_buffers[k].copy_(buffers[k], /*non_blocking=*/true);
      }
    }
  }

  // Adds the gradients of replicas 1..used-1 into replica 0's, in replica
  // order (so the sum is the same every run), and clears theirs.
  void ReduceGradients(size_t used) {
    std::vector<torch::Tensor> parameters = replicas_[0]->parameters();
    torch::NoGradGuard no_grad;
    for (size_t r = 1; r < used; ++r) {
      std::vector<torch::Tensor> ours = replicas_[r]->parameters();
      for (size_t k = 0; k < ours.size(); ++k) {
        torch::Tensor& grad = ours[k].mutable_grad();
        if (!grad.defined()) continue;
        torch::Tensor& target = parameters[k].mutable_grad();
        if (target.defined()) {
          target.add_(grad.to(target.device()));
        } else {
          target = grad.to(parameters[k].device()).clone();
        }
        grad = torch::Tensor();
      }
    }
  }

  std::vector<torch::Device> devices_;
  std::vector<Model*> replicas_;               // replicas_[0] is the trained model
  std::vector<std::unique_ptr<Model>> owned_;  // replicas 1..
  std::unique_ptr<ReplicaThreads> threads_;
};

absl::StatusOr<std::vector<torch::Device>> Devices(const DataParallelOptions& options) {
  if (options.device() == "cpu") {
    if (options.replicas() < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("replicas: ", options.replicas(), "; must be at least 1 on the cpu"));
    }
    return std::vector<torch::Device>(options.replicas(), torch::Device(torch::kCPU));
  }
  if (options.device() != "cuda") {
    return absl::InvalidArgumentError(absl::StrCat("device: \"", options.device(),
                                                   "\" is not one of \"cpu\", \"cuda\""));
  }
  RETURN_IF_ERROR(CheckCudaDevice("device: \"cuda\"", -1));
  const int visible = VisibleCudaDevices();
  const int replicas = options.replicas() == 0 ? visible : options.replicas();
  if (replicas < 1 || replicas > visible) {
    return absl::FailedPreconditionError(absl::StrCat(
        "replicas: ", options.replicas(), " but ", visible,
        " CUDA devices are visible; use at most that many (0 = all)"));
  }
  std::vector<torch::Device> devices;
  for (int i = 0; i < replicas; ++i) devices.emplace_back(torch::kCUDA, i);
  return devices;
}

PIPELINE_REGISTER_PLUGIN(
    Strategy, "data_parallel", DataParallelOptions,
    "One process, the model replicated on several devices (CPU threads or CUDA devices), each "
    "batch split between them (nn.DataParallel)",
    [](const DataParallelOptions& options,
       const StrategyContext&) -> absl::StatusOr<std::unique_ptr<Strategy>> {
      ASSIGN_OR_RETURN(std::vector<torch::Device> devices, Devices(options));
      return std::make_unique<DataParallelStrategy>(std::move(devices));
    },
    [](const DataParallelOptions& options) { return Devices(options).status(); });

}  // namespace
}  // namespace pipeline
