#ifndef PIPELINE_UTIL_SUBPROCESS_H_
#define PIPELINE_UTIL_SUBPROCESS_H_

// A child process started by path, with no shell between: a signal sent to
// pid() reaches the program itself. The one place the launcher, the bench
// and the tests fork and exec, so each gets the same care: the child's
// environment and argv are built before fork (after it, in a process with
// threads, only async-signal-safe calls are allowed), and buffered output
// is flushed first so the child does not write it again.

#include <sys/resource.h>
#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace pipeline {

struct SubprocessOptions {
  // argv[0] is a path (execv: no search of PATH).
  std::vector<std::string> argv;
  // "NAME=value" entries set in the child on top of this process's
  // environment.
  std::vector<std::string> environment;
  enum class Output {
    kInherit,  // the parent's stdout and stderr
    kPipes,    // two pipes: stdout_fd() and stderr_fd()
    kFile,     // stdout and stderr both into output_file (truncated)
  };
  Output output = Output::kInherit;
  std::string output_file;
  // In a process group of its own: a terminal's Ctrl-C reaches the parent
  // only, which decides what the child gets.
  bool own_process_group = false;
  // Killed (SIGKILL) when the parent dies, however the parent ends.
  bool die_with_parent = false;
};

// What became of a child since it was last asked (Subprocess::Poll).
struct ChildEvent {
  enum class Kind { kNone, kExited, kStopped, kContinued };
  Kind kind = Kind::kNone;
  int wait_status = 0;  // as waitpid gives it, for kExited
  int stop_signal = 0;  // for kStopped
};

class Subprocess {
 public:
  // Starts the child. A program that cannot be executed exits 127 after
  // saying so on its stderr, as a shell's child does.
  static absl::StatusOr<std::unique_ptr<Subprocess>> Start(const SubprocessOptions& options);

  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;
  // A child still running is killed and reaped: nothing is left behind by
  // an early return or a failed test.
  ~Subprocess();

  pid_t pid() const { return pid_; }
  // The read ends of the child's stdout and stderr (Output::kPipes), or -1.
  // The caller reads them; CloseOutput closes both.
  int stdout_fd() const { return stdout_fd_; }
  int stderr_fd() const { return stderr_fd_; }
  void CloseStdout();
  void CloseStderr();

  // Sends `signal`; false when the child is gone.
  bool Signal(int signal) const;

  // Without blocking: whether it exited, was stopped (SIGSTOP, a debugger)
  // or continued since the last call. An exit is final: the child is reaped.
  ChildEvent Poll();
  bool Exited();

  // Blocks until it exits: the shell's $? (128 + N when killed by signal N).
  // `usage` (if given) receives its and its waited-for children's resource
  // use, peak resident memory included.
  int Wait(struct rusage* usage = nullptr);

  // The exit as the shell's $?, once exited.
  std::optional<int> exit_code() const { return exit_code_; }
  // The raw waitpid status, once exited.
  int wait_status() const { return wait_status_; }

 private:
  Subprocess() = default;
  void Reaped(int wait_status);

  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  int stderr_fd_ = -1;
  std::optional<int> exit_code_;
  int wait_status_ = 0;
};

// A waitpid status as the shell's $?: the exit status, or 128 + N for a
// death by signal N.
int ShellExitCode(int wait_status);

// "exited with status 3" or "was killed by signal 9 (Killed)".
std::string DescribeExit(int wait_status);

}  // namespace pipeline

#endif  // PIPELINE_UTIL_SUBPROCESS_H_
