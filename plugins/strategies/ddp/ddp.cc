// strategy `ddp`: one model replica per process; gradients averaged over
// every process after each backward pass, so all replicas take the same
// optimizer step — the same result as one process training on the union of
// the batches (for models without batch statistics; with BatchNorm, each
// rank normalises its own batch, as in PyTorch DDP).
//
// The parts: the rendezvous (rendezvous.h), the c10d group of this rank
// (process_group.h), the collectives over it (group_communicator.h), the
// bucketed gradient all-reduce that overlaps backward (gradient_reducer.h)
// and, with shard_optimizer_state, ZeRO-1 (optimizer_shards.h).
//
//   strategy {
//     name: "ddp"
//     options { [type.googleapis.com/pipeline.DdpOptions] { nproc_per_node: 2 } }
//   }

#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "pipeline/interfaces/strategy.h"
#include "pipeline/layers/batch_norm.h"
#include "pipeline/util/cuda_devices.h"
#include "pipeline/util/status_macros.h"
#include "pipeline/util/torch_status.h"
#include "plugins/strategies/ddp/ddp.pb.h"
#include "plugins/strategies/ddp/gradient_reducer.h"
#include "plugins/strategies/ddp/group_communicator.h"
#include "plugins/strategies/ddp/optimizer_shards.h"
#include "plugins/strategies/ddp/peer_progress.h"
#include "plugins/strategies/ddp/process_group.h"
#include "plugins/strategies/ddp/rendezvous.h"
#include "torch/types.h"

namespace pipeline {
namespace {

class DdpStrategy : public Strategy {
 public:
  DdpStrategy(const DdpOptions& options, Rendezvous rendezvous, ProcessGroup process_group,
              torch::Device device)
      : options_(options),
        rendezvous_(std::move(rendezvous)),
        process_group_(std::move(process_group)),
        progress_(process_group_.store, rendezvous_.rank, rendezvous_.world_size,
                  rendezvous_.host,
                  absl::StrCat(rendezvous_.master_addr, ":", rendezvous_.master_port)),
        collectives_(process_group_.group, progress_, options.timeout_seconds()),
        device_(device),
        communicator_(collectives_, device_),
        reducer_(options_, collectives_, communicator_),
        shards_(rendezvous_.rank, rendezvous_.world_size) {}
  ~DdpStrategy() override { AbortNcclGroup(*process_group_.group); }

  Communicator& communicator() override { return communicator_; }
  torch::Device device() const override { return device_; }

  absl::Status CanCaptureCudaGraphs() const override {
    return absl::UnimplementedError(
        "reduces gradients while backward runs, with collectives the captured step does not "
        "hold");
  }

  absl::Status Prepare(Model& model, const ModelFactory&) override {
    return CallTorch("ddp: preparing the model", [&] {
      model.to(device_);
      std::vector<at::Tensor> parameters;
      std::vector<std::string> names;
      for (const auto& p : model.named_parameters()) {
        if (!p.value().requires_grad()) continue;
        parameters.push_back(p.value());
        names.push_back(p.key());
      }
      // Every replica starts from rank 0's weights and buffers.
      std::vector<at::Tensor> state = model.parameters();
      for (const at::Tensor& b : model.buffers()) state.push_back(b);
      collectives_.BroadcastCoalesced(state, "broadcast of rank 0's initial weights");
      if (options_.sync_batch_norm()) SynchronizeBatchNormLayers(model);
      reducer_.Prepare(std::move(parameters), std::move(names));
    });
  }

  absl::StatusOr<StepOutput> ForwardBackward(Model& model, const torch::Tensor& images,
                                             const torch::Tensor& labels,
                                             const LossFunction& loss_function) override {
    return CallTorch("ddp: training step", [&] {
      if (options_.broadcast_buffers()) {
        std::vector<at::Tensor> buffers = model.buffers();
        if (!buffers.empty()) {
          collectives_.BroadcastCoalesced(buffers, "broadcast of rank 0's buffers");
        }
      }
      torch::Tensor logits = model.forward(images.to(device_, /*non_blocking=*/true));
      torch::Tensor loss =
          TrainingLoss(model, logits, labels.to(device_, /*non_blocking=*/true), loss_function);
      reducer_.BeginBackward(loss);
      Backward(loss);
      const double waited = reducer_.Finish();
      return StepOutput{loss.detach().cpu(), logits.detach().cpu(), waited};
    });
  }

  void SetGradientSynchronization(bool enabled) override { reducer_.set_synchronize(enabled); }

  absl::Status Step(Optimizer& optimizer) override {
    if (!options_.shard_optimizer_state()) return Strategy::Step(optimizer);
    const bool first = shards_.owners().empty();
    RETURN_IF_ERROR(CallTorch("ddp: sharded optimizer step", [&] {
      shards_.Step(optimizer, [this](std::vector<at::Tensor>& shard, int owner) {
        collectives_.BroadcastCoalesced(
            shard, absl::StrCat("broadcast of rank ", owner, "'s optimizer shard"), owner);
      });
    }));
    return first ? ReportShardedState(optimizer) : absl::OkStatus();
  }

  absl::Status GatherOptimizerState(Optimizer& optimizer) override {
    if (!options_.shard_optimizer_state()) return absl::OkStatus();
    return shards_.GatherState(optimizer, communicator_);
  }

  absl::StatusOr<torch::Tensor> Forward(Model& model, const torch::Tensor& images) override {
    return CallTorch("ddp: inference",
                     [&] { return model.forward(images.to(device_, /*non_blocking=*/true)).cpu(); });
  }

