#include "pipeline/launch/launcher.h"

#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "pipeline/util/host_address.h"
#include "pipeline/util/subprocess.h"

namespace pipeline {
namespace {

struct Worker {
  int rank = 0;
  int local_rank = 0;
  std::unique_ptr<Subprocess> process;
  std::string out_pending, err_pending;
  bool running = true;
  // Stopped (SIGSTOP, a debugger) and not continued: it cannot take part
  // in a collective, so the other ranks' timeouts are its doing.
  bool stopped = false;
  int stopped_by = 0;
  std::chrono::steady_clock::time_point stopped_at;
};

volatile std::sig_atomic_t g_stop_signal = 0;
volatile std::sig_atomic_t g_stop_signals_received = 0;
void OnStopSignal(int signal) {
  if (g_stop_signal == 0) g_stop_signal = signal;
  g_stop_signals_received = g_stop_signals_received + 1;
}

// Relays complete lines; rank 0's stdout (the JSON events) goes out as is so
// tools can read it, everything else with a "[rank N] " prefix.
void Relay(Worker& worker, int fd, bool flush_all) {
  const bool is_out = fd == worker.process->stdout_fd();
  std::string& pending = is_out ? worker.out_pending : worker.err_pending;
  char buffer[8192];
  const ssize_t n = ::read(fd, buffer, sizeof(buffer));
  if (n > 0) pending.append(buffer, n);
  std::ostream& sink = is_out ? std::cout : std::cerr;
  const std::string prefix = is_out && worker.rank == 0 ? "" : absl::StrCat("[rank ", worker.rank, "] ");
  size_t start = 0, end;
  while ((end = pending.find_first_of("\n\r", start)) != std::string::npos) {
    sink << prefix << pending.substr(start, end - start) << "\n";
    start = end + 1;
  }
  pending.erase(0, start);
  if ((flush_all || n <= 0) && !pending.empty()) {
    sink << prefix << pending << "\n";
    pending.clear();
  }
  sink.flush();
}

// Relays what is left on `fd` and closes it.
void RelayRestAndClose(Worker& worker, int fd) {
  Relay(worker, fd, true);
  if (fd == worker.process->stdout_fd()) {
    worker.process->CloseStdout();
  } else {
    worker.process->CloseStderr();
  }
}

// The workers stopped without dying, as "rank 1 (pid 123) was stopped by
// signal 19 (Stopped (signal)) 5.1 s before", or "".
std::string DescribeStopped(const std::vector<Worker>& workers) {
  std::string text;
  for (const Worker& w : workers) {
    if (!w.running || !w.stopped) continue;
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - w.stopped_at).count();
    absl::StrAppend(&text, text.empty() ? "" : ", ", "rank ", w.rank, " (pid ", w.process->pid(),
                    ") was stopped by signal ", w.stopped_by, " (", strsignal(w.stopped_by), ") ",
                    absl::StrFormat("%.1f", seconds), " s before");
  }
  return text;
}

// This node's workers of one attempt, from start to the last one reaped:
// Start, then Supervise until every worker has exited.
class WorkerGroup {
 public:
  WorkerGroup(const LaunchOptions& options, int port)
      : options_(options), port_(port), world_size_(options.nproc_per_node * options.nnodes) {}

  absl::Status Start();
  // Relays output, forwards stop signals, runs the watch, reaps, and stops
  // the others when one fails, until none is left. The first failure (or
  // the stop signal) is the result.
  absl::Status Supervise();

 private:
  std::vector<std::string> WorkerEnvironment(const Worker& worker) const;
  void Announce() const;
  void RelayOutput();
  void ForwardStopSignals();
  void RunWatch();
  void ReapExited();
  void OnExit(Worker& worker, int wait_status);
  void StopAll(int signal);
  // Starts the grace period after which StopAll(SIGKILL) follows.
  void BeginStopping();

