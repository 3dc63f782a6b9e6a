// strategy `ddp`: one model replica per process; gradients averaged over
// every process after each backward pass, so all replicas take the same
// optimizer step — the same result as one process training on the union of
// the batches (for models without batch statistics; with BatchNorm, each
// rank normalises its own batch, as in PyTorch DDP).
//
// Gradients are averaged in buckets (parameters in reverse registration
// order, about the order backward produces them). A tensor hook on every
// parameter copies its gradient into its bucket; when a bucket is complete
// its all-reduce is launched asynchronously, so communication overlaps the
// rest of the backward pass (Li et al., "PyTorch Distributed", VLDB 2020).
// Buckets are launched strictly in index order on every rank, so the
// collectives match. With find_unused_parameters, parameters the forward
// pass's graph does not reach are marked ready before backward starts, so
// their buckets still launch during it; without, a parameter that got no
// gradient is found after backward (its bucket launched with zeros so no
// rank hangs) and the step fails with its name.
//
//   strategy {
//     name: "ddp"
//     options { [type.googleapis.com/pipeline.DdpOptions] { nproc_per_node: 2 } }
//   }

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <unordered_set>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "pipeline/interfaces/strategy.h"
#include "pipeline/layers/batch_norm.h"
#include "pipeline/util/cuda_devices.h"
#include "pipeline/util/status_macros.h"
#include "pipeline/util/torch_status.h"
#include "plugins/strategies/ddp/ddp.pb.h"
#include "plugins/strategies/ddp/group_communicator.h"
#include "plugins/strategies/ddp/optimizer_shards.h"
#include "plugins/strategies/ddp/peer_progress.h"
#include "plugins/strategies/ddp/process_group.h"
#include "plugins/strategies/ddp/rendezvous.h"
#include "torch/csrc/autograd/function.h"
#include "torch/csrc/autograd/utils/lambda_post_hook.h"
#include "torch/csrc/autograd/variable.h"
#include "torch/types.h"

namespace pipeline {
namespace {

// A run of parameters whose gradients travel in one all-reduce.
struct Bucket {
  std::vector<size_t> parameters;  // indices into DdpStrategy::parameters_
  std::vector<int64_t> offsets;    // element offset of each in `flat`
  at::Tensor flat;
  // What travels when gradient_compression is FP16: flat / world size, as
  // float16.
  at::Tensor compressed;
  size_t ready = 0;
  bool launched = false;
  c10::intrusive_ptr<c10d::Work> work;
};

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
        shards_(rendezvous_.rank, rendezvous_.world_size) {}
  ~DdpStrategy() override { AbortNcclGroup(*process_group_.group); }

  Communicator& communicator() override { return communicator_; }
  torch::Device device() const override { return device_; }