 private:
  void SynchronizeBatchNormLayers(Model& model) {
    absl::StatusOr<int> layers =
        SynchronizeBatchNorm(model, std::make_shared<GroupBatchNormReplicas>(collectives_));
    if (!layers.ok()) throw std::runtime_error(std::string(layers.status().message()));
    if (*layers == 0 && rendezvous_.rank == 0) {
      std::cerr << "warning: ddp: sync_batch_norm is set, but the model has no BatchNorm layer "
                   "to synchronise\n";
    }
  }

  // Once, after the first sharded step: what sharding saved.
  absl::Status ReportShardedState(const Optimizer& optimizer) {
    std::vector<double> bytes(rendezvous_.world_size, 0.0);
    bytes[rendezvous_.rank] = static_cast<double>(OptimizerShards::StateBytes(optimizer));
    RETURN_IF_ERROR(communicator_.AllReduceSum(bytes, "the sharded optimizer state's sizes"));
    if (rendezvous_.rank != 0) return absl::OkStatus();
    double total = 0;
    for (double b : bytes) total += b;
    std::cerr << absl::StrFormat(
        "ddp: optimizer state sharded over %d ranks: %.1f MB on rank 0, %.1f MB in all\n",
        rendezvous_.world_size, bytes[0] / 1e6, total / 1e6);
    return absl::OkStatus();
  }

  DdpOptions options_;
  Rendezvous rendezvous_;
  ProcessGroup process_group_;
  PeerProgress progress_;
  CollectiveRunner collectives_;
  torch::Device device_;
  GroupCommunicator communicator_;
  GradientReducer reducer_;
  OptimizerShards shards_;  // used with shard_optimizer_state
};

absl::Status ValidateDdp(const DdpOptions& options) {
#ifdef USE_C10D_NCCL
  if (options.device() != "cpu" && options.device() != "cuda") {
    return absl::InvalidArgumentError(absl::StrCat("device: \"", options.device(),
                                                   "\" is not one of \"cpu\", \"cuda\""));
  }
  if ((options.backend() == DdpOptions::NCCL) != (options.device() == "cuda")) {
    return absl::InvalidArgumentError(
        "backend: NCCL goes with device: \"cuda\", and backend: GLOO with device: \"cpu\"");
  }
#else
  if (options.backend() == DdpOptions::NCCL) {
    return absl::FailedPreconditionError(
        "backend: NCCL needs a CUDA build of the runner, and this one is CPU-only; use backend: "
        "GLOO, or build with --config=cuda against a CUDA LibTorch (README, \"CUDA build\")");
  }
  if (options.device() != "cpu") {
    return absl::FailedPreconditionError(absl::StrCat(
        "device: \"", options.device(), "\" needs a CUDA build; this one runs ddp on \"cpu\""));
  }
#endif
  if (options.nproc_per_node() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("nproc_per_node: ", options.nproc_per_node(), "; must be at least 1"));
  }
  if (!(options.bucket_cap_mb() > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("bucket_cap_mb: ", options.bucket_cap_mb(), "; must be > 0"));
  }
  if (options.timeout_seconds() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("timeout_seconds: ", options.timeout_seconds(), "; must be at least 1"));
  }
  return absl::OkStatus();
}

// One GPU per process, by its rank on this machine (as torchrun's users do
// with LOCAL_RANK); the CPU otherwise.
absl::StatusOr<torch::Device> DeviceOfThisRank(const DdpOptions& options,
                                               const Rendezvous& rendezvous) {
  if (options.device() != "cuda") return torch::Device(torch::kCPU);
  // NCCL refuses two ranks on one GPU ("Duplicate GPU detected") only after
  // the rendezvous, in the first collective; say it before.
  const absl::Status usable = CheckCudaDevice(
      absl::StrCat("ddp rank ", rendezvous.rank, " (LOCAL_RANK=", rendezvous.local_rank,
                   ") runs on cuda:", rendezvous.local_rank),
      rendezvous.local_rank);
  if (!usable.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        usable.message(), ". Start at most one process per GPU on each node (nproc_per_node, "
        "torchrun --nproc_per_node, srun --ntasks-per-node)"));
  }
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(rendezvous.local_rank));
}

absl::StatusOr<std::unique_ptr<Strategy>> CreateDdp(const DdpOptions& options,
                                                    const StrategyContext& context) {
  ASSIGN_OR_RETURN(Rendezvous rendezvous, ReadRendezvous(context));
  ASSIGN_OR_RETURN(torch::Device device, DeviceOfThisRank(options, rendezvous));
  ASSIGN_OR_RETURN(ProcessGroup process_group,
                   ConnectProcessGroup(options, context, rendezvous, device));
  return std::make_unique<DdpStrategy>(options, std::move(rendezvous), std::move(process_group),
                                       device);
}

PIPELINE_REGISTER_PLUGIN(Strategy, "ddp", DdpOptions,
                         "Distributed data parallel over c10d (Gloo), bucketed overlapping "
                         "gradient all-reduce",
                         CreateDdp, ValidateDdp);
// train launches nproc_per_node workers itself and restarts a failed group.
PIPELINE_PLUGIN_TRAITS(Strategy, "ddp",
                       StrategyTraits{
                           .processes_per_node =
                               [](const google::protobuf::Message& options) {
                                 return static_cast<int>(
                                     static_cast<const DdpOptions&>(options).nproc_per_node());
                               },
                           .max_restarts =
                               [](const google::protobuf::Message& options) {
                                 return static_cast<int>(
                                     static_cast<const DdpOptions&>(options).max_restarts());
                               },
                       });

}  // namespace
}  // namespace pipeline
