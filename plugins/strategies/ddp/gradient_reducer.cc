#include "plugins/strategies/ddp/gradient_reducer.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <unordered_set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "torch/csrc/autograd/utils/lambda_post_hook.h"
#include "torch/csrc/autograd/variable.h"

namespace pipeline {

void GradientReducer::Prepare(std::vector<at::Tensor> parameters, std::vector<std::string> names) {
  parameters_ = std::move(parameters);
  names_ = std::move(names);
  // Backward produces the last layers' gradients first: the initial bucket
  // order until the first step shows the real one.
  std::vector<size_t> reversed(parameters_.size());
  for (size_t k = 0; k < reversed.size(); ++k) reversed[k] = reversed.size() - 1 - k;
  BuildBuckets(reversed);
  // After each parameter's gradient accumulator has added this pass's
  // gradient into .grad (the bucket's storage), as PyTorch's Reducer. The
  // accumulators are kept alive here, or autograd would make new ones
  // without the hook.
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
}

void GradientReducer::BeginBackward(const at::Tensor& loss) {
  if (!synchronize_) return;
  // Not zeroed: each slot is its parameter's .grad, which holds what
  // earlier accumulated passes (no_sync) left.
  for (Bucket& bucket : buckets_) {
    bucket.ready = 0;
    bucket.work.reset();
  }
  next_to_launch_ = 0;
  received_.assign(parameters_.size(), false);
  if (options_.find_unused_parameters()) MarkUnusedReady(loss);
}

double GradientReducer::Finish() {
  if (!synchronize_) return 0;
  const double waited = AverageBuckets();
  if (!buckets_rebuilt_) RebuildBucketsInReadyOrder();
  return waited;
}

std::vector<std::vector<size_t>> GradientReducer::BucketParameters() const {
  std::vector<std::vector<size_t>> parameters;
  for (const Bucket& bucket : buckets_) parameters.push_back(bucket.parameters);
  return parameters;
}

// Buckets of about bucket_cap_mb, the parameters in `order` (the order
// their gradients become ready); the first bucket at most 1 MiB, as
// PyTorch's Reducer, so the first all-reduce starts early in backward.
// Each parameter's .grad becomes a view of its slot (PyTorch's
// gradient_as_bucket_view): autograd accumulates straight into the
// bucket, and the average lands in .grad without a copy.
void GradientReducer::BuildBuckets(const std::vector<size_t>& order) {
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
at::Tensor GradientReducer::MakeSlot(size_t i) const {
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
void GradientReducer::UseSlotAsGradient(size_t i) {
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
void GradientReducer::OnGradientReady(size_t i) {
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
void GradientReducer::MarkUnusedReady(const at::Tensor& loss) {
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
void GradientReducer::RebuildBucketsInReadyOrder() {
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

void GradientReducer::LaunchReadyBuckets() {
  while (next_to_launch_ < buckets_.size()) {
    Bucket& bucket = buckets_[next_to_launch_];
    if (bucket.ready < bucket.parameters.size()) return;
    Launch(bucket);
    ++next_to_launch_;
  }
}

std::string GradientReducer::BucketName(size_t b) const {
  return absl::StrCat("all-reduce of gradient bucket ", b + 1, " of ", buckets_.size());
}

void GradientReducer::Launch(Bucket& bucket) {
  std::vector<at::Tensor> tensors = {bucket.flat};
  if (compressed()) {
    torch::NoGradGuard no_grad;
    bucket.flat.mul_(1.0 / collectives_.world_size());
    if (!bucket.compressed.defined()) bucket.compressed = at::empty_like(bucket.flat, at::kHalf);
    bucket.compressed.copy_(bucket.flat);
    tensors = {bucket.compressed};
  }
  bucket.work = collectives_.Start(BucketName(next_to_launch_),
                                   [&] { return collectives_.group().allreduce(tensors); });
}

// After backward: launch what the hooks did not (a parameter this pass
// did not reach keeps what earlier accumulated passes left, or zeros),
// wait for every bucket and average it: each .grad is a view of its
// slot, so that is the average. Returns the seconds spent waiting.
double GradientReducer::AverageBuckets() {
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
  const double scale = 1.0 / collectives_.world_size();
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

}  // namespace pipeline
