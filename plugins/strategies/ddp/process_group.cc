#include "plugins/strategies/ddp/process_group.h"

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "pipeline/util/host_address.h"
#include "pipeline/util/status_macros.h"
#include "pipeline/util/torch_status.h"
#include "pipeline/util/torch_version.h"
#include "torch/csrc/distributed/c10d/ProcessGroupGloo.hpp"
#include "torch/csrc/distributed/c10d/PrefixStore.hpp"
#include "torch/csrc/distributed/c10d/TCPStore.hpp"
#ifdef USE_C10D_NCCL
#include "c10/cuda/CUDAFunctions.h"
#include "torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp"
#endif

namespace pipeline {
namespace {

// Where this rank's Gloo transport listens: the interface named by
// GLOO_SOCKET_IFNAME (as in PyTorch); loopback when every rank is on this
// machine; otherwise the address this host's name resolves to.
std::shared_ptr<::gloo::transport::Device> GlooDevice(const StrategyContext& context,
                                                      const Rendezvous& rendezvous) {
  const std::string interface = context.environment("GLOO_SOCKET_IFNAME");
  if (!interface.empty()) return c10d::ProcessGroupGloo::createDeviceForInterface(interface);
  if (rendezvous.master_addr == "127.0.0.1") {
    return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  }
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

// Whether `store` belongs to this rank's attempt of the job. After a
// restart, a restarted rank can reach the store of the attempt before (its
// rank 0 still reporting its error) and would meet ranks that are about to
// exit; rank 0 stamps its store with its attempt, and a rank of a later
// attempt waits for a store with its own.
bool StoreOfThisAttempt(c10d::Store& store, const Rendezvous& rendezvous) {
  const std::string key = "pipeline/restart_count";
  if (rendezvous.rank == 0) {
    const std::string mine = std::to_string(rendezvous.restart_count);
    store.set(key, std::vector<uint8_t>(mine.begin(), mine.end()));
    return true;
  }
  const std::vector<uint8_t> value = store.get(key);
  int theirs = 0;
  absl::SimpleAtoi(std::string(value.begin(), value.end()), &theirs);
  if (theirs > rendezvous.restart_count) {
    throw std::runtime_error(absl::StrCat(
        "rank 0 runs attempt ", theirs, " of this job (TORCHELASTIC_RESTART_COUNT) and this rank ",
        "attempt ", rendezvous.restart_count, "; restart every node's launcher together"));
  }
  return theirs == rendezvous.restart_count;
}

// Ranks launched inconsistently would otherwise wait for each other until
// the timeout: every rank compares its world size with rank 0's, and claims
// its rank number, so a rank started twice is refused.
void CheckRanksAgree(c10d::Store& store, const Rendezvous& rendezvous) {
  auto bytes = [](const std::string& text) { return std::vector<uint8_t>(text.begin(), text.end()); };
  store.set(absl::StrCat("pipeline/world_size/", rendezvous.rank),
            bytes(std::to_string(rendezvous.world_size)));
  const std::vector<uint8_t> zero = store.get("pipeline/world_size/0");
  const std::string theirs(zero.begin(), zero.end());
  if (theirs != std::to_string(rendezvous.world_size)) {
    throw std::runtime_error(absl::StrCat("WORLD_SIZE=", rendezvous.world_size,
                                          " here but rank 0 has WORLD_SIZE=", theirs,
                                          "; start every rank with the same world size"));
  }
  if (store.add(absl::StrCat("pipeline/rank_claims/", rendezvous.rank), 1) > 1) {
    throw std::runtime_error(absl::StrCat("RANK=", rendezvous.rank,
                                          " is already taken by another process of this job; "
                                          "give each process its own rank"));
  }
}

// The store of this attempt (rank 0 serves it, or torchrun's agent), once
// the ranks agree. Throws what c10d throws, and the refusals above.
c10::intrusive_ptr<c10d::Store> ConnectStore(const DdpOptions& options,
                                             const Rendezvous& rendezvous,
                                             std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions store_options;
  store_options.port = static_cast<uint16_t>(rendezvous.master_port);
  store_options.isServer = rendezvous.rank == 0 && !rendezvous.agent_store;
  store_options.numWorkers = rendezvous.world_size;
  store_options.timeout = timeout;
  UseClassicStoreBackend(store_options);
  const auto give_up = std::chrono::steady_clock::now() + timeout;
  while (true) {
    c10::intrusive_ptr<c10d::Store> store =
        c10::make_intrusive<c10d::TCPStore>(rendezvous.master_addr, store_options);
    if (rendezvous.agent_store) {
      store = c10::make_intrusive<c10d::PrefixStore>(
          absl::StrCat("/worker/attempt_", rendezvous.restart_count), store);
    }
    if (StoreOfThisAttempt(*store, rendezvous)) {
      CheckRanksAgree(*store, rendezvous);
      return store;
    }
    store.reset();
    if (std::chrono::steady_clock::now() > give_up) {
      throw std::runtime_error(absl::StrCat(
          "for timeout_seconds (", options.timeout_seconds(), ") only the store of an ",
          "earlier attempt answered, not that of attempt ", rendezvous.restart_count));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

c10::intrusive_ptr<CollectiveGroup> MakeGroup(const DdpOptions& options,
                                              const StrategyContext& context,
                                              const Rendezvous& rendezvous, torch::Device device,
                                              const c10::intrusive_ptr<c10d::Store>& store,
                                              std::chrono::milliseconds timeout) {
#ifdef USE_C10D_NCCL
  if (options.backend() == DdpOptions::NCCL) {
    c10::cuda::set_device(device.index());
    auto nccl_options = c10d::ProcessGroupNCCL::Options::create();
    nccl_options->timeout = timeout;
    return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rendezvous.rank,
                                                       rendezvous.world_size, nccl_options);
  }
#else
  (void)options;
  (void)device;
#endif
  auto gloo_options = c10d::ProcessGroupGloo::Options::create(timeout);
  gloo_options->devices.push_back(GlooDevice(context, rendezvous));
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rendezvous.rank,
                                                     rendezvous.world_size, gloo_options);
}

}  // namespace

absl::StatusOr<ProcessGroup> ConnectProcessGroup(const DdpOptions& options,
                                                 const StrategyContext& context,
                                                 const Rendezvous& rendezvous,
                                                 torch::Device device) {
  // Before the store, which would retry a name that does not resolve until
  // the timeout.
  RETURN_IF_ERROR(CheckHostResolves(rendezvous.master_addr, rendezvous.master_addr_source));
  const auto timeout = std::chrono::milliseconds(1000LL * options.timeout_seconds());
  auto connected = CallTorch(
      absl::StrCat("ddp: rendezvous of ", rendezvous.world_size, " ranks at ",
                   rendezvous.master_addr, ":", rendezvous.master_port, " (rank ",
                   rendezvous.rank, ")"),
      [&] {
        ProcessGroup connected;
        connected.store = ConnectStore(options, rendezvous, timeout);
        connected.group = MakeGroup(options, context, rendezvous, device, connected.store, timeout);
        return connected;
      });
  if (!connected.ok() &&
      absl::StrContains(connected.status().message(), "Address already in use")) {
    return absl::FailedPreconditionError(absl::StrCat(
        connected.status().message(), " Another process holds port ", rendezvous.master_port,
        ": choose a free one with MASTER_PORT (or train --master_port)"));
  }
  return connected;
}

// LibTorch 2.4+ prints "WARNING: destroy_process_group() was not called
// before program exit" when an NCCL group is destroyed while still open, and
// then aborts its communicators. By then every collective of the run was
// waited for, so aborting first is the same teardown without the warning
// (shutdown() would also flush outstanding work: it blocks on a dead peer).
void AbortNcclGroup(CollectiveGroup& group) {
#if defined(USE_C10D_NCCL) && PIPELINE_TORCH_AT_LEAST(2, 4)
  if (auto* nccl = dynamic_cast<c10d::ProcessGroupNCCL*>(&group)) nccl->abort();
#else
  (void)group;
#endif
}

}  // namespace pipeline