  const LaunchOptions& options_;
  const int port_;
  const int world_size_;
  std::vector<Worker> workers_;
  absl::Status result_;
  int running_ = 0;
  bool stopping_ = false;
  std::chrono::steady_clock::time_point stop_deadline_;
  int signals_handled_ = 0;
  std::chrono::steady_clock::time_point next_watch_ =
      std::chrono::steady_clock::now() + std::chrono::seconds(1);
};

std::vector<std::string> WorkerGroup::WorkerEnvironment(const Worker& worker) const {
  return {
      absl::StrCat("RANK=", worker.rank),
      absl::StrCat("LOCAL_RANK=", worker.local_rank),
      absl::StrCat("WORLD_SIZE=", world_size_),
      absl::StrCat("LOCAL_WORLD_SIZE=", options_.nproc_per_node),
      absl::StrCat("GROUP_RANK=", options_.node_rank),
      absl::StrCat("MASTER_ADDR=", options_.master_addr),
      absl::StrCat("MASTER_PORT=", port_),
      absl::StrCat("TORCHELASTIC_RESTART_COUNT=", options_.restart_count),
  };
}

absl::Status WorkerGroup::Start() {
  std::signal(SIGINT, OnStopSignal);
  std::signal(SIGTERM, OnStopSignal);
  workers_.resize(options_.nproc_per_node);
  for (int local_rank = 0; local_rank < options_.nproc_per_node; ++local_rank) {
    Worker& worker = workers_[local_rank];
    worker.local_rank = local_rank;
    worker.rank = options_.node_rank * options_.nproc_per_node + local_rank;
    SubprocessOptions spawn;
    spawn.argv = options_.command;
    spawn.environment = WorkerEnvironment(worker);
    spawn.output = SubprocessOptions::Output::kPipes;
    // Its own process group: a terminal's Ctrl-C reaches the launcher
    // alone, which forwards it once (twice would mean "stop at once").
    spawn.own_process_group = true;
    // No orphans: the worker dies with the launcher, however it ends.
    spawn.die_with_parent = true;
    auto process = Subprocess::Start(spawn);
    if (!process.ok()) {
      workers_.resize(local_rank);  // the ones started die with their Subprocess
      return process.status();
    }
    worker.process = std::move(*process);
    ++running_;
  }
  Announce();
  return absl::OkStatus();
}

void WorkerGroup::Announce() const {
  std::cerr << "launcher: started " << options_.nproc_per_node << " workers (ranks "
            << workers_.front().rank << "-" << workers_.back().rank << " of " << world_size_
            << "), rendezvous at " << options_.master_addr << ":" << port_ << "\n";
  // The pids let a user (or a test) signal one worker without pkill.
  std::string pids;
  for (const Worker& w : workers_) {
    absl::StrAppend(&pids, pids.empty() ? "" : ", ", "rank ", w.rank, " = ", w.process->pid());
  }
  std::cerr << "launcher: worker pids: " << pids << "\n";
}

absl::Status WorkerGroup::Supervise() {
  while (running_ > 0) {
    RelayOutput();
    ForwardStopSignals();
    RunWatch();
    ReapExited();
    if (stopping_ && std::chrono::steady_clock::now() > stop_deadline_) StopAll(SIGKILL);
  }
  for (Worker& w : workers_) {
    for (int fd : {w.process->stdout_fd(), w.process->stderr_fd()}) {
      if (fd >= 0) RelayRestAndClose(w, fd);
    }
  }
  return result_;
}

// Waits up to 200 ms for output, and relays what came.
void WorkerGroup::RelayOutput() {
  std::vector<pollfd> fds;
  std::vector<Worker*> owners;
  for (Worker& w : workers_) {
    for (int fd : {w.process->stdout_fd(), w.process->stderr_fd()}) {
      if (fd < 0) continue;
      fds.push_back({fd, POLLIN, 0});
      owners.push_back(&w);
    }
  }
  ::poll(fds.data(), fds.size(), 200);
  for (size_t i = 0; i < fds.size(); ++i) {
    if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    char probe;
    if (fds[i].revents & POLLIN) {
      Relay(*owners[i], fds[i].fd, false);
    } else if (::read(fds[i].fd, &probe, 0) == 0) {
      RelayRestAndClose(*owners[i], fds[i].fd);
    }
  }
}

void WorkerGroup::ForwardStopSignals() {
  const int received = g_stop_signals_received;
  if (received <= signals_handled_) return;
  const int signal = g_stop_signal;
  if (signals_handled_ == 0) {
    // The same signal, so each worker does what it would do alone
    // (with checkpoint_on_signal: finish the step, checkpoint, exit).
    std::cerr << "launcher: " << strsignal(signal) << "; passing it to every worker "
              << "(again to kill them at once)\n";
    StopAll(signal);
    if (result_.ok()) {
      result_ = absl::CancelledError(absl::StrCat("stopped by signal ", signal, " (",
                                                  strsignal(signal), "); every worker has "
                                                  "exited"));
    }
    BeginStopping();
  } else {
    std::cerr << "launcher: " << strsignal(signal) << " again; killing every worker\n";
    StopAll(SIGKILL);
  }
  signals_handled_ = received;
}

// About once a second: the watch (another node's new round) may stop this
// node's workers.
void WorkerGroup::RunWatch() {
  if (!options_.watch || stopping_ || std::chrono::steady_clock::now() < next_watch_) return;
  next_watch_ = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  absl::Status watched = options_.watch();
  if (watched.ok()) return;
  std::cerr << "launcher: " << watched.message() << "; stopping this node's workers\n";
  result_ = watched;
  StopAll(SIGTERM);
  BeginStopping();
}

void WorkerGroup::ReapExited() {
  for (Worker& w : workers_) {
    if (!w.running) continue;
    for (ChildEvent event = w.process->Poll(); event.kind != ChildEvent::Kind::kNone;
         event = w.process->Poll()) {
      if (event.kind == ChildEvent::Kind::kStopped) {
        w.stopped = true;
        w.stopped_by = event.stop_signal;
        w.stopped_at = std::chrono::steady_clock::now();
        std::cerr << "launcher: rank " << w.rank << " (pid " << w.process->pid()
                  << ") was stopped by signal " << w.stopped_by << " ("
                  << strsignal(w.stopped_by) << "); the other ranks will wait for it\n";
        if (stopping_) w.process->Signal(SIGKILL);
      } else if (event.kind == ChildEvent::Kind::kContinued) {
        w.stopped = false;
      } else {
        OnExit(w, event.wait_status);
        break;
      }
    }
  }
}

void WorkerGroup::OnExit(Worker& w, int wait_status) {
  w.running = false;
  --running_;
  const bool failed = !(WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0);
  if (!failed || !result_.ok()) return;
  std::string what =
      absl::StrCat("rank ", w.rank, " (pid ", w.process->pid(), ") ", DescribeExit(wait_status));
  // The failure is most likely a collective's timeout, waiting for the
  // stopped one: name it, it is the rank to look at.
  if (const std::string hung = DescribeStopped(workers_); !hung.empty()) {
    absl::StrAppend(&what, " while ", hung, " and hung the job");
  }
  // Keep the worker's own exit status meaning (2 = bad input).
  const bool bad_input = WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 2;
  result_ = absl::Status(bad_input ? absl::StatusCode::kInvalidArgument
                                   : absl::StatusCode::kAborted,
                         absl::StrCat(what, "; stopped the other workers"));
  std::cerr << "launcher: " << what << "; stopping the other workers\n";
  StopAll(SIGTERM);
  BeginStopping();
}

void WorkerGroup::StopAll(int signal) {
  for (Worker& w : workers_) {
    // A stopped worker would only act on `signal` once continued.
    if (w.running) w.process->Signal(w.stopped ? SIGKILL : signal);
  }
}

void WorkerGroup::BeginStopping() {
  if (stopping_) return;
  stopping_ = true;
  stop_deadline_ =
      std::chrono::steady_clock::now() + std::chrono::seconds(options_.stop_grace_seconds);
}

// The rendezvous port: the one given, or a free one for a single node.
absl::StatusOr<int> RendezvousPort(const LaunchOptions& options) {
  if (options.master_port != 0) return options.master_port;
  if (options.nnodes > 1) {
    return absl::InvalidArgumentError(
        "--master_port: several machines must agree on a port; set it on every node");
  }
  return FreePort();
}

}  // namespace

