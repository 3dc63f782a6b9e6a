#ifndef PIPELINE_LAUNCH_ELASTIC_RENDEZVOUS_H_
#define PIPELINE_LAUNCH_ELASTIC_RENDEZVOUS_H_

// The launchers' rendezvous of an elastic job (train --nnodes=MIN:MAX), as
// torchrun's c10d rendezvous backend does it: the launcher on the
// --master_addr machine hosts a c10d TCPStore on --master_port and every
// launcher meets there in numbered rounds. A round forms as soon as MAX
// nodes joined, or `last_call` after the last join once MIN have; its nodes
// run the job's workers until one of them fails, when a new round opens and
// whoever is still there (and whoever waited) forms it. A node arriving at a
// formed round waits for the next one. The host is always node 0, so rank 0
// and its checkpoints stay on the --master_addr machine; like torchrun's
// c10d backend, the host is a single point of failure.

#include <chrono>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "c10/util/intrusive_ptr.h"

namespace c10d {
class TCPStore;
}

namespace pipeline {

// --nnodes: "N" (a fixed group; min == max, not elastic) or "MIN:MAX".
struct NodeRange {
  int min = 1;
  int max = 1;
  bool elastic = false;
};
absl::StatusOr<NodeRange> ParseNodeRange(absl::string_view flag);

struct RendezvousOptions {
  std::string host;  // --master_addr
  int port = 0;      // --master_port
  NodeRange nodes;
  int nproc_per_node = 1;
  // What every node must agree on (the resolved config); a node with
  // another is refused before it joins, and the job goes on without it.
  std::string config_text;
  // After MIN nodes have joined, how long a round stays open for more
  // (from the latest join).
  std::chrono::milliseconds last_call{std::chrono::seconds(30)};
  // How long a node waits for a round to form before giving up.
  std::chrono::milliseconds join_timeout{std::chrono::seconds(600)};
};

// One formed round, as this node sees it.
struct RoundMembership {
  int round = 0;
  int nnodes = 0;
  int node_rank = 0;  // 0 is the host
  int worker_port = 0;  // MASTER_PORT of this round's workers
};

class ElasticRendezvous {
 public:
  // Hosts the store when --master_addr is this machine and its port is free
  // (the first launcher there), else connects to it, waiting up to
  // join_timeout for the host to start.
  static absl::StatusOr<std::unique_ptr<ElasticRendezvous>> Connect(
      const RendezvousOptions& options);
  ~ElasticRendezvous();

  bool is_host() const { return is_host_; }

  // Joins the first round numbered `first_round` or later that is still
  // open and waits for it to form. NotFound when the job finished while
  // this node waited (nothing left to do); InvalidArgument when this node's
  // config or nproc_per_node differs from the host's.
  absl::StatusOr<RoundMembership> JoinRound(int first_round);

  // Ends `round` for every node: their launchers see it (CurrentRound),
  // stop their workers, and join the next. A no-op when a later round is
  // already open.
  absl::Status OpenNextRound(int round);

  // The newest round; a launcher polls it while its workers run.
  absl::StatusOr<int> CurrentRound();

  // The host, once its workers finished the job: tells nodes still waiting
  // to join that there is nothing left, and gives them a moment to read it
  // before the store goes away with this process.
  void MarkJobDone();

 private:
  ElasticRendezvous(const RendezvousOptions& options, bool is_host);
  absl::StatusOr<RoundMembership> JoinRoundAsHost(int first_round);
  absl::StatusOr<RoundMembership> JoinRoundAsGuest(int first_round);
  // The host closes `round` once enough nodes joined; a guest joins it and
  // waits for that (`late`: it closed without this node).
  absl::StatusOr<RoundMembership> FormRound(int round);
  absl::StatusOr<RoundMembership> JoinOpenRound(int round, bool* late);
  absl::Status CheckSameJob();
  absl::Status WaitForNextRound(int round);

  RendezvousOptions options_;
  bool is_host_;
  c10::intrusive_ptr<c10d::TCPStore> store_;
};

}  // namespace pipeline

#endif  // PIPELINE_LAUNCH_ELASTIC_RENDEZVOUS_H_
