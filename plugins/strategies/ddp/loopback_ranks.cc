#include "plugins/strategies/ddp/loopback_ranks.h"

#include <thread>

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