absl::Status LaunchWorkers(const LaunchOptions& options) {
  // Each worker would otherwise find out alone, as MASTER_ADDR's problem.
  if (absl::Status resolves =
          CheckHostResolves(LoopbackIfLocalhost(options.master_addr), "--master_addr");
      !resolves.ok()) {
    return absl::InvalidArgumentError(resolves.message());
  }
  absl::StatusOr<int> port = RendezvousPort(options);
  if (!port.ok()) return port.status();
  WorkerGroup group(options, *port);
  if (absl::Status started = group.Start(); !started.ok()) return started;
  return group.Supervise();
}

absl::StatusOr<int> FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t length = sizeof(address);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    if (fd >= 0) ::close(fd);
    return absl::InternalError(absl::StrCat("no free TCP port: ", std::strerror(errno)));
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

bool IsRetriable(const absl::Status& launched) {
  return !launched.ok() && launched.code() != absl::StatusCode::kInvalidArgument &&
         launched.code() != absl::StatusCode::kCancelled && LauncherStopSignal() == 0;
}

void ResumeFromLatestCheckpoint(std::vector<std::string>& command) {
  if (std::find(command.begin(), command.end(), "--resume=auto") == command.end()) {
    command.push_back("--resume=auto");
  }
}

absl::Status LaunchWithRestarts(LaunchOptions options, int max_restarts) {
  absl::Status launched = LaunchWorkers(options);
  for (int restart = 1; IsRetriable(launched) && restart <= max_restarts; ++restart) {
    std::cerr << "launcher: restart " << restart << " of " << max_restarts << " after: "
              << launched.message() << "; continuing from the latest checkpoint\n";
    ResumeFromLatestCheckpoint(options.command);
    options.restart_count = restart;
    launched = LaunchWorkers(options);
  }
  return launched;
}

int LauncherStopSignal() { return g_stop_signal; }

}  // namespace pipeline
