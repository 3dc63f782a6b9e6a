#ifndef PIPELINE_TESTING_COMMAND_H_
#define PIPELINE_TESTING_COMMAND_H_

// Runs a command line the way a user would in a shell, for the tests that
// check a binary's exit status and what it prints.

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace pipeline {
namespace testing {

struct CommandResult {
  // The exit status, or 128 + the signal that ended it (a shell's $?).
  int exit_code = -1;
  std::string output;  // stdout and stderr, interleaved as written
};

inline CommandResult RunCommand(const std::string& command) {
  CommandResult result;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) result.output.append(buffer, n);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

}  // namespace testing
}  // namespace pipeline

#endif  // PIPELINE_TESTING_COMMAND_H_
