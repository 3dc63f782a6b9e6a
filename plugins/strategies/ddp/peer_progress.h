#ifndef PLUGINS_STRATEGIES_DDP_PEER_PROGRESS_H_
#define PLUGINS_STRATEGIES_DDP_PEER_PROGRESS_H_

// Which collective each rank of a ddp job has reached, so that a rank whose
// collective times out can name the peers that never came: a deadlocked or
// endlessly slow rank is still running, so nothing else (no exit, no stop
// signal, nothing on another machine) gives it away.
//
// Each rank numbers the collectives it enters. A background thread
// publishes the number, the collective's name, this rank's host and a
// heartbeat to the job's store every half second (and at once on the first
// collective), so the training loop never waits on the store; on a timeout
// the ranks' entries are read back twice, a few heartbeats apart, with a
// deadline of their own: a rank whose heartbeat did not move is cut off
// (its host unreachable) or stopped, and a store that does not answer
// cannot turn the error into a hang.

#include <chrono>
#include <memory>
#include <string>

#include "torch/csrc/distributed/c10d/Store.hpp"

namespace pipeline {

class PeerProgress {
 public:
  // `host` names this rank's machine in other ranks' errors (the address
  // of its Gloo interface, or its host name); `store_address` is where the
  // store lives (rank 0's host:port), for this rank's own errors.
  PeerProgress(c10::intrusive_ptr<c10d::Store> store, int rank, int world_size, std::string host,
               std::string store_address);
  ~PeerProgress();
  PeerProgress(const PeerProgress&) = delete;
  PeerProgress& operator=(const PeerProgress&) = delete;

  // Called as this rank enters a collective; `collective` names it
  // ("all-reduce of gradient bucket 2 of 3").
  void Enter(const std::string& collective);

  // For the error of a collective this rank is waiting in (the last one it
  // entered): which ranks have not reached it and where they are, as
  // "; rank 1 has not reached it (its last collective: number 40, ...)", or
  // why that is unknown. With `check_heartbeats` (after a timeout, when a
  // peer may be cut off) it also names the ranks whose heartbeat stands
  // still, which takes 1.5 s; without (a peer closed its connection: it is
  // gone) it answers at once, so a restarted peer is not kept waiting.
  // Waits at most `deadline` for the store.
  std::string DescribeLaggards(bool check_heartbeats,
                               std::chrono::milliseconds deadline = std::chrono::seconds(5));

 private:
  struct State;
  // Shared with the publishing thread, which is detached rather than joined
  // at exit: a store that hangs must not hang the process with it.
  std::shared_ptr<State> state_;
};

// The value a rank publishes, and its parts; exposed for tests.
struct ProgressRecord {
  long long number = 0;    // collectives entered
  long long heartbeat = 0;  // publications so far
  std::string host;
  std::string collective;  // the last one entered
};
std::string EncodeProgress(const ProgressRecord& record);
bool DecodeProgress(const std::string& value, ProgressRecord* record);

}  // namespace pipeline

#endif  // PLUGINS_STRATEGIES_DDP_PEER_PROGRESS_H_
