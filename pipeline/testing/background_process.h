#ifndef PIPELINE_TESTING_BACKGROUND_PROCESS_H_
#define PIPELINE_TESTING_BACKGROUND_PROCESS_H_

// A program a test starts in the background and then signals, waits for, or
// kills by its process id: the tests need nothing from the system beyond
// the kernel (no pkill or pgrep, which a minimal Debian lacks), and touch
// only the processes they started, also when another copy of the suite runs
// on the machine.

#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "pipeline/util/subprocess.h"

namespace pipeline {
namespace testing {

// The whole of a file (a log, say), or "" when it is not there.
inline std::string ReadFile(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// Whether `pid` is a live process (a zombie nobody reaped counts as gone).
inline bool ProcessIsAlive(pid_t pid) {
  const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  if (stat.empty()) return false;
  const size_t name_end = stat.rfind(')');
  return name_end != std::string::npos && name_end + 2 < stat.size() &&
         stat[name_end + 2] != 'Z' && stat[name_end + 2] != 'X';
}

// The worker pids the launcher of `train` printed ("launcher: worker pids:
// rank 0 = 123, rank 1 = 124"), by rank as printed; the last such line wins
// (a restart starts new workers).
inline std::vector<std::pair<int, pid_t>> LauncherWorkerPids(const std::string& output) {
  std::vector<std::pair<int, pid_t>> pids;
  const std::regex line("launcher: worker pids: ([^\\n]*)");
  const std::regex entry("rank ([0-9]+) = ([0-9]+)");
  for (std::sregex_iterator it(output.begin(), output.end(), line), end; it != end; ++it) {
    pids.clear();
    const std::string entries = (*it)[1];
    for (std::sregex_iterator e(entries.begin(), entries.end(), entry); e != end; ++e) {
      pids.emplace_back(std::stoi((*e)[1]), static_cast<pid_t>(std::stol((*e)[2])));
    }
  }
  return pids;
}

inline std::optional<pid_t> LauncherWorkerPid(const std::string& output, int rank) {
  for (const auto& [r, pid] : LauncherWorkerPids(output)) {
    if (r == rank) return pid;
  }
  return std::nullopt;
}

class BackgroundProcess {
 public:
  // Runs `argv` (argv[0] a path) with stdout and stderr written to `log`.
  // The process is the program itself, no shell between, so a signal sent
  // to pid() reaches it.
  BackgroundProcess(std::vector<std::string> argv, std::string log) : log_(std::move(log)) {
    SubprocessOptions options;
    options.argv = std::move(argv);
    options.output = SubprocessOptions::Output::kFile;
    options.output_file = log_;
    auto child = Subprocess::Start(options);
    if (!child.ok()) {
      std::cerr << "BackgroundProcess: " << child.status() << "\n";
      std::abort();
    }
    child_ = std::move(*child);
  }
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  // A test that fails half-way leaves nothing running: the launcher's
  // workers too (the child itself is killed by ~Subprocess).
  ~BackgroundProcess() {
    if (!child_->Exited()) {
      for (const auto& [rank, pid] : LauncherWorkerPids(Output())) ::kill(pid, SIGKILL);
    }
  }

  pid_t pid() const { return child_->pid(); }
  std::string Output() const { return ReadFile(log_); }

  bool Signal(int signal) const { return child_->Signal(signal); }

  // Whether it has exited; collects its status when it has.
  bool Exited() { return child_->Exited(); }

  // Blocks until it exits: the shell's $? (128 + N when killed by signal N).
  int Wait() { return child_->Wait(); }

  // Waits until `text` is in the log or the process exits (no deadline:
  // how fast a run gets there depends on how busy the machine is, and the
  // test's timeout is the backstop for a hang). True when the text came.
  bool WaitForOutput(const std::string& text) {
    while (true) {
      const bool exited = Exited();
      if (Output().find(text) != std::string::npos) return true;
      if (exited) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

 private:
  std::string log_;
  std::unique_ptr<Subprocess> child_;
};

}  // namespace testing
}  // namespace pipeline

#endif  // PIPELINE_TESTING_BACKGROUND_PROCESS_H_