  absl::Status Prepare(Model& model, const ModelFactory&) override {
    return CallTorch("ddp: preparing the model", [&] {
      model.to(device_);
      parameters_.clear();
      names_.clear();
      for (const auto& p : model.named_parameters()) {
        if (!p.value().requires_grad()) continue;
        parameters_.push_back(p.value());
        names_.push_back(p.key());
      }
      // Every replica starts from rank 0's weights and buffers.
      std::vector<at::Tensor> state = model.parameters();
      for (const at::Tensor& b : model.buffers()) state.push_back(b);
      collectives_.BroadcastCoalesced(state, "broadcast of rank 0's initial weights");
      if (options_.sync_batch_norm()) SynchronizeBatchNormLayers(model);
      // Backward produces the last layers' gradients first: the initial
      // bucket order until the first step shows the real one.
      std::vector<size_t> reversed(parameters_.size());
      for (size_t k = 0; k < reversed.size(); ++k) reversed[k] = reversed.size() - 1 - k;
      BuildBuckets(reversed);
      // After each parameter's gradient accumulator has added this pass's
      // gradient into .grad (the bucket's storage), as PyTorch's Reducer.
      // The accumulators are kept alive here, or autograd would make new
      // ones without the hook.
      accumulators_.clear();
      for (size_t i = 0; i < parameters_.size(); ++i) {
        accumulators_.push_back(torch::autograd::impl::grad_accumulator(parameters_[i]));
        accumulators_.back()->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
            [this, i](const torch::autograd::variable_list& outputs,
                      const torch::autograd::variable_list&) {
              OnGradientReady(i);
              return outputs;
            }));
      }
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
      if (synchronize_) {
        // Not zeroed: each slot is its parameter's .grad, which holds what
        // earlier accumulated passes (no_sync) left.
        for (Bucket& bucket : buckets_) {
          bucket.ready = 0;
          bucket.launched = false;
          bucket.work.reset();
        }
        next_to_launch_ = 0;
        received_.assign(parameters_.size(), false);
      }
      torch::Tensor logits = model.forward(images.to(device_, /*non_blocking=*/true));
      torch::Tensor loss = loss_function(logits, labels.to(device_, /*non_blocking=*/true));
      if (synchronize_ && options_.find_unused_parameters()) MarkUnusedReady(loss);
      loss.backward();
      double waited = 0;
      if (synchronize_) {
        waited = FinishGradients();
        if (!buckets_rebuilt_) RebuildBucketsInReadyOrder();
      }
      return StepOutput{loss.detach().cpu(), logits.detach().cpu(), waited};
    });
  }

  void SetGradientSynchronization(bool enabled) override { synchronize_ = enabled; }

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

  // Buckets of about bucket_cap_mb, the parameters in `order` (the order
  // their gradients become ready); the first bucket at most 1 MiB, as
  // PyTorch's Reducer, so the first all-reduce starts early in backward.
  // Each parameter's .grad becomes a view of its slot (PyTorch's
  // gradient_as_bucket_view): autograd accumulates straight into the
  // bucket, and the average lands in .grad without a copy.
  void BuildBuckets(const std::vector<size_t>& order) {
    torch::NoGradGuard no_grad;
    // Gradients in the old buckets stay alive as long as their .grad holds
    // them, for UseSlotAsGradient to copy below.
    buckets_.clear();
    bucket_of_.assign(parameters_.size(), 0);
    const int64_t cap_bytes = static_cast<int64_t>(options_.bucket_cap_mb() * 1024 * 1024);
    constexpr int64_t kFirstBucketBytes = 1024 * 1024;
    Bucket current;
    int64_t elements = 0;
    auto close = [&] {
      if (current.parameters.empty()) return;
      current.flat = at::zeros({elements}, parameters_[current.parameters[0]].options());
      buckets_.push_back(std::move(current));
      current = Bucket();
      elements = 0;
    };
    for (size_t k : order) {
      const at::Tensor& p = parameters_[k];
      const int64_t cap = buckets_.empty() ? std::min(cap_bytes, kFirstBucketBytes) : cap_bytes;
      if (!current.parameters.empty() &&
          (elements + p.numel()) * static_cast<int64_t>(p.element_size()) > cap) {
        close();
      }
      bucket_of_[k] = buckets_.size();
      current.parameters.push_back(k);
      current.offsets.push_back(elements);
      elements += p.numel();
    }
    close();
    position_in_bucket_.assign(parameters_.size(), 0);
    for (const Bucket& bucket : buckets_) {
      for (size_t j = 0; j < bucket.parameters.size(); ++j) {
        position_in_bucket_[bucket.parameters[j]] = j;
      }
    }
    slots_.clear();
    for (size_t i = 0; i < parameters_.size(); ++i) slots_.push_back(MakeSlot(i));
    for (size_t i = 0; i < parameters_.size(); ++i) UseSlotAsGradient(i);
  }

  // Parameter i's part of its bucket, shaped (and strided) like it. Made
  // with set_ rather than as a view: it shares the bucket's storage, but
  // autograd does not track it as a view, which LibTorch's
  // Optimizer::zero_grad (detach_) would refuse.
  at::Tensor MakeSlot(size_t i) const {
    const at::Tensor& p = parameters_[i];
    const Bucket& bucket = buckets_[bucket_of_[i]];
    std::vector<int64_t> strides(p.dim(), 1);
    if (p.is_non_overlapping_and_dense()) {
      strides = p.strides().vec();
    } else {
      for (int64_t d = p.dim() - 1; d > 0; --d) strides[d - 1] = strides[d] * p.size(d);
    }
    at::Tensor slot = at::empty({0}, bucket.flat.options());
    torch::NoGradGuard no_grad;
    slot.set_(bucket.flat.storage(),
              bucket.flat.storage_offset() + bucket.offsets[position_in_bucket_[i]], p.sizes(),
              strides);
    return slot;
  }

  // Makes parameter i's .grad its slot again, keeping the value: after the
  // buckets are built, or when .grad was replaced (zero_grad setting it to
  // none, as LibTorch 2.x's does). An undefined .grad is a zero slot.
  void UseSlotAsGradient(size_t i) {
    at::Tensor& p = parameters_[i];
    const at::Tensor& slot = slots_[i];
    if (p.grad().defined() && p.grad().is_alias_of(slot)) return;
    torch::NoGradGuard no_grad;
    if (p.grad().defined()) {
      slot.copy_(p.grad());
    } else {
      slot.zero_();
    }
    p.mutable_grad() = slot;
  }

  // Called by autograd once parameter i's gradient accumulator has added
  // this pass's gradient into .grad. Without synchronisation that is all;
  // with it, the slot now holds what this and earlier accumulated passes
  // gave, and its bucket may be complete.
  void OnGradientReady(size_t i) {
    if (!synchronize_) return;
    std::lock_guard<std::mutex> lock(mutex_);
    UseSlotAsGradient(i);
    received_[i] = true;
    if (!buckets_rebuilt_) ready_order_.push_back(i);
    ++buckets_[bucket_of_[i]].ready;
    LaunchReadyBuckets();
  }

  // Parameters whose gradient accumulator the graph of `loss` does not
  // reach get no gradient from this backward pass: their slots take what
  // earlier accumulated passes left (or stay zero) and count as ready now.
  void MarkUnusedReady(const at::Tensor& loss) {
    std::unordered_set<const torch::autograd::Node*> reached;
    std::vector<torch::autograd::Node*> pending;
    if (loss.grad_fn()) pending.push_back(loss.grad_fn().get());
    while (!pending.empty()) {
      torch::autograd::Node* node = pending.back();
      pending.pop_back();
      if (!reached.insert(node).second) continue;
      for (const torch::autograd::Edge& edge : node->next_edges()) {
        if (edge.function) pending.push_back(edge.function.get());
      }
    }
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < parameters_.size(); ++i) {
      const auto accumulator = torch::autograd::impl::try_get_grad_accumulator(parameters_[i]);
      if (accumulator && reached.count(accumulator.get())) continue;
      UseSlotAsGradient(i);
      received_[i] = true;
      ++buckets_[bucket_of_[i]].ready;
    }
    LaunchReadyBuckets();
  }

  // Once, after the first synchronised step, as PyTorch's Reducer: the
  // buckets again in the order the gradients became ready, so each bucket
  // completes as early in backward as it can. Every rank takes rank 0's
  // order. Not with find_unused_parameters, whose order may change from
  // step to step.
  void RebuildBucketsInReadyOrder() {
    buckets_rebuilt_ = true;
    if (options_.find_unused_parameters()) return;
    std::string order(ready_order_.size() * sizeof(int64_t), '\0');
    for (size_t k = 0; k < ready_order_.size(); ++k) {
      const int64_t index = static_cast<int64_t>(ready_order_[k]);
      std::memcpy(&order[k * sizeof(int64_t)], &index, sizeof(index));
    }
    const absl::Status shared = communicator_.Broadcast(order, 0, "the gradient bucket order");
    if (!shared.ok()) throw std::runtime_error(std::string(shared.message()));
    std::vector<size_t> indices(order.size() / sizeof(int64_t));
    std::vector<bool> seen(parameters_.size(), false);
    for (size_t k = 0; k < indices.size(); ++k) {
      int64_t index;
      std::memcpy(&index, &order[k * sizeof(int64_t)], sizeof(index));
      if (index < 0 || index >= static_cast<int64_t>(parameters_.size()) || seen[index]) return;
      seen[index] = true;
      indices[k] = static_cast<size_t>(index);
    }
    if (indices.size() != parameters_.size()) return;
    BuildBuckets(indices);
  }

  void LaunchReadyBuckets() {
    while (next_to_launch_ < buckets_.size()) {
      Bucket& bucket = buckets_[next_to_launch_];
      if (bucket.ready < bucket.parameters.size()) return;
      Launch(bucket);
      ++next_to_launch_;
    }
  }

  std::string BucketName(size_t b) const {
    return absl::StrCat("all-reduce of gradient bucket ", b + 1, " of ", buckets_.size());
  }

  bool compressed() const { return options_.gradient_compression() == DdpOptions::FP16; }

  void Launch(Bucket& bucket) {
    std::vector<at::Tensor> tensors = {bucket.flat};
    if (compressed()) {
      torch::NoGradGuard no_grad;
      bucket.flat.mul_(1.0 / rendezvous_.world_size);
      if (!bucket.compressed.defined()) bucket.compressed = at::empty_like(bucket.flat, at::kHalf);
      bucket.compressed.copy_(bucket.flat);
      tensors = {bucket.compressed};
    }
    bucket.work = collectives_.Start(BucketName(next_to_launch_),
                                     [&] { return collectives_.group().allreduce(tensors); });
    bucket.launched = true;
  }

  // After backward: launch what the hooks did not (a parameter this pass
  // did not reach keeps what earlier accumulated passes left, or zeros),
  // wait for every bucket and average it: each .grad is a view of its
  // slot, so that is the average. Returns the seconds spent waiting.
  double FinishGradients() {
    std::vector<std::string> missing;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (size_t i = 0; i < parameters_.size(); ++i) {
        if (received_[i]) continue;
        missing.push_back(names_[i]);
        UseSlotAsGradient(i);
      }
      for (; next_to_launch_ < buckets_.size(); ++next_to_launch_) Launch(buckets_[next_to_launch_]);
    }
    torch::NoGradGuard no_grad;
    const double scale = 1.0 / rendezvous_.world_size;
    double waited = 0;
    for (size_t b = 0; b < buckets_.size(); ++b) {
      Bucket& bucket = buckets_[b];
      const auto wait_start = std::chrono::steady_clock::now();
      collectives_.Wait(*bucket.work, BucketName(b));
      waited +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - wait_start).count();
      if (compressed()) {
        bucket.flat.copy_(bucket.compressed);  // already divided by the world size
      } else {
        bucket.flat.mul_(scale);
      }
    }
    // Every rank has finished the same collectives, so failing here leaves
    // none of them waiting.
    if (!missing.empty()) {
      const size_t shown = std::min<size_t>(missing.size(), 8);
      throw std::runtime_error(absl::StrCat(
          "parameters got no gradient in this step: ",
          absl::StrJoin(missing.begin(), missing.begin() + shown, ", "),
          missing.size() > shown ? absl::StrCat(" and ", missing.size() - shown, " more") : "",
          ". Set find_unused_parameters: true in the ddp options when the forward pass can "
          "skip parameters, or freeze them (requires_grad false)"));
    }
    return waited;
  }

  DdpOptions options_;
  Rendezvous rendezvous_;
  ProcessGroup process_group_;
  PeerProgress progress_;
  CollectiveRunner collectives_;
  torch::Device device_;
  GroupCommunicator communicator_;
  OptimizerShards shards_;  // used with shard_optimizer_state
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
