#ifndef PLUGINS_STRATEGIES_DDP_LOOPBACK_RANKS_H_
#define PLUGINS_STRATEGIES_DDP_LOOPBACK_RANKS_H_

// The ranks of a ddp job as threads of one test process, meeting over
// loopback, for the tests of the parts below the strategy.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pipeline/interfaces/strategy.h"
#include "plugins/strategies/ddp/group_communicator.h"
#include "plugins/strategies/ddp/peer_progress.h"
#include "plugins/strategies/ddp/process_group.h"
#include "plugins/strategies/ddp/rendezvous.h"

namespace pipeline {
namespace testing {

// Rank `rank` of `world_size`, every rank on this machine, rank 0's store
// at 127.0.0.1:`port`.
Rendezvous LoopbackRendezvous(int rank, int world_size, int port, int restart_count = 0);

// A context whose environment sets nothing (no GLOO_SOCKET_IFNAME from the
// machine the test runs on).
StrategyContext EmptyEnvironment();

// A rank's Gloo group and the runner of its collectives.
struct LoopbackRank {
  ProcessGroup process_group;
  std::unique_ptr<PeerProgress> progress;
  std::unique_ptr<CollectiveRunner> collectives;
};

// Rank `rank` of `world_size` (rank 0's store at `port`), once every rank
// has connected; each collective gives up after
// `collective_timeout_seconds`, the rendezvous after a minute.
absl::StatusOr<LoopbackRank> ConnectLoopbackRank(int rank, int world_size, int port,
                                                 int collective_timeout_seconds = 60);

// Runs body(0), ..., body(threads - 1), each on its own thread and all at
// once; returns each one's error message ("" for OK).
std::vector<std::string> RunOnThreads(int threads, const std::function<absl::Status(int)>& body);

}  // namespace testing
}  // namespace pipeline

#endif  // PLUGINS_STRATEGIES_DDP_LOOPBACK_RANKS_H_
