#ifndef TOOLS_LAUNCHER_H_
#define TOOLS_LAUNCHER_H_

// The built-in launcher: starts this node's worker processes of a
// multi-process run with the environment torchrun gives its workers, relays
// their output prefixed with the rank, and stops all of them when one fails.

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace pipeline {

struct LaunchOptions {
  int nproc_per_node = 1;
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  // 0: pick a free port (single-node runs only).
  int master_port = 0;
  // The worker command: this binary and its arguments.
  std::vector<std::string> command;
  // After a stop signal or a failed worker, how long the others may take to
  // exit before they are killed.
  int stop_grace_seconds = 10;
  // Which attempt this is (0 first, then 1 per restart), passed to the
  // workers as torchrun does (TORCHELASTIC_RESTART_COUNT): a restarted
  // worker must not join what is left of the attempt before.
  int restart_count = 0;
};

// Runs the workers to completion. OK when all exit 0; otherwise an error
// naming the first rank that failed and how (exit status or signal), and any
// worker that had been stopped (SIGSTOP) and so hung the others, after the
// others were stopped.
//
// SIGINT and SIGTERM are forwarded to every worker (the workers run in their
// own process group, so a terminal's Ctrl-C reaches them only this way,
// once); a second one kills them. The result is then a kCancelled error.
// Workers die with the launcher, even when it is SIGKILLed.
absl::Status LaunchWorkers(const LaunchOptions& options);

// The signal that stopped the last LaunchWorkers, 0 if none did.
int LauncherStopSignal();

}  // namespace pipeline

#endif  // TOOLS_LAUNCHER_H_
