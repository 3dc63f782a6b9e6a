#include "plugins/strategies/ddp/optimizer_shards.h"

#include <algorithm>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "pipeline/util/optimizer_state_key.h"
#include "pipeline/util/status_macros.h"
#include "pipeline/util/torch_status.h"
#include "torch/serialize/input-archive.h"
#include "torch/serialize/output-archive.h"
#include "torch/types.h"

namespace pipeline {
namespace {

std::string ToBytes(torch::serialize::OutputArchive& archive) {
  std::string bytes;
  archive.save_to([&](const void* data, size_t size) {
    bytes.append(static_cast<const char*>(data), size);
    return size;
  });
  return bytes;
}

}  // namespace

void OptimizerShards::Partition(const Optimizer& optimizer) {
  parameters_.clear();
  for (const auto& group : optimizer.param_groups()) {
    for (const at::Tensor& p : group.params()) parameters_.push_back(p);
  }
  std::vector<size_t> order(parameters_.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return parameters_[a].numel() > parameters_[b].numel();
  });
  std::vector<int64_t> elements(world_size_, 0);
  owners_.assign(parameters_.size(), 0);
  for (size_t i : order) {
    const int owner = std::min_element(elements.begin(), elements.end()) - elements.begin();
    owners_[i] = owner;
    elements[owner] += parameters_[i].numel();
  }
}

void OptimizerShards::DropOtherShardsState(Optimizer& optimizer) const {
  for (size_t i = 0; i < parameters_.size(); ++i) {
    if (owners_[i] != rank_) optimizer.state().erase(OptimizerStateKeyOf(parameters_[i]));
  }
}

void OptimizerShards::Step(Optimizer& optimizer, const Broadcast& broadcast) {
  if (owners_.empty()) Partition(optimizer);
  DropOtherShardsState(optimizer);
  // LibTorch's optimizers skip a parameter without a gradient: the other
  // shards' are hidden from this step and put back after it.
  std::vector<std::pair<size_t, at::Tensor>> hidden;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    at::Tensor& p = parameters_[i];
    if (owners_[i] == rank_ || !p.grad().defined()) continue;
    hidden.emplace_back(i, p.grad());
    p.mutable_grad().reset();
  }
  auto restore = [&] {
    for (auto& [i, grad] : hidden) parameters_[i].mutable_grad() = std::move(grad);
  };
  try {
    optimizer.step();
  } catch (...) {
    restore();
    throw;
  }
  restore();
  for (int owner = 0; owner < world_size_; ++owner) {
    std::vector<at::Tensor> shard;
    for (size_t i = 0; i < parameters_.size(); ++i) {
      if (owners_[i] == owner) shard.push_back(parameters_[i]);
    }
    if (!shard.empty()) broadcast(shard, owner);
  }
}

// One archive: "indices" (the parameters whose state follows) and one
// sub-archive per parameter, written by its state's own serialize().
std::string OptimizerShards::SerializeOwnState(const Optimizer& optimizer) const {
  torch::serialize::OutputArchive archive;
  std::vector<int64_t> indices;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    if (owners_[i] != rank_) continue;
    const auto found = optimizer.state().find(OptimizerStateKeyOf(parameters_[i]));
    if (found == optimizer.state().end()) continue;
    torch::serialize::OutputArchive one;
    found->second->serialize(one);
    archive.write(std::to_string(i), one);
    indices.push_back(static_cast<int64_t>(i));
  }
  archive.write("indices", torch::tensor(indices, torch::kLong));
  return ToBytes(archive);
}

void OptimizerShards::AddState(Optimizer& optimizer, const std::string& bytes) const {
  torch::serialize::InputArchive archive;
  archive.load_from(bytes.data(), bytes.size(), parameters_.front().device());
  torch::Tensor indices;
  archive.read("indices", indices);
  if (indices.numel() == 0) return;
  // A state object of the optimizer's own type to fill: the states of one
  // optimizer are all of one type.
  if (optimizer.state().empty()) {
    throw std::runtime_error(
        "rank 0's shard has no optimizer state to take the state's type from");
  }
  // A copy: inserting below may move the map's entries.
  const std::unique_ptr<torch::optim::OptimizerParamState> prototype =
      optimizer.state().begin()->second->clone();
  const at::Tensor cpu_indices = indices.cpu();
  for (int64_t k = 0; k < cpu_indices.numel(); ++k) {
    const int64_t i = cpu_indices[k].item<int64_t>();
    torch::serialize::InputArchive one;
    archive.read(std::to_string(i), one);
    std::unique_ptr<torch::optim::OptimizerParamState> state = prototype->clone();
    state->serialize(one);
    optimizer.state()[OptimizerStateKeyOf(parameters_.at(i))] = std::move(state);
  }
}

absl::Status OptimizerShards::GatherState(Optimizer& optimizer, Communicator& communicator) {
  std::string own;
  RETURN_IF_ERROR(CallTorch("sharded optimizer state", [&] {
    if (owners_.empty()) Partition(optimizer);
    own = SerializeOwnState(optimizer);
  }));
  ASSIGN_OR_RETURN(const std::vector<std::string> shards,
                   communicator.AllGather(own, "the gathering of the sharded optimizer state"));
  if (rank_ != 0) return absl::OkStatus();
  return CallTorch("sharded optimizer state", [&] {
    for (int r = 1; r < world_size_; ++r) AddState(optimizer, shards[r]);
  });
}

int64_t OptimizerShards::StateBytes(const Optimizer& optimizer) {
  int64_t bytes = 0;
  for (const auto& [key, state] : optimizer.state()) {
    torch::serialize::OutputArchive archive;
    state->serialize(archive);
    bytes += static_cast<int64_t>(ToBytes(archive).size());
  }
  return bytes;
}

}  // namespace pipeline
