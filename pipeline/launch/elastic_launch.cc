#include "pipeline/launch/elastic_launch.h"

#include <chrono>
#include <iostream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"

namespace pipeline {
namespace {

// The rendezvous host's launcher ends as soon as its own workers finished
// the job, which can be a moment before this node's workers exit (they
// passed the same last collective). Losing the host therefore stops this
// node's workers only after a grace period: a finished job ends well, and
// a broken one still ends, by its workers' own collective timeouts or by
// the stop after the grace.
class HostWatch {
 public:
  static constexpr std::chrono::seconds kGrace{30};

  bool lost() const { return !status_.ok(); }
  const absl::Status& status() const { return status_; }
  bool GraceLeft() const { return std::chrono::steady_clock::now() - lost_at_ < kGrace; }

  void Lose(absl::Status why) {
    status_ = std::move(why);
    lost_at_ = std::chrono::steady_clock::now();
    std::cerr << "launcher: " << status_.message() << "; this node's workers have "
              << kGrace.count() << " s to finish before they are stopped\n";
  }

 private:
  absl::Status status_;
  std::chrono::steady_clock::time_point lost_at_;
};

}  // namespace

absl::Status LaunchElastic(const RendezvousOptions& options, LaunchOptions launch,
                           int max_restarts) {
  auto rendezvous = ElasticRendezvous::Connect(options);
  if (!rendezvous.ok()) return rendezvous.status();
  int restarts = 0;
  int next_round = 0;
  while (true) {
    auto round = (*rendezvous)->JoinRound(next_round);
    if (absl::IsNotFound(round.status())) {
      std::cerr << "launcher: the job finished before this node could join; nothing to do\n";
      return absl::OkStatus();
    }
    if (!round.ok()) return round.status();
    std::cerr << "launcher: rendezvous round " << round->round << ": " << round->nnodes
              << (round->nnodes == 1 ? " node" : " nodes") << ", this one is node "
              << round->node_rank << (round->node_rank == 0 ? " (the host)" : "") << "\n";
    launch.nnodes = round->nnodes;
    launch.node_rank = round->node_rank;
    launch.master_port = round->worker_port;
    // The same attempt number on every node of the round, whenever each
    // node's launcher started: the workers compare it.
    launch.restart_count = round->round;
    // Every round after the first continues the job, on every node, a node
    // new to the job included.
    if (round->round > 0) ResumeFromLatestCheckpoint(launch.command);
    bool new_round_opened = false;
    HostWatch host;
    launch.watch = [&rendezvous, &new_round_opened, &host,
                    this_round = round->round]() -> absl::Status {
      if (host.lost()) return host.GraceLeft() ? absl::OkStatus() : host.status();
      auto current = (*rendezvous)->CurrentRound();
      if (absl::IsUnavailable(current.status())) {
        host.Lose(current.status());
        return absl::OkStatus();
      }
      if (!current.ok()) return current.status();
      if (*current <= this_round) return absl::OkStatus();
      new_round_opened = true;
      return absl::UnavailableError(
          absl::StrCat("another node opened rendezvous round ", *current));
    };
    const absl::Status launched = LaunchWorkers(launch);
    if (launched.ok()) {
      if ((*rendezvous)->is_host()) (*rendezvous)->MarkJobDone();
      if (host.lost()) std::cerr << "launcher: this node's workers finished the job\n";
      return absl::OkStatus();
    }
    if (host.lost()) {
      // No rendezvous left to restart through.
      if (launched.message() == host.status().message()) return launched;
      return absl::Status(launched.code(),
                          absl::StrCat(host.status().message(), "; ", launched.message()));
    }
    if (!IsRetriable(launched)) return launched;
    if (new_round_opened) {
      // Another node's failure (or a node leaving): not this node's restart.
      std::cerr << "launcher: joining the next rendezvous round\n";
    } else {
      if (restarts == max_restarts) return launched;
      ++restarts;
      std::cerr << "launcher: restart " << restarts << " of " << max_restarts << " after: "
                << launched.message() << "; rendezvous round " << round->round + 1
                << " continues from the latest checkpoint\n";
      if (absl::Status opened = (*rendezvous)->OpenNextRound(round->round); !opened.ok()) {
        return opened;
      }
    }
    next_round = round->round + 1;
  }
}

}  // namespace pipeline
