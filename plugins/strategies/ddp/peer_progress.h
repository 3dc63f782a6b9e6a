#ifndef PLUGINS_STRATEGIES_DDP_PEER_PROGRESS_H_
#define PLUGINS_STRATEGIES_DDP_PEER_PROGRESS_H_

// Which collective each rank of a ddp job has reached, so that a rank whose
// collective times out can name the peers that never came: a deadlocked or
// endlessly slow rank is still running, so nothing else (no exit, no stop
// signal, nothing on another machine) gives it away.
//
// Each rank numbers the collectives it enters. A background thread
// publishes the number and the collective's name to the job's store (at most
// every half second, and only when it changed), so the training loop never
// waits on the store; on a timeout the ranks' entries are read back with a
// deadline of their own, so a store that does not answer cannot turn the
// error into a hang.

#include <chrono>
#include <memory>
#include <string>

#include "torch/csrc/distributed/c10d/Store.hpp"

namespace pipeline {

class PeerProgress {
 public:
  PeerProgress(c10::intrusive_ptr<c10d::Store> store, int rank, int world_size);
  ~PeerProgress();
  PeerProgress(const PeerProgress&) = delete;
  PeerProgress& operator=(const PeerProgress&) = delete;

  // Called as this rank enters a collective; `collective` names it
  // ("all-reduce of gradient bucket 2 of 3").
  void Enter(const std::string& collective);

  // For the error of a collective this rank is waiting in (the last one it
  // entered): which ranks have not reached it and where they are, as
  // "; rank 1 has not reached it (its last collective: number 40, ...)", or
  // why that is unknown. Waits at most `deadline` for the store.
  std::string DescribeLaggards(std::chrono::milliseconds deadline = std::chrono::seconds(5));

 private:
  struct State;
  // Shared with the publishing thread, which is detached rather than joined
  // at exit: a store that hangs must not hang the process with it.
  std::shared_ptr<State> state_;
};

// The value a rank publishes, and its parts; exposed for tests.
std::string EncodeProgress(long long number, const std::string& collective);
bool DecodeProgress(const std::string& value, long long* number, std::string* collective);

}  // namespace pipeline

#endif  // PLUGINS_STRATEGIES_DDP_PEER_PROGRESS_H_
