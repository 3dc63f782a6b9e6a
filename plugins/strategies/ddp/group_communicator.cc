#include "plugins/strategies/ddp/group_communicator.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <stdexcept>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "pipeline/util/torch_status.h"

namespace pipeline {

c10::intrusive_ptr<c10d::Work> CollectiveRunner::Start(const std::string& collective,
                                                       const Launch& launch) {
  progress_.Enter(collective);
  return launch();
}

void CollectiveRunner::Wait(c10d::Work& work, const std::string& collective) {
  try {
    work.wait(std::chrono::milliseconds(1000LL * timeout_seconds_));
  } catch (const std::exception& error) {
    // Gloo names the transport's operation, not which collective.
    // c10's errors carry a backtrace after their first line.
    // A timeout may be a peer cut off or stopped: worth 1.5 s to tell.
    // (Gloo says "Timed out waiting ..." in 1.13, "Operation timed out!"
    // in 2.x.)
    const std::string first_line = FirstLineOf(error.what());
    const bool timed_out = absl::StrContains(absl::AsciiStrToLower(first_line), "timed out");
    throw std::runtime_error(absl::StrCat(collective, ": ", first_line,
                                          " (waited up to timeout_seconds: ", timeout_seconds_,
                                          ")", progress_.DescribeLaggards(timed_out)));
  }
}

void CollectiveRunner::Run(const std::string& collective, const Launch& launch) {
  Wait(*Start(collective, launch), collective);
}

void CollectiveRunner::BroadcastCoalesced(std::vector<at::Tensor>& tensors,
                                          const std::string& collective, int root) {
  std::map<at::ScalarType, std::vector<at::Tensor>> by_type;
  for (at::Tensor& t : tensors) by_type[t.scalar_type()].push_back(t);
  for (auto& [type, group] : by_type) {
    std::vector<at::Tensor> flat_parts;
    for (const at::Tensor& t : group) flat_parts.push_back(t.detach().reshape({-1}));
    std::vector<at::Tensor> flat = {at::cat(flat_parts)};
    c10d::BroadcastOptions from;
    from.rootRank = root;
    Run(collective, [&] { return group_->broadcast(flat, from); });
    int64_t offset = 0;
    torch::NoGradGuard no_grad;
    for (at::Tensor& t : group) {
      t.detach().copy_(flat[0].narrow(0, offset, t.numel()).view(t.sizes()));
      offset += t.numel();
    }
  }
}

absl::Status GroupCommunicator::AllReduceSum(std::vector<double>& values,
                                             const std::string& what) {
  return CallTorch("ddp", [&] {
    std::vector<at::Tensor> tensors = {torch::tensor(values, torch::kDouble).to(device_)};
    collectives_.Run(what, [&] { return collectives_.group().allreduce(tensors); });
    const at::Tensor sums = tensors[0].cpu();
    for (size_t i = 0; i < values.size(); ++i) values[i] = sums[i].item<double>();
  });
}

absl::StatusOr<std::vector<std::string>> GroupCommunicator::AllGather(const std::string& bytes,
                                                                      const std::string& what) {
  return CallTorch("ddp", [&] {
    // Lengths first, then every rank's bytes padded to the longest.
    const std::vector<int64_t> lengths =
        Gather(torch::tensor({static_cast<int64_t>(bytes.size())}, torch::kLong), what);
    const int64_t longest = *std::max_element(lengths.begin(), lengths.end());
    at::Tensor padded = torch::zeros({std::max<int64_t>(longest, 1)}, torch::kUInt8);
    std::memcpy(padded.data_ptr(), bytes.data(), bytes.size());
    std::vector<std::vector<at::Tensor>> gathered = GatherTensors(padded, what);
    std::vector<std::string> result;
    for (int r = 0; r < world_size(); ++r) {
      const at::Tensor part = gathered[0][r].cpu();
      result.emplace_back(static_cast<const char*>(part.data_ptr()), lengths[r]);
    }
    return result;
  });
}

absl::Status GroupCommunicator::Broadcast(std::string& bytes, int root, const std::string& what) {
  return CallTorch("ddp", [&] {
    std::vector<at::Tensor> length = {
        torch::tensor({static_cast<int64_t>(bytes.size())}, torch::kLong).to(device_)};
    collectives_.Run(what, [&] { return collectives_.group().broadcast(length, {root}); });
    const int64_t size = length[0].cpu().item<int64_t>();
    at::Tensor data = torch::zeros({std::max<int64_t>(size, 1)}, torch::kUInt8);
    if (rank() == root) std::memcpy(data.data_ptr(), bytes.data(), bytes.size());
    std::vector<at::Tensor> tensors = {data.to(device_)};
    collectives_.Run(what, [&] { return collectives_.group().broadcast(tensors, {root}); });
    const at::Tensor received = tensors[0].cpu();
    bytes.assign(static_cast<const char*>(received.data_ptr()), size);
  });
}

// A one-number all-reduce: NCCL's barrier needs a device guess, this does
// not.
absl::Status GroupCommunicator::Barrier(const std::string& what) {
  std::vector<double> nothing = {0};
  return AllReduceSum(nothing, what);
}

std::vector<std::vector<at::Tensor>> GroupCommunicator::GatherTensors(const at::Tensor& local,
                                                                      const std::string& what) {
  std::vector<at::Tensor> input = {local.to(device_)};
  std::vector<std::vector<at::Tensor>> output(1);
  for (int r = 0; r < world_size(); ++r) output[0].push_back(torch::empty_like(input[0]));
  collectives_.Run(what, [&] { return collectives_.group().allgather(output, input); });
  return output;
}

std::vector<int64_t> GroupCommunicator::Gather(const at::Tensor& one_long,
                                               const std::string& what) {
  const std::vector<std::vector<at::Tensor>> gathered = GatherTensors(one_long, what);
  std::vector<int64_t> values;
  for (const at::Tensor& t : gathered[0]) values.push_back(t.cpu().item<int64_t>());
  return values;
}

torch::Tensor GroupBatchNormReplicas::AllGather(const torch::Tensor& local,
                                                const std::string& what) {
  std::vector<at::Tensor> input = {local.contiguous()};
  std::vector<std::vector<at::Tensor>> output(1);
  for (int r = 0; r < collectives_.world_size(); ++r) output[0].push_back(at::empty_like(input[0]));
  collectives_.Run(what, [&] { return collectives_.group().allgather(output, input); });
  return at::stack(output[0]);
}

void GroupBatchNormReplicas::AllReduceSum(torch::Tensor& values, const std::string& what) {
  std::vector<at::Tensor> tensors = {values.contiguous()};
  collectives_.Run(what, [&] { return collectives_.group().allreduce(tensors); });
  if (!tensors[0].is_same(values)) values.copy_(tensors[0]);
}

}  // namespace pipeline
