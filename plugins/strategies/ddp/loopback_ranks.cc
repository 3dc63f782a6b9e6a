#include "plugins/strategies/ddp/loopback_ranks.h"

#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"

namespace pipeline {
namespace testing {

Rendezvous LoopbackRendezvous(int rank, int world_size, int port, int restart_count) {
  Rendezvous rendezvous;
  rendezvous.rank = rank;
  rendezvous.world_size = world_size;
  rendezvous.local_rank = rank;
  rendezvous.master_addr = "127.0.0.1";
  rendezvous.master_addr_source = "the test";
  rendezvous.master_port = port;
  rendezvous.host = "127.0.0.1";
  rendezvous.restart_count = restart_count;
  return rendezvous;
}

StrategyContext EmptyEnvironment() {
  StrategyContext context;
  context.environment = [](const std::string&) { return std::string(); };
  return context;
}

absl::StatusOr<LoopbackRank> ConnectLoopbackRank(int rank, int world_size, int port,
                                                 int collective_timeout_seconds) {
  const Rendezvous rendezvous = LoopbackRendezvous(rank, world_size, port);
  DdpOptions options;
  options.set_timeout_seconds(60);
  absl::StatusOr<ProcessGroup> group =
      ConnectProcessGroup(options, EmptyEnvironment(), rendezvous, torch::kCPU);
  if (!group.ok()) return group.status();
  LoopbackRank connected;
  connected.process_group = *std::move(group);
  connected.progress = std::make_unique<PeerProgress>(
      connected.process_group.store, rank, world_size, rendezvous.host,
      absl::StrCat(rendezvous.master_addr, ":", port));
  connected.collectives = std::make_unique<CollectiveRunner>(
      connected.process_group.group, *connected.progress, collective_timeout_seconds);
  return connected;
}

std::vector<std::string> RunOnThreads(int threads, const std::function<absl::Status(int)>& body) {
  std::vector<std::string> errors(threads);
  std::vector<std::thread> running;
  for (int i = 0; i < threads; ++i) {
    running.emplace_back([&, i] { errors[i] = std::string(body(i).message()); });
  }
  for (std::thread& thread : running) thread.join();
  return errors;
}

}  // namespace testing
}  // namespace pipeline
