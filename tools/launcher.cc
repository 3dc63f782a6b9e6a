#include "tools/launcher.h"

#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
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
#include <thread>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "pipeline/util/host_address.h"

namespace pipeline {
namespace {

struct Worker {
  int rank = 0;
  pid_t pid = -1;
  int out = -1;  // read ends of the worker's stdout and stderr
  int err = -1;
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

std::string DescribeExit(int status) {
  if (WIFSIGNALED(status)) {
    return absl::StrCat("was killed by signal ", WTERMSIG(status), " (", strsignal(WTERMSIG(status)),
                        ")");
  }
  return absl::StrCat("exited with status ", WEXITSTATUS(status));
}

// Relays complete lines; rank 0's stdout (the JSON events) goes out as is so
// tools can read it, everything else with a "[rank N] " prefix.
void Relay(Worker& worker, int fd, bool flush_all) {
  const bool is_out = fd == worker.out;
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

void StopAll(std::vector<Worker>& workers, int signal) {
  for (Worker& w : workers) {
    // A stopped worker would only act on `signal` once continued.
    if (w.running) ::kill(w.pid, w.stopped ? SIGKILL : signal);
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
    absl::StrAppend(&text, text.empty() ? "" : ", ", "rank ", w.rank, " (pid ", w.pid,
                    ") was stopped by signal ", w.stopped_by, " (", strsignal(w.stopped_by), ") ",
                    absl::StrFormat("%.1f", seconds), " s before");
  }
  return text;
}

}  // namespace

absl::Status LaunchWorkers(const LaunchOptions& options) {
  // Each worker would otherwise find out alone, as MASTER_ADDR's problem.
  if (absl::Status resolves =
          CheckHostResolves(LoopbackIfLocalhost(options.master_addr), "--master_addr");
      !resolves.ok()) {
    return absl::InvalidArgumentError(resolves.message());
  }
  int port = options.master_port;
  if (port == 0) {
    if (options.nnodes > 1) {
      return absl::InvalidArgumentError(
          "--master_port: several machines must agree on a port; set it on every node");
    }
    auto free_port = FreePort();
    if (!free_port.ok()) return free_port.status();
    port = *free_port;
  }
  const int world_size = options.nproc_per_node * options.nnodes;
  std::vector<Worker> workers(options.nproc_per_node);
  std::signal(SIGINT, OnStopSignal);
  std::signal(SIGTERM, OnStopSignal);
  const pid_t launcher = ::getpid();
  for (int local_rank = 0; local_rank < options.nproc_per_node; ++local_rank) {
    Worker& worker = workers[local_rank];
    worker.rank = options.node_rank * options.nproc_per_node + local_rank;
    int out_pipe[2], err_pipe[2];
    if (::pipe(out_pipe) != 0 || ::pipe(err_pipe) != 0) {
      StopAll(workers, SIGKILL);
      return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
    }
    const pid_t pid = ::fork();
    if (pid == 0) {
      // Its own process group: a terminal's Ctrl-C reaches the launcher
      // alone, which forwards it once (twice would mean "stop at once").
      ::setpgid(0, 0);
      // No orphans: the worker dies with the launcher, however it ends.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != launcher) ::_exit(1);
      ::dup2(out_pipe[1], STDOUT_FILENO);
      ::dup2(err_pipe[1], STDERR_FILENO);
      ::close(out_pipe[0]);
      ::close(err_pipe[0]);
      ::setenv("RANK", std::to_string(worker.rank).c_str(), 1);
      ::setenv("LOCAL_RANK", std::to_string(local_rank).c_str(), 1);
      ::setenv("WORLD_SIZE", std::to_string(world_size).c_str(), 1);
      ::setenv("LOCAL_WORLD_SIZE", std::to_string(options.nproc_per_node).c_str(), 1);
      ::setenv("GROUP_RANK", std::to_string(options.node_rank).c_str(), 1);
      ::setenv("MASTER_ADDR", options.master_addr.c_str(), 1);
      ::setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      ::setenv("TORCHELASTIC_RESTART_COUNT", std::to_string(options.restart_count).c_str(), 1);
      std::vector<char*> argv;
      for (const std::string& arg : options.command) argv.push_back(const_cast<char*>(arg.c_str()));
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      std::fprintf(stderr, "error: cannot start %s: %s\n", argv[0], std::strerror(errno));
      ::_exit(127);
    }
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    worker.pid = pid;
    worker.out = out_pipe[0];
    worker.err = err_pipe[0];
  }
  std::cerr << "launcher: started " << options.nproc_per_node << " workers (ranks "
            << workers.front().rank << "-" << workers.back().rank << " of " << world_size
            << "), rendezvous at " << options.master_addr << ":" << port << "\n";
  // The pids let a user (or a test) signal one worker without pkill.
  std::string pids;
  for (const Worker& w : workers) {
    absl::StrAppend(&pids, pids.empty() ? "" : ", ", "rank ", w.rank, " = ", w.pid);
  }
  std::cerr << "launcher: worker pids: " << pids << "\n";

  absl::Status result = absl::OkStatus();
  int running = options.nproc_per_node;
  std::chrono::steady_clock::time_point stop_deadline;
  bool stopping = false;
  int signals_handled = 0;
  auto next_watch = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (running > 0) {
    std::vector<pollfd> fds;
    std::vector<std::pair<Worker*, int>> owners;
    for (Worker& w : workers) {
      for (int fd : {w.out, w.err}) {
        if (fd >= 0) {
          fds.push_back({fd, POLLIN, 0});
          owners.push_back({&w, fd});
        }
      }
    }
    ::poll(fds.data(), fds.size(), 200);
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
        Worker& w = *owners[i].first;
        const int fd = owners[i].second;
        char probe;
        if (fds[i].revents & POLLIN) {
          Relay(w, fd, false);
        } else if (::read(fd, &probe, 0) == 0) {
          Relay(w, fd, true);
          ::close(fd);
          (fd == w.out ? w.out : w.err) = -1;
        }
      }
    }
    const int received = g_stop_signals_received;
    if (received > signals_handled) {
      const int signal = g_stop_signal;
      if (signals_handled == 0) {
        // The same signal, so each worker does what it would do alone
        // (with checkpoint_on_signal: finish the step, checkpoint, exit).
        std::cerr << "launcher: " << strsignal(signal) << "; passing it to every worker "
                  << "(again to kill them at once)\n";
        StopAll(workers, signal);
        if (result.ok()) {
          result = absl::CancelledError(absl::StrCat("stopped by signal ", signal, " (",
                                                     strsignal(signal), "); every worker has "
                                                     "exited"));
        }
        if (!stopping) {
          stop_deadline =
              std::chrono::steady_clock::now() + std::chrono::seconds(options.stop_grace_seconds);
        }
        stopping = true;
      } else {
        std::cerr << "launcher: " << strsignal(signal) << " again; killing every worker\n";
        StopAll(workers, SIGKILL);
      }
      signals_handled = received;
    }
    if (options.watch && !stopping && std::chrono::steady_clock::now() >= next_watch) {
      next_watch = std::chrono::steady_clock::now() + std::chrono::seconds(1);
      if (absl::Status watched = options.watch(); !watched.ok()) {
        std::cerr << "launcher: " << watched.message() << "; stopping this node's workers\n";
        result = watched;
        StopAll(workers, SIGTERM);
        stop_deadline =
            std::chrono::steady_clock::now() + std::chrono::seconds(options.stop_grace_seconds);
        stopping = true;
      }
    }
    int status = 0;
    pid_t done;
    while ((done = ::waitpid(-1, &status, WNOHANG | WUNTRACED | WCONTINUED)) > 0) {
      for (Worker& w : workers) {
        if (w.pid != done || !w.running) continue;
        if (WIFSTOPPED(status)) {
          w.stopped = true;
          w.stopped_by = WSTOPSIG(status);
          w.stopped_at = std::chrono::steady_clock::now();
          std::cerr << "launcher: rank " << w.rank << " (pid " << w.pid << ") was stopped by "
                    << "signal " << w.stopped_by << " (" << strsignal(w.stopped_by)
                    << "); the other ranks will wait for it\n";
          if (stopping) ::kill(w.pid, SIGKILL);
          continue;
        }
        if (WIFCONTINUED(status)) {
          w.stopped = false;
          continue;
        }
        w.running = false;
        --running;
        const bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        if (failed && result.ok()) {
          std::string what = absl::StrCat("rank ", w.rank, " (pid ", w.pid, ") ",
                                          DescribeExit(status));
          // The failure is most likely a collective's timeout, waiting for
          // the stopped one: name it, it is the rank to look at.
          if (const std::string hung = DescribeStopped(workers); !hung.empty()) {
            absl::StrAppend(&what, " while ", hung, " and hung the job");
          }
          result = absl::AbortedError(absl::StrCat(what, "; stopped the other workers"));
          if (WIFEXITED(status)) {
            // Keep the worker's own exit status meaning (2 = bad input).
            result = absl::Status(WEXITSTATUS(status) == 2 ? absl::StatusCode::kInvalidArgument
                                                           : absl::StatusCode::kAborted,
                                  result.message());
          }
          std::cerr << "launcher: " << what << "; stopping the other workers\n";
          StopAll(workers, SIGTERM);
          if (!stopping) {
            stop_deadline = std::chrono::steady_clock::now() +
                            std::chrono::seconds(options.stop_grace_seconds);
          }
          stopping = true;
        }
      }
    }
    if (stopping && std::chrono::steady_clock::now() > stop_deadline) {
      StopAll(workers, SIGKILL);
    }
  }
  for (Worker& w : workers) {
    for (int fd : {w.out, w.err}) {
      if (fd >= 0) {
        Relay(w, fd, true);
        ::close(fd);
      }
    }
  }
  return result;
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
