#ifndef PIPELINE_LAUNCH_LAUNCHER_H_
#define PIPELINE_LAUNCH_LAUNCHER_H_

// The built-in launcher: starts this node's worker processes of a
// multi-process run with the environment torchrun gives its workers, relays
// their output prefixed with the rank, and stops all of them when one fails.

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

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
  // Polled about once a second while the workers run: an error stops them
  // (SIGTERM, then SIGKILL after stop_grace_seconds) and is the result. An
  // elastic job's launcher watches for another node opening a new round.
  std::function<absl::Status()> watch;
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

// Runs the workers and, when they fail and max_restarts allows, runs them
// again with --resume=auto (a fixed group of nodes: each node's launcher
// restarts its own, and the workers of the attempt meet again). A config
// error or a stop signal is not retried.
absl::Status LaunchWithRestarts(LaunchOptions options, int max_restarts);

// Whether a failed launch may be retried: a config error (a worker's exit
// status 2) would fail the same way again, and a stop signal means stop.
bool IsRetriable(const absl::Status& launched);

// A TCP port nothing on this machine listens on now, on any of its
// addresses: a single-node job's rendezvous, an elastic round's workers.
absl::StatusOr<int> FreePort();

// Adds --resume=auto to a worker command that lacks it.
void ResumeFromLatestCheckpoint(std::vector<std::string>& command);

// The signal that stopped the last LaunchWorkers, 0 if none did.
int LauncherStopSignal();

}  // namespace pipeline

#endif  // PIPELINE_LAUNCH_LAUNCHER_H_
