#include "pipeline/util/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <set>

#include "absl/strings/str_cat.h"

extern char** environ;

namespace pipeline {
namespace {

// This process's environment with `overrides` ("NAME=value") replacing or
// adding entries.
std::vector<std::string> ChildEnvironment(const std::vector<std::string>& overrides) {
  std::set<std::string> overridden;
  for (const std::string& entry : overrides) overridden.insert(entry.substr(0, entry.find('=')));
  std::vector<std::string> entries;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text(*entry);
    if (overridden.count(text.substr(0, text.find('='))) == 0) entries.push_back(text);
  }
  entries.insert(entries.end(), overrides.begin(), overrides.end());
  return entries;
}

std::vector<char*> Pointers(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (std::string& s : strings) pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

void CloseIfOpen(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// In the child, between fork and exec: async-signal-safe calls only.
[[noreturn]] void ExecChild(const SubprocessOptions& options, pid_t parent, int out_pipe[2],
                            int err_pipe[2], int file_fd, char** argv, char** envp) {
  if (options.own_process_group) ::setpgid(0, 0);
  if (options.die_with_parent) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);  // the parent died before prctl
  }
  if (options.output == SubprocessOptions::Output::kPipes) {
    ::dup2(out_pipe[1], STDOUT_FILENO);
    ::dup2(err_pipe[1], STDERR_FILENO);
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
  } else if (options.output == SubprocessOptions::Output::kFile) {
    ::dup2(file_fd, STDOUT_FILENO);
    ::dup2(file_fd, STDERR_FILENO);
    ::close(file_fd);
  }
  ::execve(argv[0], argv, envp);
  const char* reason = std::strerror(errno);
  const char* parts[] = {"error: cannot start ", argv[0], ": ", reason, "\n"};
  for (const char* part : parts) {
    if (::write(STDERR_FILENO, part, std::strlen(part)) < 0) break;
  }
  ::_exit(127);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Subprocess>> Subprocess::Start(const SubprocessOptions& options) {
  if (options.argv.empty()) return absl::InvalidArgumentError("no program to start");
  std::vector<std::string> argv_strings = options.argv;
  std::vector<std::string> env_strings = ChildEnvironment(options.environment);
  std::vector<char*> argv = Pointers(argv_strings);
  std::vector<char*> envp = Pointers(env_strings);

  int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
  int file_fd = -1;
  if (options.output == SubprocessOptions::Output::kPipes &&
      (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0)) {
    const std::string reason = std::strerror(errno);
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) {
      if (fd >= 0) ::close(fd);
    }
    return absl::ResourceExhaustedError(absl::StrCat("cannot start ", options.argv[0],
                                                     ": no pipe for its output: ", reason));
  }
  if (options.output == SubprocessOptions::Output::kFile) {
    file_fd = ::open(options.output_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (file_fd < 0) {
      return absl::FailedPreconditionError(absl::StrCat("cannot start ", options.argv[0],
                                                        ": cannot write its output to ",
                                                        options.output_file, ": ",
                                                        std::strerror(errno)));
    }
  }
  // Unwritten output would otherwise be written again by the child.
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) ExecChild(options, parent, out_pipe, err_pipe, file_fd, argv.data(), envp.data());
  const int fork_errno = errno;
  std::unique_ptr<Subprocess> child(new Subprocess());
  child->pid_ = pid;
  CloseIfOpen(file_fd);
  CloseIfOpen(out_pipe[1]);
  CloseIfOpen(err_pipe[1]);
  child->stdout_fd_ = out_pipe[0];
  child->stderr_fd_ = err_pipe[0];
  if (pid < 0) {
    child->CloseStdout();
    child->CloseStderr();
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot start ", options.argv[0], ": fork: ", std::strerror(fork_errno)));
  }
  return child;
}

Subprocess::~Subprocess() {
  if (pid_ > 0 && !exit_code_.has_value()) {
    ::kill(pid_, SIGKILL);
    Wait();
  }
  CloseStdout();
  CloseStderr();
}

void Subprocess::CloseStdout() { CloseIfOpen(stdout_fd_); }
void Subprocess::CloseStderr() { CloseIfOpen(stderr_fd_); }

bool Subprocess::Signal(int signal) const {
  return !exit_code_.has_value() && ::kill(pid_, signal) == 0;
}

void Subprocess::Reaped(int wait_status) {
  wait_status_ = wait_status;
  exit_code_ = ShellExitCode(wait_status);
}

ChildEvent Subprocess::Poll() {
  ChildEvent event;
  if (exit_code_.has_value()) return event;
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG | WUNTRACED | WCONTINUED) != pid_) return event;
  if (WIFSTOPPED(status)) {
    event.kind = ChildEvent::Kind::kStopped;
    event.stop_signal = WSTOPSIG(status);
  } else if (WIFCONTINUED(status)) {
    event.kind = ChildEvent::Kind::kContinued;
  } else {
    event.kind = ChildEvent::Kind::kExited;
    event.wait_status = status;
    Reaped(status);
  }
  return event;
}

bool Subprocess::Exited() {
  if (exit_code_.has_value()) return true;
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) != pid_) return false;
  Reaped(status);
  return true;
}

int Subprocess::Wait(struct rusage* usage) {
  if (!exit_code_.has_value()) {
    int status = 0;
    while (::wait4(pid_, &status, 0, usage) != pid_) {
      if (errno == EINTR) continue;
      exit_code_ = -1;  // reaped elsewhere: nothing left to wait for or kill
      return -1;
    }
    Reaped(status);
  }
  return *exit_code_;
}

int ShellExitCode(int wait_status) {
  return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
}

std::string DescribeExit(int wait_status) {
  if (WIFSIGNALED(wait_status)) {
    return absl::StrCat("was killed by signal ", WTERMSIG(wait_status), " (",
                        strsignal(WTERMSIG(wait_status)), ")");
  }
  return absl::StrCat("exited with status ", WEXITSTATUS(wait_status));
}

}  // namespace pipeline
